//! The SQLite file's own maintenance, for the CLI: the online backup and
//! the integrity check.

use std::path::Path;
use std::time::Duration;

/// The complete files whose chunks do not hold their recorded size (both
/// engines' SQL: a BIGINT cast is SQLite's INTEGER).
const SHORT_FILES: &str = "SELECT id FROM blobs b WHERE complete = 1 AND size <> \
     (SELECT CAST(coalesce(sum(length(data)), 0) AS BIGINT) FROM blob_chunks WHERE blob_id = b.id)";

/// `quayside backup OUT`: SQLite's online backup API copies every page in one
/// step, inside one read transaction, so the copy is consistent even while the
/// server writes (WAL lets the writer go on). The copy is written beside OUT,
/// checked, then renamed into place, so OUT is never a partial file.
pub fn backup(data: &Path, out: &Path) -> Result<i32, String> {
    if !data.exists() {
        return Err(format!("{} does not exist", data.display()));
    }
    if out.exists() {
        return Err(format!(
            "{} already exists; choose a new name",
            out.display()
        ));
    }
    let partial = out.with_extension("partial");
    let _ = std::fs::remove_file(&partial);
    let source =
        super::open_connection(data).map_err(|e| format!("cannot open {}: {e}", data.display()))?;
    let mut copy = rusqlite::Connection::open(&partial)
        .map_err(|e| format!("cannot create {}: {e}", partial.display()))?;
    let pages = {
        let backup =
            rusqlite::backup::Backup::new(&source, &mut copy).map_err(|e| e.to_string())?;
        loop {
            match backup.step(-1).map_err(|e| e.to_string())? {
                rusqlite::backup::StepResult::Done => break,
                // Another connection holds a lock for a moment: try again.
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        backup.progress().pagecount
    };
    // The copy may hold batches a running server has committed but not yet
    // flushed (`db::durable`): they reach the disk before the copy is kept.
    super::durable::flush_wal_of(data)
        .map_err(|e| format!("cannot flush the WAL of {}: {e}", data.display()))?;
    let verdict: String = copy
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .map_err(|e| e.to_string())?;
    drop(copy);
    if verdict != "ok" {
        let _ = std::fs::remove_file(&partial);
        return Err(format!("the copy failed its integrity check: {verdict}"));
    }
    std::fs::rename(&partial, out).map_err(|e| format!("cannot move the copy into place: {e}"))?;
    Ok(pages)
}

/// `quayside check`: the schema version and every problem found (integrity,
/// foreign keys, file bytes).
pub fn check(at: &super::Location) -> Result<(i64, Vec<String>), String> {
    match at {
        super::Location::File(path) => check_file(path),
        super::Location::Postgres(options) => check_postgres(options),
    }
}

/// `check` on PostgreSQL: the server keeps its own pages and foreign keys
/// whole (there is no integrity pragma to run), so what is left to check is
/// the schema's version and that every complete file holds its recorded size.
fn check_postgres(options: &super::pg::ConnectOptions) -> Result<(i64, Vec<String>), String> {
    let target = options.describe();
    let client = super::pg::Client::connect(options)
        .map_err(|e| format!("cannot connect to {target}: {e}"))?;
    let sql = |e: super::pg::Error| e.to_string();
    let mut problems = Vec::new();
    let Some(version) = super::pg::schema::schema_version(&client).map_err(sql)? else {
        return Err(format!("{target} holds no Quayside schema"));
    };
    if version > super::migrate::CURRENT_VERSION {
        problems.push(format!(
            "schema version {version} is newer than this binary's ({})",
            super::migrate::CURRENT_VERSION
        ));
    }
    let short = client.query(SHORT_FILES, &[]).map_err(sql)?;
    problems.extend(short.iter().map(|row| {
        format!(
            "file bytes: blob {} does not hold its recorded size",
            row[0].as_str().unwrap_or_default()
        )
    }));
    Ok((version, problems))
}

fn check_file(data: &Path) -> Result<(i64, Vec<String>), String> {
    if !data.exists() {
        return Err(format!("{} does not exist", data.display()));
    }
    let conn =
        super::open_connection(data).map_err(|e| format!("cannot open {}: {e}", data.display()))?;
    let sql = |e: rusqlite::Error| e.to_string();
    let mut problems = Vec::new();
    let version = super::migrate::schema_version(&conn).map_err(sql)?;
    if version > super::migrate::CURRENT_VERSION {
        problems.push(format!(
            "schema version {version} is newer than this binary's ({})",
            super::migrate::CURRENT_VERSION
        ));
    }
    // Each check's rows, as the lines it reports.
    type Line = dyn Fn(&rusqlite::Row<'_>) -> rusqlite::Result<String>;
    let lines = |query: &str, line: &Line| -> Result<Vec<String>, String> {
        conn.prepare(query)
            .map_err(sql)?
            .query_map([], |row| line(row))
            .map_err(sql)?
            .collect::<Result<_, _>>()
            .map_err(sql)
    };
    let integrity = lines("PRAGMA integrity_check", &|row| row.get(0))?;
    problems.extend(
        integrity
            .into_iter()
            .filter(|line| line != "ok")
            .map(|line| format!("integrity: {line}")),
    );
    problems.extend(lines("PRAGMA foreign_key_check", &|row| {
        Ok(format!(
            "foreign key: {} row {} refers to a missing {}",
            row.get::<_, String>(0)?,
            row.get::<_, Option<i64>>(1)?.unwrap_or(0),
            row.get::<_, String>(2)?
        ))
    })?);
    if version >= 2 {
        problems.extend(lines(SHORT_FILES, &|row| {
            Ok(format!(
                "file bytes: blob {} does not hold its recorded size",
                row.get::<_, String>(0)?
            ))
        })?);
    }
    Ok((version, problems))
}
