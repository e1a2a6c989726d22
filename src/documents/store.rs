//! SQL for documents.

use crate::db::Value as SqlValue;
use crate::db::{Conn, Dialect, OptionalExtension, params};
use serde_json::Value;

use super::kinds::{self, Kind, Type};
use super::{Document, schema};
use crate::catalogs::CatalogItem;
use crate::error::ApiResult;
use crate::listing::{FieldSql, FieldType, Fields, ListQuery, Page, fetch_page};
use std::borrow::Borrow;
use std::collections::HashMap;
use std::sync::Arc;

const COLUMNS: &str = "id, workspace_id, kind, job_id, body, created_at, updated_at";

/// A row of `documents` as a [`Document`]. A row this binary cannot read (an
/// unknown kind, a body that is not a JSON object) is an error naming the
/// document, never a different record.
fn from_row(row: &crate::db::Row<'_>) -> crate::db::Result<Document> {
    let id: String = row.get(0)?;
    let kind_key: String = row.get(2)?;
    let Some(kind) = kinds::by_key(&kind_key) else {
        return Err(unreadable(
            2,
            UnreadableDocument {
                id,
                problem: format!("its kind {kind_key:?} is not one this binary knows"),
                source: None,
            },
        ));
    };
    let body_text: String = row.get(4)?;
    let body = match serde_json::from_str::<Value>(&body_text) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(unreadable(
                4,
                UnreadableDocument {
                    id,
                    problem: format!(
                        "its body is JSON {}, not an object",
                        crate::validate::kind_of(&other)
                    ),
                    source: None,
                },
            ));
        }
        Err(err) => {
            return Err(unreadable(
                4,
                UnreadableDocument {
                    id,
                    problem: "its body is not valid JSON".into(),
                    source: Some(err),
                },
            ));
        }
    };
    Ok(Document {
        id,
        workspace_id: row.get(1)?,
        kind,
        job_id: row.get(3)?,
        body,
        created_at: row.get(5)?,
        updated_at: row.get(6)?,
    })
}

/// A stored document that cannot be read as one (see [`from_row`]).
#[derive(Debug)]
struct UnreadableDocument {
    id: String,
    problem: String,
    source: Option<serde_json::Error>,
}

impl std::fmt::Display for UnreadableDocument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "document {} cannot be read: {}", self.id, self.problem)
    }
}

impl std::error::Error for UnreadableDocument {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as _)
    }
}

fn unreadable(column: usize, err: UnreadableDocument) -> crate::db::Error {
    crate::db::Error::conversion(column, err)
}

/// Where a document of a kind, in a workspace and (for results) under a
/// job, is found: [`get`]'s and [`get_stored`]'s condition.
const ONE: &str = "id = ?1 AND workspace_id = ?2 AND kind = ?3 AND job_id IS NOT DISTINCT FROM ?4";

/// A document of a kind, in a workspace and (for results) under a job.
pub fn get(
    conn: &Conn,
    workspace: &str,
    kind: &Kind,
    job: Option<&str>,
    id: &str,
) -> crate::db::Result<Option<Document>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM documents WHERE {ONE}"))?
        .query_row(params![id, workspace, kind.key, job], from_row)
        .optional()
}

/// [`get`], the body parsed only when a client would read it other than as
/// stored ([`Stored`]): what a GET answers.
pub fn get_stored(
    conn: &Conn,
    workspace: &str,
    kind: &Kind,
    job: Option<&str>,
    id: &str,
) -> crate::db::Result<Option<Stored>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM documents WHERE {ONE}"))?
        .query_row(params![id, workspace, kind.key, job], stored_row)
        .optional()
}

/// Any document of a workspace, whatever its kind.
pub fn get_any(conn: &Conn, workspace: &str, id: &str) -> crate::db::Result<Option<Document>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM documents WHERE id = ?1 AND workspace_id = ?2"
    ))?
    .query_row(params![id, workspace], from_row)
    .optional()
}

/// A document as the change log reads it back.
pub enum Stored {
    /// The document, its body parsed (a kind that shows references expanded).
    Parsed(Document),
    /// A kind whose body is shown as stored: the body's JSON text, checked
    /// to be an object but not parsed into a tree.
    Raw {
        id: String,
        workspace_id: String,
        kind: &'static Kind,
        body: Box<serde_json::value::RawValue>,
        created_at: i64,
        updated_at: i64,
    },
}

/// A document row of `table` (`documents`, or the change log's copy of a
/// deleted row; see `changes::capture`), its body parsed only when a client
/// would read it other than as stored.
pub fn stored_from(conn: &Conn, table: &str, id: &str) -> crate::db::Result<Option<Stored>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM {table} WHERE id = ?1"))?
        .query_row([id], stored_row)
        .optional()
}

/// A row of `documents` (or of its copy) as a [`Stored`]. A body that is
/// not a JSON object is read as [`from_row`] reads it, which says what is
/// wrong with it, naming the document.
fn stored_row(row: &crate::db::Row<'_>) -> crate::db::Result<Stored> {
    let kind = kinds::by_key(row.get_ref(2)?.as_str()?);
    match kind {
        Some(kind) if !kind.expand_references => {
            match serde_json::value::RawValue::from_string(row.get(4)?) {
                Ok(body) if body.get().starts_with('{') => Ok(Stored::Raw {
                    id: row.get(0)?,
                    workspace_id: row.get(1)?,
                    kind,
                    body,
                    created_at: row.get(5)?,
                    updated_at: row.get(6)?,
                }),
                _ => from_row(row).map(Stored::Parsed),
            }
        }
        _ => from_row(row).map(Stored::Parsed),
    }
}

fn body_text(doc: &Document) -> String {
    // Serialised from the map itself: no copy of the body first.
    crate::http::json::to_string(&doc.body).expect("a map of JSON values always serialises")
}

/// Stores a new document; the items its body refers to count one use more.
pub fn insert(conn: &Conn, doc: &Document) -> ApiResult<()> {
    insert_many(conn, std::slice::from_ref(doc))
}

/// Stores new documents (a certificate's, in the order sent) in as few
/// statements as the engine prefers (`Dialect::rows_per_insert`: on
/// PostgreSQL 16 rows a statement, sent ahead without waiting); the items
/// their bodies refer to count one use more for each document referring to
/// them, in one statement per item on SQLite and one for up to 16 items on
/// PostgreSQL, however many documents share them.
pub fn insert_many(conn: &Conn, docs: &[Document]) -> ApiResult<()> {
    static TEXTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        texts_for_rows(
            "INSERT INTO documents (id, workspace_id, kind, job_id, body, created_at, updated_at) \
             VALUES ",
            &|row| {
                let first = 7 * (row - 1);
                let columns: Vec<String> = (1..=7).map(|c| format!("?{}", first + c)).collect();
                format!("({})", columns.join(", "))
            },
            "",
        )
    });
    for chunk in docs.chunks(conn.dialect().rows_per_insert()) {
        let bodies: Vec<String> = chunk.iter().map(body_text).collect();
        let mut values: Vec<&dyn crate::db::ToSql> = Vec::with_capacity(7 * chunk.len());
        for (doc, body) in chunk.iter().zip(&bodies) {
            values.extend([
                &doc.id as &dyn crate::db::ToSql,
                &doc.workspace_id,
                &doc.kind.key,
                &doc.job_id,
                body,
                &doc.created_at,
                &doc.updated_at,
            ]);
        }
        conn.prepare_cached(&texts[chunk.len() - 1])?
            .execute_ahead(values.as_slice())?;
    }
    // Each item once, with the number of the documents that gained it.
    let mut gained: Vec<(String, i64)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for id in docs.iter().flat_map(references) {
        match at.get(&id) {
            Some(&i) => gained[i].1 += 1,
            None => {
                at.insert(id.clone(), gained.len());
                gained.push((id, 1));
            }
        }
    }
    gain_uses(conn, &gained)?;
    for doc in docs {
        crate::db::offered::wrote(conn, TABLE, &[&doc.id]);
    }
    Ok(())
}

/// Stores `doc`'s new body; `before` is what its stored body referred to
/// ([`references`] of the document as it was). The uses move from the items
/// it no longer refers to to those it now does.
pub fn update(conn: &Conn, doc: &Document, before: &[String]) -> ApiResult<()> {
    conn.prepare_cached("UPDATE documents SET body = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute_ahead(params![doc.id, body_text(doc), doc.updated_at])?;
    crate::db::offered::wrote(conn, TABLE, &[&doc.id]);
    let now = references(doc);
    let dropped: Vec<String> = before
        .iter()
        .filter(|id| !now.contains(id))
        .cloned()
        .collect();
    let gained: Vec<(String, i64)> = now
        .into_iter()
        .filter(|id| !before.contains(id))
        .map(|id| (id, 1))
        .collect();
    drop_uses(conn, &dropped)?;
    gain_uses(conn, &gained)
}

/// The catalog items a document refers to, each once: the record ids in its
/// body (what `schema::resolve` put there). The one answer to which items a
/// document uses, for its create, its change and its delete alike.
pub fn references(doc: &Document) -> Vec<String> {
    let mut ids = Vec::new();
    schema::referenced_ids(doc.kind.fields, &doc.body, &mut ids);
    let mut seen = std::collections::HashSet::new();
    ids.retain(|id| seen.insert(id.clone()));
    ids
}

/// A statement's text for 1 to `MOST_ROWS_PER_INSERT` rows: `head`, the
/// rows' texts (`row(i)` the text of row `i`, from 1) separated by commas,
/// then `tail`; the text for `n` rows at `n - 1`.
fn texts_for_rows(head: &str, row: &dyn Fn(usize) -> String, tail: &str) -> Vec<String> {
    (1..=crate::db::dialect::MOST_ROWS_PER_INSERT)
        .map(|count| {
            let rows: Vec<String> = (1..=count).map(row).collect();
            format!("{head}{}{tail}", rows.join(", "))
        })
        .collect()
}

/// The count of documents using each catalog item.
static USES: crate::db::held::Counter =
    crate::db::held::Counter::new("catalog_item_uses", "item_id", "uses");

/// Counts `n` more documents using each item `id` of `gained` (distinct):
/// in the writer's batch held to the batch's end (`db::held`), added once
/// for the batch's writes.
fn gain_uses(conn: &Conn, gained: &[(String, i64)]) -> ApiResult<()> {
    Ok(crate::db::held::add(conn, &USES, gained)?)
}

/// Counts one document fewer using each of `ids` (distinct), in as few
/// statements as the engine prefers. Every item a stored document refers to
/// has its count: one missing is an internal error. The counts held so far
/// are sent first.
fn drop_uses(conn: &Conn, ids: &[String]) -> ApiResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    crate::db::held::flush(conn)?;
    static TEXTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        texts_for_rows(
            "UPDATE catalog_item_uses SET uses = uses - 1 WHERE item_id IN (",
            &|i| format!("?{i}"),
            ")",
        )
    });
    for chunk in ids.chunks(conn.dialect().rows_per_insert()) {
        let values: Vec<&dyn crate::db::ToSql> =
            chunk.iter().map(|id| id as &dyn crate::db::ToSql).collect();
        let counted = conn
            .prepare_cached(&texts[chunk.len() - 1])?
            .execute(values.as_slice())?;
        if counted < chunk.len() {
            return Err(crate::error::ApiError::internal(format!(
                "{} of the catalog items a document referred to had no count of uses",
                chunk.len() - counted
            )));
        }
    }
    Ok(())
}

/// Deletes a document; the items it referred to count one use fewer.
pub fn delete(conn: &Conn, doc: &Document) -> ApiResult<()> {
    conn.prepare_cached("DELETE FROM documents WHERE id = ?1")?
        .execute([&doc.id])?;
    drop_uses(conn, &references(doc))
}

/// How many documents of each kind a job holds.
pub fn children(conn: &Conn, job: &str) -> crate::db::Result<Vec<(String, i64)>> {
    conn.prepare_cached("SELECT kind, count(*) FROM documents WHERE job_id = ?1 GROUP BY kind")?
        .query_map([job], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect()
}

/// How many jobs of the workspace name a document as their `parent`.
pub fn parent_of_count(conn: &Conn, workspace: &str, document: &str) -> crate::db::Result<i64> {
    conn.prepare_cached(&parent_of_count_sql(conn.dialect()))?
        .query_row(params![workspace, document], |row| row.get(0))
}

/// The SQL of [`parent_of_count`] (`?1` the workspace, `?2` the document)
/// in `dialect`: served by the jobs' index on `$.parent`.
pub fn parent_of_count_sql(dialect: &Dialect) -> String {
    format!(
        "SELECT count(*) FROM documents WHERE workspace_id = ?1 AND kind = 'job' \
         AND {} = {}",
        dialect.body_path("$.parent"),
        dialect.body_param(FieldType::Text, "?2")
    )
}

pub fn attachment_count(conn: &Conn, document: &str) -> crate::db::Result<i64> {
    conn.prepare_cached("SELECT count(*) FROM attachments WHERE document_id = ?1")?
        .query_row([document], |row| row.get(0))
}

/// Another quantity result of the job with the same direction, if any.
pub fn quantity_with_direction(
    conn: &Conn,
    job: &str,
    direction: &str,
    except: &str,
) -> crate::db::Result<Option<String>> {
    conn.prepare_cached(&quantity_with_direction_sql(conn.dialect()))?
        .query_row(params![job, direction, except], |row| row.get(0))
        .optional()
}

/// The SQL of [`quantity_with_direction`] (`?1` the job, `?2` the
/// direction, `?3` the result left out) in `dialect`: served by the unique
/// index on the job and `$.direction`.
pub fn quantity_with_direction_sql(dialect: &Dialect) -> String {
    format!(
        "SELECT id FROM documents WHERE job_id = ?1 AND kind = 'quantityResult' \
         AND {} = {} AND id <> ?3",
        dialect.body_path("$.direction"),
        dialect.body_param(FieldType::Text, "?2")
    )
}

pub fn list(
    conn: &Conn,
    workspace: &str,
    kind: &Kind,
    job: Option<&str>,
    query: &ListQuery,
) -> crate::db::Result<Page<Document>> {
    let (condition, params) = list_condition(workspace, kind, job);
    fetch_page(
        conn,
        COLUMNS,
        "FROM documents",
        &condition,
        params,
        query,
        from_row,
    )
}

/// The condition of a list of `kind` (of the job, for a kind attached to
/// one). The kind is named literally (a key from the kind table): the lists'
/// partial indexes (`WHERE kind = 'job'`, ...) apply only to a query that
/// names it so.
pub fn list_condition(workspace: &str, kind: &Kind, job: Option<&str>) -> (String, Vec<SqlValue>) {
    match job {
        None => (
            format!("workspace_id = ? AND kind = '{}'", kind.key),
            vec![SqlValue::Text(workspace.to_string())],
        ),
        Some(job) => (
            format!("workspace_id = ? AND job_id = ? AND kind = '{}'", kind.key),
            vec![
                SqlValue::Text(workspace.to_string()),
                SqlValue::Text(job.to_string()),
            ],
        ),
    }
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
        Some((FieldSql::BodyPath(format!("$.{name}"), kind), kind))
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

/// A document as it reads right after a write stored it: what the write
/// answers, and what it offers the change log (`db::offered`) so that the
/// log's entry is rendered from it rather than from the row read back.
#[derive(Clone, Debug)]
pub struct Shown {
    pub kind: &'static Kind,
    pub id: String,
    pub workspace_id: String,
    /// The body as it reads (`readable`).
    pub body: Value,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Shown {
    /// The value itself: the write's offer is dropped once the write is
    /// recorded, so this copies nothing but in a write that was not.
    pub fn take(shown: std::sync::Arc<Shown>) -> Shown {
        std::sync::Arc::try_unwrap(shown).unwrap_or_else(|shared| (*shared).clone())
    }
}

/// The table the offers of [`shown`] are made for.
pub const TABLE: &str = "documents";

/// `doc` as it reads, just stored by this write with `used`, the catalog
/// items its body refers to (as the write read or created them); offered to
/// the change log while neither the document nor one of those items changes
/// again. The caller holds the only other reference once the write is
/// recorded, so it can take the value out (`Arc::try_unwrap`).
pub fn shown(
    conn: &Conn,
    doc: Document,
    used: Vec<Arc<CatalogItem>>,
) -> ApiResult<std::sync::Arc<Shown>> {
    let depends: Vec<(&'static str, String)> = used
        .iter()
        .map(|item| (crate::catalogs::store::TABLE, item.id.clone()))
        .collect();
    let shown = std::sync::Arc::new(Shown {
        kind: doc.kind,
        body: readable(doc.kind, doc.body, |_| Ok(used))?,
        id: doc.id,
        workspace_id: doc.workspace_id,
        created_at: doc.created_at,
        updated_at: doc.updated_at,
    });
    crate::db::offered::offer(conn, TABLE, &[&shown.id], depends, || shown.clone());
    Ok(shown)
}

/// A document body as a client reads it: quality results show references as
/// `{id, xref, name}`.
pub fn readable_body(conn: &Conn, doc: &Document) -> crate::db::Result<Value> {
    readable(doc.kind, doc.body.clone(), |ids| {
        crate::catalogs::store::get_many(conn, &doc.workspace_id, ids)
    })
}

/// A body of `kind` as it reads, taking the stored one (no copy), with the
/// catalog items of its workspace found by `items` (a write's own, or those
/// the change log keeps).
pub fn readable<I: Borrow<CatalogItem>>(
    kind: &'static Kind,
    mut body: serde_json::Map<String, Value>,
    items: impl FnOnce(&[String]) -> crate::db::Result<Vec<I>>,
) -> crate::db::Result<Value> {
    if kind.expand_references {
        let mut ids = Vec::new();
        schema::referenced_ids(kind.fields, &body, &mut ids);
        if !ids.is_empty() {
            let items = items(&ids)?;
            // Borrowed: each reference is rendered where it appears, nothing
            // is copied first.
            let by_id: HashMap<&str, &CatalogItem> = items
                .iter()
                .map(|item| (item.borrow().id.as_str(), item.borrow()))
                .collect();
            let find = |id: &str| by_id.get(id).map(|item| item.reference());
            schema::expand_references(kind.fields, &mut body, &find);
        }
    }
    Ok(Value::Object(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A data file with one workspace `w` and, written past the schema's own
    /// checks, the given rows of `(id, kind, body)`.
    fn store_with(rows: &[(&str, &str, &str)]) -> (tempfile::TempDir, Conn) {
        let dir = tempfile::tempdir().unwrap();
        let conn = Conn::open(&dir.path().join("documents.db")).unwrap();
        conn.execute(
            "INSERT INTO workspaces (id, created_at, updated_at) VALUES ('w', 0, 0)",
            [],
        )
        .unwrap();
        conn.execute_batch("PRAGMA ignore_check_constraints = ON")
            .unwrap();
        for (id, kind, body) in rows {
            conn.execute(
                "INSERT INTO documents (id, workspace_id, kind, job_id, body, created_at, \
                 updated_at) VALUES (?1, 'w', ?2, NULL, ?3, 0, 0)",
                params![id, kind, body],
            )
            .unwrap();
        }
        conn.execute_batch("PRAGMA ignore_check_constraints = OFF")
            .unwrap();
        (dir, conn)
    }

    #[test]
    fn an_unreadable_row_is_an_error_naming_the_document() {
        let (_dir, conn) = store_with(&[
            ("d-fine", "job", r#"{"reference":"R1"}"#),
            ("d-kind", "bogus", "{}"),
            ("d-array", "job", "[1, 2]"),
            // Not a job: the jobs' expression indexes refuse a body that
            // is not JSON, even past the schema's checks.
            ("d-text", "timelog", "not json at all"),
        ]);
        let fine = get_any(&conn, "w", "d-fine").unwrap().unwrap();
        assert_eq!(fine.kind.key, "job");
        assert_eq!(fine.body["reference"], "R1");
        // Read as stored (a GET's, the change log's), the same.
        let job = kinds::by_key("job").unwrap();
        match get_stored(&conn, "w", job, None, "d-fine").unwrap() {
            Some(Stored::Raw { body, .. }) => assert_eq!(body.get(), r#"{"reference":"R1"}"#),
            _ => panic!("a job is shown as stored"),
        }

        for (id, problem) in [
            ("d-kind", r#"its kind "bogus" is not one this binary knows"#),
            ("d-array", "its body is JSON an array, not an object"),
            ("d-text", "its body is not valid JSON"),
        ] {
            let err = match get_any(&conn, "w", id) {
                Ok(found) => panic!("{id} read as {found:?}"),
                Err(err) => err,
            };
            let line = crate::error::chain(&err);
            assert!(
                line.contains(&format!("document {id} cannot be read: {problem}")),
                "{line}"
            );
            // It reaches the client as a plain 500, its detail kept for the log.
            let api = crate::error::ApiError::from(err);
            assert_eq!(api.status(), 500);
            assert!(api.chain().contains(id), "{}", api.chain());
            assert!(!api.body().to_string().contains(id));
        }
        for (id, kind, problem) in [
            ("d-array", "job", "its body is JSON an array, not an object"),
            ("d-text", "timelog", "its body is not valid JSON"),
        ] {
            let kind = kinds::by_key(kind).unwrap();
            let err = match get_stored(&conn, "w", kind, None, id) {
                Ok(_) => panic!("{id} read as stored"),
                Err(err) => err,
            };
            let line = crate::error::chain(&err);
            assert!(
                line.contains(&format!("document {id} cannot be read: {problem}")),
                "{line}"
            );
        }
        // The parse error underneath a corrupt body is kept as its source.
        let err = get_any(&conn, "w", "d-text").unwrap_err();
        assert!(
            crate::error::chain(&err).contains("expected ident at line 1 column 2"),
            "{}",
            crate::error::chain(&err)
        );
    }
}
