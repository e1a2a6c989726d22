//! The storage floor for `bench/run`: a raw rusqlite loop doing the same write
//! as a port PUT (read the row, then upsert it), one transaction and one commit
//! per row, with Quayside's pragmas (WAL, synchronous=FULL). Quayside's PUT
//! throughput is measured as a multiple of this.
//!
//! Usage: floor_storage DATA_FILE SECONDS; prints `rows/s: N`.

use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: floor_storage DATA_FILE SECONDS");
    let seconds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let mut conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;
         CREATE TABLE IF NOT EXISTS locations (
            catalog TEXT NOT NULL, client_code TEXT NOT NULL, name TEXT NOT NULL,
            name_folded TEXT NOT NULL, general_comments TEXT, status_code TEXT NOT NULL,
            created_at INTEGER NOT NULL, creator TEXT NOT NULL, modified_at INTEGER NOT NULL,
            modifier TEXT NOT NULL, PRIMARY KEY (catalog, client_code)) WITHOUT ROWID;",
    )
    .expect("schema");
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut rows: u64 = 0;
    while Instant::now() < deadline {
        let code = format!("P{}", rows % 10_000);
        let tx = conn.transaction().expect("begin");
        let _existing: Option<String> = tx
            .query_row(
                "SELECT name FROM locations WHERE catalog = 'ports' AND client_code = ?1",
                [&code],
                |row| row.get(0),
            )
            .ok();
        tx.execute(
            "INSERT INTO locations (catalog, client_code, name, name_folded, general_comments, \
             status_code, created_at, creator, modified_at, modifier) \
             VALUES ('ports', ?1, ?2, lower(?2), ?3, 'ACTIVE', ?4, 'bench', ?4, 'bench') \
             ON CONFLICT (catalog, client_code) DO UPDATE SET name = excluded.name, \
             general_comments = excluded.general_comments, modified_at = excluded.modified_at",
            rusqlite::params![
                code,
                format!("Port {code}"),
                format!("comment {rows}"),
                rows as i64
            ],
        )
        .expect("upsert");
        tx.commit().expect("commit");
        rows += 1;
    }
    println!(
        "rows/s: {:.1}",
        rows as f64 / started.elapsed().as_secs_f64()
    );
}
