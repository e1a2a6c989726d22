//! SQL for documents.

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Map, Value};

use super::kinds::{self, Kind, Type};
use super::{Document, schema};
use crate::error::ApiResult;
use crate::listing::{FieldSql, FieldType, Fields, ListQuery, fetch_page};

const COLUMNS: &str = "id, workspace_id, kind, job_id, body, created_at, updated_at";

fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Document> {
    let kind_key: String = row.get(2)?;
    let body_text: String = row.get(4)?;
    let body = match serde_json::from_str::<Value>(&body_text) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    Ok(Document {
        id: row.get(0)?,
        workspace_id: row.get(1)?,
        kind: kinds::by_key(&kind_key).unwrap_or(&kinds::JOB),
        job_id: row.get(3)?,
        body,
        created_at: row.get(5)?,
        updated_at: row.get(6)?,
    })
}

/// A document of a kind, in a workspace and (for results) under a job.
pub fn get(
    conn: &Connection,
    workspace: &str,
    kind: &Kind,
    job: Option<&str>,
    id: &str,
) -> rusqlite::Result<Option<Document>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM documents WHERE id = ?1 AND workspace_id = ?2 AND kind = ?3 \
         AND job_id IS ?4"
    ))?
    .query_row(params![id, workspace, kind.key, job], from_row)
    .optional()
}

/// Any document of a workspace, whatever its kind.
pub fn get_any(conn: &Connection, workspace: &str, id: &str) -> rusqlite::Result<Option<Document>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM documents WHERE id = ?1 AND workspace_id = ?2"
    ))?
    .query_row(params![id, workspace], from_row)
    .optional()
}

fn body_text(doc: &Document) -> String {
    Value::Object(doc.body.clone()).to_string()
}

pub fn insert(conn: &Connection, doc: &Document, refs: &[String]) -> ApiResult<()> {
    conn.prepare_cached(
        "INSERT INTO documents (id, workspace_id, kind, job_id, body, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        doc.id,
        doc.workspace_id,
        doc.kind.key,
        doc.job_id,
        body_text(doc),
        doc.created_at,
        doc.updated_at
    ])?;
    set_refs(conn, &doc.id, refs)
}

pub fn update(conn: &Connection, doc: &Document, refs: &[String]) -> ApiResult<()> {
    conn.prepare_cached("UPDATE documents SET body = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![doc.id, body_text(doc), doc.updated_at])?;
    set_refs(conn, &doc.id, refs)
}

fn set_refs(conn: &Connection, id: &str, refs: &[String]) -> ApiResult<()> {
    conn.prepare_cached("DELETE FROM document_refs WHERE document_id = ?1")?
        .execute([id])?;
    let mut insert = conn.prepare_cached(
        "INSERT OR IGNORE INTO document_refs (document_id, item_id) VALUES (?1, ?2)",
    )?;
    for item in refs {
        insert.execute(params![id, item])?;
    }
    Ok(())
}

pub fn delete(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM documents WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// How many documents of each kind a job holds.
pub fn children(conn: &Connection, job: &str) -> rusqlite::Result<Vec<(String, i64)>> {
    conn.prepare_cached("SELECT kind, count(*) FROM documents WHERE job_id = ?1 GROUP BY kind")?
        .query_map([job], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect()
}

/// How many jobs of the workspace name a document as their `parent`.
pub fn parent_of_count(
    conn: &Connection,
    workspace: &str,
    document: &str,
) -> rusqlite::Result<i64> {
    conn.prepare_cached(
        "SELECT count(*) FROM documents WHERE workspace_id = ?1 AND kind = 'job' \
         AND json_extract(body, '$.parent') = ?2",
    )?
    .query_row(params![workspace, document], |row| row.get(0))
}

pub fn attachment_count(conn: &Connection, document: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT count(*) FROM attachments WHERE document_id = ?1")?
        .query_row([document], |row| row.get(0))
}

/// Another quantity result of the job with the same direction, if any.
pub fn quantity_with_direction(
    conn: &Connection,
    job: &str,
    direction: &str,
    except: &str,
) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached(
        "SELECT id FROM documents WHERE job_id = ?1 AND kind = 'quantityResult' \
         AND json_extract(body, '$.direction') = ?2 AND id <> ?3",
    )?
    .query_row(params![job, direction, except], |row| row.get(0))
    .optional()
}

pub fn list(
    conn: &Connection,
    workspace: &str,
    kind: &Kind,
    job: Option<&str>,
    query: &ListQuery,
) -> rusqlite::Result<(i64, Vec<Document>)> {
    let params = vec![
        SqlValue::Text(workspace.to_string()),
        SqlValue::Text(kind.key.to_string()),
        job.map_or(SqlValue::Null, |j| SqlValue::Text(j.to_string())),
    ];
    let select = format!("SELECT {COLUMNS} FROM documents");
    let condition = "workspace_id = ? AND kind = ? AND job_id IS ?";
    fetch_page(
        conn,
        &select,
        "FROM documents",
        condition,
        params,
        query,
        from_row,
    )
}

/// The body fields of a kind that lists can filter and sort on: every scalar
/// field, at its dotted path.
pub struct BodyFields(pub &'static Kind);

impl Fields for BodyFields {
    fn field(&self, name: &str) -> Option<(FieldSql, FieldType)> {
        let field = kinds::field_at(self.0.fields, name)?;
        let kind = match field.ty {
            Type::Int | Type::Float => FieldType::Number,
            Type::Bool => FieldType::Bool,
            Type::Object(_) | Type::Array(_) => return None,
            _ => FieldType::Text,
        };
        Some((FieldSql::BodyPath(format!("$.{name}")), kind))
    }

    fn describe(&self) -> String {
        let mut names = Vec::new();
        scalar_paths(self.0.fields, "", &mut names);
        names.join(", ")
    }
}

fn scalar_paths(fields: &'static [kinds::Field], prefix: &str, out: &mut Vec<String>) {
    for field in fields {
        let path = crate::validate::join(prefix, field.name);
        match &field.ty {
            Type::Object(inner) => scalar_paths(inner, &path, out),
            Type::Array(_) => {}
            _ => out.push(path),
        }
    }
}

/// A document body as a client reads it: quality results show references as
/// `{id, xref, name}`.
pub fn readable_body(conn: &Connection, doc: &Document) -> rusqlite::Result<Value> {
    let mut body = doc.body.clone();
    if doc.kind.expand_references {
        let mut ids = Vec::new();
        schema::referenced_ids(doc.kind.fields, &body, &mut ids);
        if !ids.is_empty() {
            let items = crate::catalogs::store::get_many(conn, &doc.workspace_id, &ids)?
                .into_iter()
                .map(|item| (item.id.clone(), item.reference()))
                .collect();
            schema::expand_references(doc.kind.fields, &mut body, &items);
        }
    }
    Ok(Value::Object(body))
}
