//! The planner's statistics, kept fresh off the request path. The lists do
//! not need them for their plans (one index per access path, schema version
//! 7, and the two joins of the workspace lists name their index; the plans
//! are tested without statistics, with fresh ones and with stale ones), but
//! the planner still weighs indexes with them where a query could use
//! several, and statistics taken on a small file would stay wrong as it
//! grows. So a background task runs `PRAGMA optimize` through the writer
//! shortly after start and then every [`EVERY`]: it analyzes a table never
//! analyzed, or one whose size changed tenfold since (otherwise it does
//! nothing), with `analysis_limit` bounding the work per index: a short write
//! even on a file of millions of documents, queued between requests' writes
//! like any other. So statistics are never more than tenfold and a minute
//! behind. Nothing runs on the start path itself.

use std::sync::Arc;
use std::time::Duration;

use super::Db;

/// How often the statistics are looked at after the first time.
pub const EVERY: Duration = Duration::from_secs(60);
/// The pause after start before the first refresh.
pub const FIRST_AFTER: Duration = Duration::from_secs(5);

/// Rows ANALYZE reads per index: enough for the planner's estimates, and a
/// bound on the write's length whatever the file's size.
pub const ANALYSIS_LIMIT: u32 = 1000;

/// One refresh: ANALYZE where SQLite judges the statistics stale or missing
/// (`0x10002`: also for tables never analyzed).
pub fn refresh(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "PRAGMA analysis_limit = {ANALYSIS_LIMIT}; PRAGMA optimize = 0x10002;"
    ))
}

/// Refreshes after `first`, then every `every`, until `closing` turns true.
pub async fn run(
    db: Db,
    first: Duration,
    every: Duration,
    mut closing: tokio::sync::watch::Receiver<bool>,
) {
    let actor: Arc<str> = Arc::from("statistics");
    let mut wait = first;
    loop {
        if !crate::clock::pause(wait, &mut closing).await {
            return;
        }
        wait = every;
        let started = std::time::Instant::now();
        match db
            .write_bookkeeping(actor.clone(), |conn| Ok(refresh(conn.sqlite())?))
            .await
        {
            Ok(()) => log::debug!(
                "statistics refreshed in {} ms",
                started.elapsed().as_millis()
            ),
            Err(err) => log::warn!("statistics: refresh failed (tried again later): {err}"),
        }
    }
}

#[cfg(test)]
mod tests {
    /// A file without statistics has them after one refresh.
    #[test]
    fn a_refresh_writes_the_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::db::open_and_migrate(&dir.path().join("stats.db")).unwrap();
        conn.execute(
            "INSERT INTO workspaces (id, created_at, updated_at) VALUES ('w', 0, 0)",
            [],
        )
        .unwrap();
        let stat_rows = |conn: &rusqlite::Connection| -> i64 {
            conn.query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_stat1'",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert_eq!(stat_rows(&conn), 0);
        super::refresh(&conn).unwrap();
        assert_eq!(stat_rows(&conn), 1);
    }
}
