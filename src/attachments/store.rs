//! SQL for attachment records (their bytes are in `db::blobs`).

use crate::db::Value as SqlValue;
use crate::db::{Conn, OptionalExtension, params};

use super::Attachment;
use crate::listing::{ListQuery, Page, fetch_page};

/// The columns `from_row` reads, the size and digest from the blobs table
/// `blobs` (a subquery, not a join: `id` and `created_at` name one column
/// each, for sorting and paging).
fn columns(blobs: &str) -> String {
    format!(
        "a.id, a.workspace_id, a.document_id, a.blob_id, a.caption, a.format, \
         (SELECT size FROM {blobs} b WHERE b.id = a.blob_id), \
         (SELECT sha256 FROM {blobs} b WHERE b.id = a.blob_id), \
         a.client_reference_number, a.vendor_reference_number, a.description, \
         a.created_at, a.updated_at"
    )
}

fn from_row(row: &crate::db::Row<'_>) -> crate::db::Result<Attachment> {
    Ok(Attachment {
        id: row.get(0)?,
        workspace_id: row.get(1)?,
        document_id: row.get(2)?,
        blob_id: row.get(3)?,
        caption: row.get(4)?,
        format: row.get(5)?,
        size: row.get(6)?,
        sha256: row.get::<_, Option<String>>(7)?.unwrap_or_default(),
        client_reference_number: row.get(8)?,
        vendor_reference_number: row.get(9)?,
        description: row.get(10)?,
        created_at: row.get(11)?,
        updated_at: row.get(12)?,
    })
}

pub fn get(conn: &Conn, document: &str, id: &str) -> crate::db::Result<Option<Attachment>> {
    conn.prepare_cached(&format!(
        "SELECT {} FROM attachments a WHERE a.id = ?1 AND a.document_id = ?2",
        columns("blobs")
    ))?
    .query_row(params![id, document], from_row)
    .optional()
}

/// An attachment row of `table` (`attachments`, or the change log's copy of a
/// deleted row), its size and digest from `blobs` (the live table, or one that
/// also holds the copies of deleted blobs; see `changes::capture`).
pub fn get_from(
    conn: &Conn,
    table: &str,
    blobs: &str,
    id: &str,
) -> crate::db::Result<Option<Attachment>> {
    conn.prepare_cached(&format!(
        "SELECT {} FROM {table} a WHERE a.id = ?1",
        columns(blobs)
    ))?
    .query_row([id], from_row)
    .optional()
}

pub fn insert(conn: &Conn, a: &Attachment) -> crate::db::Result<()> {
    conn.prepare_cached(
        "INSERT INTO attachments (id, workspace_id, document_id, blob_id, caption, format, \
         client_reference_number, vendor_reference_number, description, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        a.id,
        a.workspace_id,
        a.document_id,
        a.blob_id,
        a.caption,
        a.format,
        a.client_reference_number,
        a.vendor_reference_number,
        a.description,
        a.created_at,
        a.updated_at
    ])?;
    Ok(())
}

/// Removes the record and its bytes.
pub fn delete(conn: &Conn, a: &Attachment) -> crate::db::Result<()> {
    conn.prepare_cached("DELETE FROM attachments WHERE id = ?1")?
        .execute([&a.id])?;
    crate::db::blobs::delete(conn, &a.blob_id)
}

pub fn list(conn: &Conn, document: &str, query: &ListQuery) -> crate::db::Result<Page<Attachment>> {
    let params = vec![SqlValue::Text(document.to_string())];
    fetch_page(
        conn,
        &columns("blobs"),
        "FROM attachments a",
        "a.document_id = ?",
        params,
        query,
        from_row,
    )
}
