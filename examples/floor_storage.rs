//! The storage floor for `bench/run`: the very write a port PUT makes
//! (`locations::store::put`: on a data file, read the row, then write the
//! columns that changed; on PostgreSQL, one upsert) with the same body as the PUT scenario, on a copy of the same loaded
//! data file, with Quayside's pragmas (WAL, synchronous=FULL), one transaction
//! and one commit per row. No HTTP, no writer thread, no batching: what the
//! disk and SQLite allow one row at a time. Quayside's PUT throughput is
//! measured as a multiple of this.
//!
//! On PostgreSQL (a connection string instead of the file: `--database`'s
//! forms), the same write in its own transaction, which begins as every
//! writing transaction there does (the `change_log` row lock), one commit per
//! row: that engine's floor, with the same driver.
//!
//! Usage: floor_storage DATA_FILE|DATABASE SECONDS CODES_FILE; prints
//! `rows/s: N` and `rows N seconds S`.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use quayside::locations::Catalog;
use quayside::locations::model::LocationFields;
use quayside::locations::store;

fn main() {
    let usage = "usage: floor_storage DATA_FILE|DATABASE SECONDS CODES_FILE";
    let mut args = std::env::args().skip(1);
    let path = args.next().expect(usage);
    let seconds: u64 = args.next().and_then(|s| s.parse().ok()).expect(usage);
    let codes: Vec<String> = std::fs::read_to_string(args.next().expect(usage))
        .expect("codes file")
        .lines()
        .filter(|l| l.len() >= 2)
        .map(str::to_string)
        .collect();
    assert!(!codes.is_empty(), "no codes");
    let location = quayside::db::Location::parse(&path).expect("a data file or a database");
    let conn = quayside::db::Conn::open_at(&location).expect("open");
    let now = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    };
    // xorshift: a random code per row, like the PUT scenario's Lua.
    let mut state = now() as u64 | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut rows: u64 = 0;
    while Instant::now() < deadline {
        let code = &codes[(next() % codes.len() as u64) as usize];
        // The PUT scenario's body: name, country, status and a new comment.
        let fields = LocationFields {
            name: format!("Port {code}"),
            country_code: Some(code[..2].to_string()),
            geo_region_code: None,
            latitude_deg: None,
            latitude_min: None,
            latitude_sec: None,
            latitude_ns: None,
            longitude_deg: None,
            longitude_min: None,
            longitude_sec: None,
            longitude_we: None,
            status_code: "ACTIVE".to_string(),
            restrictions: None,
            general_comments: Some(format!("bench {rows} {}", next() % 1_000_000_000)),
        };
        let write = conn.begin_write().expect("begin");
        store::put(&conn, Catalog::Ports, code, &fields, "admin", now())
            .and_then(|put| put.outcome())
            .expect("put");
        write.commit().expect("commit");
        rows += 1;
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!("rows/s: {:.1}", rows as f64 / elapsed);
    // For callers that add several runs up.
    println!("rows {rows} seconds {elapsed:.3}");
}
