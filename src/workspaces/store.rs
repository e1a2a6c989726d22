//! SQL for workspaces.

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, params};

use super::{Party, Workspace};
use crate::auth::principal::Principal;
use crate::error::{ApiError, ApiResult};
use crate::listing::{ListQuery, fetch_page};

const SELECT: &str = "SELECT w.id, w.description, w.client_id, w.client_xref, w.vendor_id, \
    w.vendor_xref, w.created_at, w.updated_at, \
    (SELECT audience FROM organizations WHERE id = w.client_id), \
    (SELECT audience FROM organizations WHERE id = w.vendor_id) \
    FROM workspaces w";

fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Workspace> {
    Ok(Workspace {
        id: row.get(0)?,
        description: row.get(1)?,
        client: Party {
            id: row.get(2)?,
            xref: row.get(3)?,
        },
        vendor: Party {
            id: row.get(4)?,
            xref: row.get(5)?,
        },
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
        client_audience: row.get(8)?,
        vendor_audience: row.get(9)?,
    })
}

pub fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<Workspace>> {
    conn.prepare_cached(&format!("{SELECT} WHERE w.id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// A workspace row of `table`: `workspaces`, or the change log's copy of a
/// deleted row (see `changes::capture`).
pub fn get_from(conn: &Connection, table: &str, id: &str) -> rusqlite::Result<Option<Workspace>> {
    let select = SELECT.replacen("FROM workspaces w", &format!("FROM {table} w"), 1);
    conn.prepare_cached(&format!("{select} WHERE w.id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

pub fn insert(conn: &Connection, ws: &Workspace) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO workspaces (id, description, client_id, client_xref, vendor_id, vendor_xref, \
         created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        ws.id,
        ws.description,
        ws.client.id,
        ws.client.xref,
        ws.vendor.id,
        ws.vendor.xref,
        ws.created_at,
        ws.updated_at
    ])?;
    Ok(())
}

pub fn update_description(conn: &Connection, ws: &Workspace) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE workspaces SET description = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![ws.id, ws.description, ws.updated_at])?;
    Ok(())
}

/// Removes an empty workspace with its catalogs and synonyms; 409 when it
/// still holds documents.
pub fn delete(conn: &Connection, id: &str) -> ApiResult<()> {
    let documents: i64 = conn
        .prepare_cached("SELECT count(*) FROM documents WHERE workspace_id = ?1")?
        .query_row([id], |row| row.get(0))?;
    if documents > 0 {
        return Err(ApiError::conflict(
            "workspace_not_empty",
            "Workspace is not empty",
        ));
    }
    for sql in [
        "DELETE FROM synonyms WHERE workspace_id = ?1",
        "DELETE FROM catalog_items WHERE workspace_id = ?1",
        "DELETE FROM workspaces WHERE id = ?1",
    ] {
        conn.prepare_cached(sql)?.execute([id])?;
    }
    Ok(())
}

/// Workspaces the caller may see, filtered and paged.
pub fn list(
    conn: &Connection,
    user: &Principal,
    query: &ListQuery,
) -> rusqlite::Result<(i64, Vec<Workspace>)> {
    let mut params: Vec<SqlValue> = Vec::new();
    let mut condition = String::from("1 = 1");
    if !user.is_admin {
        condition.push_str(
            " AND EXISTS (SELECT 1 FROM organizations o WHERE o.audience = ? \
             AND o.id IN (w.client_id, w.vendor_id))",
        );
        params.push(SqlValue::Text(user.tenant.clone()));
    }
    fetch_page(
        conn,
        SELECT,
        "FROM workspaces w",
        &condition,
        params,
        query,
        from_row,
    )
}
