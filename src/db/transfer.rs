//! `quayside migrate --from FILE.db --to postgres://...`: moves a site that
//! outgrew its data file into an empty PostgreSQL database.
//!
//! The file is read in one read transaction (a consistent snapshot: a server
//! may go on serving it, and the copy is of one moment), and the database is
//! written in one transaction holding the change log's row lock (all or
//! nothing; a server started on the database meanwhile waits). Every table is
//! copied in an order that puts a row after the rows it refers to, with its
//! columns by name; file bytes one 1 MiB chunk row at a time, so memory stays
//! bounded whatever the files' sizes. Before the commit, the copy is checked:
//! the same number of rows in every table, and every file's bytes read back
//! from the database hash to its recorded SHA-256. The file itself is only
//! read (and brought to this binary's schema version, as any command does):
//! it keeps working.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use ring::digest::{Context, SHA256};

use super::pg::{self, Client, ConnectOptions};
use super::value::Value;

/// Rows per INSERT statement, at most; fewer for wide tables (PostgreSQL
/// takes at most 65,535 parameters in one statement).
const ROWS_PER_INSERT: usize = 500;
const MAX_PARAMETERS: usize = 30_000;

/// What was copied: each table's rows, and the files checked.
#[derive(Debug, Default)]
pub struct Report {
    pub tables: Vec<(String, u64)>,
    pub files: u64,
    pub file_bytes: u64,
}

/// Copies the data file `from` into the empty database `to`, printing
/// progress to `progress`. Refuses a database that holds any record.
pub fn migrate(
    from: &Path,
    to: &ConnectOptions,
    progress: &mut dyn Write,
) -> Result<Report, String> {
    if !from.exists() {
        return Err(format!("{} does not exist", from.display()));
    }
    let target = to.describe();
    let source = super::open_and_migrate(from).map_err(|e| crate::error::chain(&e))?;
    let sql = |e: rusqlite::Error| format!("reading {}: {e}", from.display());
    let client = Client::connect(to).map_err(|e| format!("cannot connect to {target}: {e}"))?;
    pg::apply_schema(&client).map_err(|e| format!("cannot use {target}: {e}"))?;
    let pg_error = |e: pg::Error| format!("writing {target}: {e}");

    let tables = tables_in_order(&source).map_err(sql)?;
    // One snapshot of the file for the whole copy.
    source.execute_batch("BEGIN DEFERRED").map_err(sql)?;
    source
        .query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
        .map_err(sql)?;
    let started = Instant::now();
    // The copy proper, in one transaction of the target.
    client.batch_execute("BEGIN").map_err(pg_error)?;
    let result = copy_all(&source, &client, &tables, from, &target, progress);
    let report = match result {
        Ok(report) => report,
        Err(err) => {
            let _ = client.batch_execute("ROLLBACK");
            return Err(err);
        }
    };
    client.batch_execute("COMMIT").map_err(pg_error)?;
    let _ = source.execute_batch("COMMIT");
    // The planner's statistics, as after an import: a server started on the
    // database plans its lists with them at once, not after autovacuum's
    // first round (tests/it/pg/plans.rs: a lookup by xref walks the whole
    // catalog without them). The copy is committed whatever happens here.
    let _ = writeln!(progress, "refreshing the planner's statistics");
    if let Err(err) = client.batch_execute(super::dialect::POSTGRES.refresh_statistics()) {
        let _ = writeln!(
            progress,
            "the planner's statistics were not refreshed ({}); autovacuum will",
            pg_error(err)
        );
    }
    let _ = writeln!(
        progress,
        "migrated {} to {target} in {:.1} s: {} rows in {} tables, {} files ({} bytes) checked",
        from.display(),
        started.elapsed().as_secs_f64(),
        report.tables.iter().map(|(_, n)| n).sum::<u64>(),
        report.tables.len(),
        report.files,
        report.file_bytes,
    );
    Ok(report)
}

/// The copy and its checks, inside the target's transaction.
fn copy_all(
    source: &rusqlite::Connection,
    client: &Client,
    tables: &[String],
    from: &Path,
    target: &str,
    progress: &mut dyn Write,
) -> Result<Report, String> {
    let sql = |e: rusqlite::Error| format!("reading {}: {e}", from.display());
    let pg_error = |e: pg::Error| format!("writing {target}: {e}");
    // The store's write lock (`Conn::begin_writing`): a server on this
    // database waits until the copy is committed or rolled back.
    client
        .execute(
            "UPDATE change_log SET commits = commits + 1 WHERE id = 1",
            &[],
        )
        .map_err(pg_error)?;
    for table in tables {
        if table == "change_log" {
            continue;
        }
        let rows = client
            .query_row(&format!("SELECT count(*) FROM {table}"), &[])
            .map_err(pg_error)?
            .and_then(|row| row[0].as_i64())
            .unwrap_or(0);
        if rows > 0 {
            return Err(format!(
                "{target} is not empty (its table {table} holds {rows} rows): `migrate` \
                 copies into an empty database only"
            ));
        }
    }
    let mut report = Report::default();
    for table in tables {
        let copied = if table == "change_log" {
            let trimmed: i64 = source
                .query_row(
                    "SELECT trimmed_through FROM change_log WHERE id = 1",
                    [],
                    |row| row.get(0),
                )
                .map_err(sql)?;
            // The next change follows the last one copied (on PostgreSQL
            // the capture numbers changes from `head`).
            let head: i64 = source
                .query_row("SELECT coalesce(max(seq), 0) FROM changes", [], |row| {
                    row.get(0)
                })
                .map_err(sql)?;
            client
                .execute(
                    "UPDATE change_log SET trimmed_through = ?1, head = ?2 WHERE id = 1",
                    &[Value::Integer(trimmed), Value::Integer(head)],
                )
                .map_err(pg_error)?;
            1
        } else {
            copy_table(source, client, table, progress).map_err(|e| e.describe(from, target))?
        };
        report.tables.push((table.clone(), copied));
    }
    // Accounts keep their ids; the next one is after the highest.
    client
        .execute(
            "SELECT setval(pg_get_serial_sequence('accounts', 'id'), \
             coalesce(max(id), 0) + 1, false) FROM accounts",
            &[],
        )
        .map_err(pg_error)?;
    let _ = writeln!(progress, "checking the copy");
    for (table, copied) in &report.tables {
        let here: i64 = source
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
                row.get(0)
            })
            .map_err(sql)?;
        let there = client
            .query_row(&format!("SELECT count(*) FROM {table}"), &[])
            .map_err(pg_error)?
            .and_then(|row| row[0].as_i64())
            .unwrap_or(-1);
        if here != there || there as u64 != *copied {
            return Err(format!(
                "the copy of {table} has {there} rows, the file {here}: nothing was committed"
            ));
        }
    }
    let (files, bytes) = check_files(client, progress).map_err(|e| e.describe(from, target))?;
    report.files = files;
    report.file_bytes = bytes;
    Ok(report)
}

/// Why a step of the copy failed.
enum Failure {
    Read(rusqlite::Error),
    Write(pg::Error),
    Check(String),
}

impl Failure {
    fn describe(self, from: &Path, target: &str) -> String {
        match self {
            Failure::Read(e) => format!("reading {}: {e}", from.display()),
            Failure::Write(e) => format!("writing {target}: {e}"),
            Failure::Check(what) => format!("{what}: nothing was committed"),
        }
    }
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Failure {
        Failure::Read(e)
    }
}

impl From<pg::Error> for Failure {
    fn from(e: pg::Error) -> Failure {
        Failure::Write(e)
    }
}

/// The file's tables, each after the tables it refers to. A table that
/// refers to itself (documents: a result to its job) is ordered within
/// itself by [`order_of`].
fn tables_in_order(source: &rusqlite::Connection) -> rusqlite::Result<Vec<String>> {
    let names: Vec<String> = source
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    let mut parents = Vec::with_capacity(names.len());
    for name in &names {
        let refers: Vec<String> = source
            .prepare("SELECT DISTINCT \"table\" FROM pragma_foreign_key_list(?1)")?
            .query_map([name], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        parents.push(refers);
    }
    let mut ordered: Vec<String> = Vec::with_capacity(names.len());
    while ordered.len() < names.len() {
        let before = ordered.len();
        for (name, refers) in names.iter().zip(&parents) {
            let ready =
                !ordered.contains(name) && refers.iter().all(|p| p == name || ordered.contains(p));
            if ready {
                ordered.push(name.clone());
            }
        }
        if ordered.len() == before {
            // A cycle between tables: none in this schema; copy the rest as
            // they come (the target's checks would refuse a broken row).
            for name in &names {
                if !ordered.contains(name) {
                    ordered.push(name.clone());
                }
            }
        }
    }
    Ok(ordered)
}

/// The order rows of `table` are read in: a row after the rows of its own
/// table it refers to (a document's job before the document).
fn order_of(table: &str) -> &'static str {
    match table {
        "documents" => " ORDER BY (job_id IS NOT NULL), rowid",
        "blob_chunks" => " ORDER BY blob_id, seq",
        _ => "",
    }
}

/// Copies one table's rows in batches; answers how many.
fn copy_table(
    source: &rusqlite::Connection,
    client: &Client,
    table: &str,
    progress: &mut dyn Write,
) -> Result<u64, Failure> {
    let columns: Vec<String> = source
        .prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?
        .query_map([table], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    let total: i64 = source.query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
        row.get(0)
    })?;
    // File bytes: one chunk (1 MiB) per statement, so memory stays bounded.
    let per_insert = if table == "blob_chunks" {
        1
    } else {
        ROWS_PER_INSERT.min(MAX_PARAMETERS / columns.len()).max(1)
    };
    let insert = |rows: usize| {
        let tuple = format!(
            "({})",
            (0..columns.len())
                .map(|_| "?")
                .collect::<Vec<_>>()
                .join(", ")
        );
        format!(
            "INSERT INTO {table} ({}) VALUES {}",
            columns.join(", "),
            vec![tuple; rows].join(", ")
        )
    };
    let full = insert(per_insert);
    let mut statement = source.prepare(&format!(
        "SELECT {} FROM {table}{}",
        columns.join(", "),
        order_of(table)
    ))?;
    let mut rows = statement.query([])?;
    let mut batch: Vec<Value> = Vec::with_capacity(per_insert * columns.len());
    let mut in_batch = 0;
    let mut copied: u64 = 0;
    let mut reported = Instant::now();
    let _ = writeln!(progress, "copying {table}: {total} rows");
    while let Some(row) = rows.next()? {
        for i in 0..columns.len() {
            batch.push(Value::from(row.get::<_, rusqlite::types::Value>(i)?));
        }
        in_batch += 1;
        if in_batch == per_insert {
            client.execute(&full, &batch)?;
            copied += in_batch as u64;
            batch.clear();
            in_batch = 0;
            if reported.elapsed().as_secs() >= 2 {
                reported = Instant::now();
                let _ = writeln!(progress, "  {table}: {copied} of {total}");
            }
        }
    }
    if in_batch > 0 {
        client.execute(&insert(in_batch), &batch)?;
        copied += in_batch as u64;
    }
    Ok(copied)
}

/// Reads every complete file's bytes back from the database, a chunk at a
/// time, and checks them against its recorded size and SHA-256.
fn check_files(client: &Client, progress: &mut dyn Write) -> Result<(u64, u64), Failure> {
    let blobs = client.query(
        "SELECT id, size, sha256 FROM blobs WHERE complete = 1 ORDER BY id",
        &[],
    )?;
    let mut bytes: u64 = 0;
    for blob in &blobs {
        let id = blob[0].as_str().unwrap_or_default().to_string();
        let size = blob[1].as_i64().unwrap_or(-1);
        let recorded = blob[2].as_str().unwrap_or_default();
        let chunks = client
            .query_row(
                "SELECT count(*) FROM blob_chunks WHERE blob_id = ?1",
                &[Value::Text(id.clone())],
            )?
            .and_then(|row| row[0].as_i64())
            .unwrap_or(0);
        let mut digest = Context::new(&SHA256);
        let mut length: i64 = 0;
        for seq in 0..chunks {
            let chunk = client
                .query_row(
                    "SELECT data FROM blob_chunks WHERE blob_id = ?1 AND seq = ?2",
                    &[Value::Text(id.clone()), Value::Integer(seq)],
                )?
                .and_then(|row| row.into_values().into_iter().next());
            let Some(Value::Blob(data)) = chunk else {
                return Err(Failure::Check(format!("file {id} lacks its chunk {seq}")));
            };
            digest.update(&data);
            length += data.len() as i64;
        }
        let hash: String = digest
            .finish()
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if length != size || hash != recorded {
            return Err(Failure::Check(format!(
                "file {id} reads back as {length} bytes with SHA-256 {hash}, \
                 recorded {size} bytes with {recorded}"
            )));
        }
        bytes += length as u64;
    }
    let _ = writeln!(
        progress,
        "{} files ({bytes} bytes) read back: sizes and SHA-256 as recorded",
        blobs.len()
    );
    Ok((blobs.len() as u64, bytes))
}
