//! The planner's statistics, kept fresh off the request path. The lists do
//! not need them for their plans (one index per access path, schema version
//! 7, and the workspace lists name their indexes; the plans are tested
//! without statistics, with fresh ones, with stale ones and with stale ones
//! refreshed by [`refresh`]), but
//! the planner still weighs indexes with them where a query could use
//! several, and statistics taken on a small file would stay wrong as it
//! grows. So a background task looks shortly after start and then every
//! [`EVERY`]: SQLite's `PRAGMA optimize` names the tables worth analyzing (a
//! table never analyzed, or one whose size changed tenfold since; otherwise
//! nothing), and the task analyzes them one index per write through the
//! writer, queued between requests' writes like any other.
//!
//! One index per write, not `ANALYZE` of the whole file in one: each write
//! holds the writer, and on a file of 460,000 results and as many change-log
//! entries that one write took 0.6 to 1.9 s while every request's write
//! waited. And only tables of up to [`ANALYZED_UP_TO`] rows: `analysis_limit`
//! bounds the rows read per index, but not for a partial index (SQLite counts
//! its entries) nor for a table whose only indexes are partial, which SQLite
//! counts row by row (the change log: its count is written as an estimate
//! instead, the span of its sequence numbers). A larger table keeps the
//! statistics taken when it was smaller, a case the plans are tested in, and
//! is remembered as too large, so the bounded count that found it is not
//! made again every minute (57 ms of the writer at a 100,000 bound). So
//! no refresh write reads more than about fifty thousand entries per index, and
//! nothing runs on the start path.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;

use super::Db;

/// How often the statistics are looked at after the first time.
pub const EVERY: Duration = Duration::from_secs(60);
/// The pause after start before the first refresh.
pub const FIRST_AFTER: Duration = Duration::from_secs(5);

/// Rows ANALYZE reads per index: enough for the planner's estimates, and a
/// bound on the write's length whatever the file's size.
pub const ANALYSIS_LIMIT: u32 = 1000;

/// One piece of a refresh, run as one write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// `ANALYZE` of one index that covers every row of its table.
    Index(String),
    /// The row count of a table without a full index, estimated from its
    /// rowids, written where ANALYZE would have counted every row.
    Count(String),
    /// `ANALYZE` of a table without any index (its rows are counted: such
    /// tables hold a row or a few).
    Table(String),
}

/// The tables SQLite judges worth analyzing now (`PRAGMA optimize`'s own
/// rule, asked in its mode that only names them; `0x10000`: every table,
/// not only those this connection used).
pub fn due(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare("PRAGMA optimize = 0x10003")?;
    let lines = statement
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(lines
        .iter()
        .filter_map(|line| {
            // `ANALYZE "main"."documents"`
            let name = line
                .strip_prefix("ANALYZE \"main\".\"")?
                .strip_suffix('"')?;
            Some(name.replace("\"\"", "\""))
        })
        .collect())
}

/// A table's indexes, each with whether it is partial.
fn indexes(conn: &Connection, table: &str) -> rusqlite::Result<Vec<(String, bool)>> {
    let mut statement = conn.prepare("SELECT name, partial FROM pragma_index_list(?1)")?;
    statement
        .query_map([table], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, bool>(1)?))
        })?
        .collect()
}

/// Rows of a table up to which it is analyzed. ANALYZE counts every entry of
/// a partial index (`analysis_limit` does not apply to them; the documents'
/// indexes are partial by kind): about 30 ms at 460,000 entries, 300 ms and
/// more beyond, each holding the writer. A larger table keeps the statistics
/// it has, taken when it was smaller: the plans are tested with statistics
/// taken on a file of one record of each (`documents::plans`). Fresh
/// statistics on its full indexes alone would not do: with those and stale
/// ones on the partial indexes, the workspace list sorted its page.
pub const ANALYZED_UP_TO: i64 = 50_000;

/// The writes that analyze `table`, one per index (its row count, estimated,
/// first when no index covers every row); `None` when it holds more than
/// `up_to` rows (counted up to that, no further).
pub fn steps(conn: &Connection, table: &str, up_to: i64) -> rusqlite::Result<Option<Vec<Step>>> {
    let rows: i64 = conn.query_row(
        &format!(
            "SELECT count(*) FROM (SELECT 1 FROM {} LIMIT ?1)",
            quoted(table)
        ),
        [up_to.saturating_add(1)],
        |row| row.get(0),
    )?;
    if rows > up_to {
        return Ok(None);
    }
    let indexes = indexes(conn, table)?;
    if indexes.is_empty() {
        return Ok(Some(vec![Step::Table(table.to_string())]));
    }
    let mut steps = Vec::new();
    if indexes.iter().all(|(_, partial)| *partial) {
        steps.push(Step::Count(table.to_string()));
    }
    steps.extend(indexes.into_iter().map(|(name, _)| Step::Index(name)));
    Ok(Some(steps))
}

/// The steps of every table due, but those in `large` or found larger than
/// `up_to` now (added to `large`: `PRAGMA optimize` names such a table again
/// every time, and it is not counted again).
pub fn plan(
    conn: &Connection,
    up_to: i64,
    large: &mut HashSet<String>,
) -> rusqlite::Result<Vec<Step>> {
    let mut planned = Vec::new();
    for table in due(conn)? {
        if large.contains(&table) {
            continue;
        }
        match steps(conn, &table, up_to)? {
            Some(steps) => planned.extend(steps),
            None => {
                large.insert(table);
            }
        }
    }
    Ok(planned)
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl Step {
    /// Runs the step (inside the writer's transaction).
    pub fn run(&self, conn: &Connection) -> rusqlite::Result<()> {
        conn.execute_batch(&format!("PRAGMA analysis_limit = {ANALYSIS_LIMIT};"))?;
        match self {
            Step::Index(index) | Step::Table(index) => {
                conn.execute_batch(&format!("ANALYZE {}", quoted(index)))
            }
            Step::Count(table) => {
                let rows: i64 = conn.query_row(
                    &format!(
                        "SELECT coalesce(max(rowid) - min(rowid) + 1, 0) FROM {}",
                        quoted(table)
                    ),
                    [],
                    |row| row.get(0),
                )?;
                // The statistics table exists once anything was analyzed;
                // this makes it if need be.
                conn.execute_batch("ANALYZE sqlite_schema")?;
                conn.execute(
                    "DELETE FROM sqlite_stat1 WHERE tbl = ?1 AND idx IS NULL",
                    [table],
                )?;
                conn.execute(
                    "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?1, NULL, ?2)",
                    rusqlite::params![table, rows.max(1).to_string()],
                )?;
                // The planner reads the statistics again.
                conn.execute_batch("ANALYZE sqlite_schema")
            }
        }
    }
}

/// One whole refresh on one connection (tests; the task runs the steps as
/// writes of their own).
pub fn refresh(conn: &Connection, up_to: i64) -> rusqlite::Result<()> {
    for step in plan(conn, up_to, &mut HashSet::new())? {
        step.run(conn)?;
    }
    Ok(())
}

/// Refreshes after `first`, then every `every`, until `closing` turns true.
pub async fn run(
    db: Db,
    first: Duration,
    every: Duration,
    mut closing: tokio::sync::watch::Receiver<bool>,
) {
    let actor: Arc<str> = Arc::from("statistics");
    // Tables found larger than the bound, left as they are from now on.
    let mut large = HashSet::new();
    let mut wait = first;
    loop {
        if !crate::clock::pause(wait, &mut closing).await {
            return;
        }
        wait = every;
        let started = std::time::Instant::now();
        let before = large.clone();
        let planned = db
            .write_bookkeeping(actor.clone(), move |conn| {
                let mut known = before.clone();
                let planned = plan(conn.sqlite(), ANALYZED_UP_TO, &mut known)?;
                Ok((planned, known))
            })
            .await;
        let planned = match planned {
            Ok((planned, known)) => {
                large = known;
                planned
            }
            Err(err) => {
                log::warn!("statistics: cannot look at them (tried again later): {err}");
                continue;
            }
        };
        let count = planned.len();
        for step in planned {
            if *closing.borrow() {
                return;
            }
            let what = format!("{step:?}");
            if let Err(err) = db
                .write_bookkeeping(actor.clone(), move |conn| Ok(step.run(conn.sqlite())?))
                .await
            {
                log::warn!("statistics: {what} failed (tried again later): {err}");
            }
        }
        if count > 0 {
            log::debug!(
                "statistics refreshed in {count} steps, {} ms",
                started.elapsed().as_millis()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Step;

    fn stat1(conn: &rusqlite::Connection, table: &str) -> Vec<(Option<String>, String)> {
        let exists: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_stat1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        if exists == 0 {
            return Vec::new();
        }
        let mut rows = conn
            .prepare("SELECT idx, stat FROM sqlite_stat1 WHERE tbl = ?1 ORDER BY idx")
            .unwrap();
        rows.query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    }

    /// A file without statistics has them after one refresh, and a second
    /// refresh with nothing grown has nothing to do.
    #[test]
    fn a_refresh_writes_the_statistics_and_then_rests() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::db::open_and_migrate(&dir.path().join("stats.db")).unwrap();
        conn.execute(
            "INSERT INTO workspaces (id, created_at, updated_at) VALUES ('w', 0, 0)",
            [],
        )
        .unwrap();
        assert!(stat1(&conn, "workspaces").is_empty());
        super::refresh(&conn, super::ANALYZED_UP_TO).unwrap();
        assert!(!stat1(&conn, "workspaces").is_empty());
        assert_eq!(super::due(&conn).unwrap(), Vec::<String>::new());
    }

    /// The change log's only index is partial: its row count is estimated
    /// from the span of its sequence numbers instead of being counted. A
    /// table beyond the bound is left as it is.
    #[test]
    fn the_change_log_is_estimated_not_counted_and_a_large_table_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::db::open_and_migrate(&dir.path().join("stats.db")).unwrap();
        for seq in [41, 42, 50] {
            conn.execute(
                "INSERT INTO changes (seq, event_id, type, entity_type, entity_id, feed, \
                 workspace_id, actor, occurred_at, record) \
                 VALUES (?1, 'e', 'job.created', 'job', 'j', 'workspaces', 'w', 'a', 0, '{}')",
                [seq],
            )
            .unwrap();
        }
        let steps = super::steps(&conn, "changes", 3).unwrap().unwrap();
        assert_eq!(
            steps,
            vec![
                Step::Count("changes".into()),
                Step::Index("changes_workspace".into())
            ]
        );
        assert_eq!(super::steps(&conn, "changes", 2).unwrap(), None);
        // Found too large once, a table is not counted again.
        let mut large = std::collections::HashSet::new();
        super::plan(&conn, 2, &mut large).unwrap();
        assert!(large.contains("changes"), "{large:?}");
        for step in &steps {
            step.run(&conn).unwrap();
        }
        let rows = stat1(&conn, "changes");
        assert!(rows.contains(&(None, "10".to_string())), "{rows:?}");
        // A table with several indexes has each analyzed by itself.
        let documents = super::steps(&conn, "documents", 10).unwrap().unwrap();
        assert!(documents.len() > 10);
        assert!(documents.iter().all(|s| matches!(s, Step::Index(_))));
    }
}
