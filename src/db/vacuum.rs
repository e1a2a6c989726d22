//! Space handed back to the file system. The file is in incremental
//! auto-vacuum mode (schema version 6, [`super::migrate`]): pages that deletes
//! free (a file deleted, an upload aborted, a workspace removed) stay in the
//! file's free list until `PRAGMA incremental_vacuum` moves the last pages of
//! the file into them and cuts the file short. This task looks at the free
//! list now and then, off the request path, and when it holds more than
//! [`THRESHOLD_PAGES`] shrinks the file in steps of [`STEP_PAGES`], each one
//! short write through the writer, so requests' writes queue between steps as
//! they do between any others. The file on disk shrinks at the next
//! checkpoint ([`super::checkpoint`]).
//!
//! A free list below the threshold is left alone: SQLite reuses free pages
//! for the next inserts, and giving back a few pages only to grow the file
//! again would cost writes for nothing.

use std::sync::Arc;
use std::time::Duration;

use super::Db;

/// Free pages (of 4 KiB) that make the task shrink the file: 4 MiB.
pub const THRESHOLD_PAGES: i64 = 1024;

/// Pages moved and given back per write: at most 4 MiB of page copies, a
/// short transaction for the writer thread.
pub const STEP_PAGES: i64 = 1024;

/// The pages in the file's free list.
pub fn free_pages(conn: &super::Conn) -> rusqlite::Result<i64> {
    let conn = conn.sqlite();
    conn.query_row("PRAGMA freelist_count", [], |row| row.get(0))
}

/// One step: gives back up to [`STEP_PAGES`] free pages; answers how many
/// free pages are left.
pub fn step(conn: &super::Conn) -> rusqlite::Result<i64> {
    give_back(conn.sqlite(), STEP_PAGES)?;
    free_pages(conn)
}

/// `PRAGMA incremental_vacuum(pages)`, stepped to its end: SQLite gives back
/// one page per step of the statement (a single step, as `execute_batch`
/// makes, gives back one page only).
pub fn give_back(conn: &rusqlite::Connection, pages: i64) -> rusqlite::Result<()> {
    let mut statement = conn.prepare_cached(&format!("PRAGMA incremental_vacuum({pages})"))?;
    let mut rows = statement.query([])?;
    while rows.next()?.is_some() {}
    Ok(())
}

/// Looks at the free list every `every` and shrinks the file when it is
/// large, until `closing` turns true.
pub async fn run(db: Db, every: Duration, mut closing: tokio::sync::watch::Receiver<bool>) {
    let actor: Arc<str> = Arc::from("vacuum");
    loop {
        if !crate::clock::pause(every, &mut closing).await {
            return;
        }
        let free = match db.read(|conn, _| Ok(free_pages(conn)?)).await {
            Ok(free) => free,
            Err(err) => {
                log::warn!("vacuum: cannot read the free list (tried again later): {err}");
                continue;
            }
        };
        if free < THRESHOLD_PAGES {
            continue;
        }
        let mut left = free;
        while left > 0 && !*closing.borrow() {
            match db
                .write_bookkeeping(actor.clone(), |conn| Ok(step(conn)?))
                .await
            {
                // A step that frees nothing (another write freed or used
                // pages meanwhile) ends the round rather than spinning.
                Ok(now) if now < left => left = now,
                Ok(_) => break,
                Err(err) => {
                    log::warn!("vacuum: a step failed (tried again later): {err}");
                    break;
                }
            }
            tokio::task::yield_now().await;
        }
        log::info!(
            "vacuum: gave back {} free pages of {free}",
            free - left.min(free)
        );
    }
}
