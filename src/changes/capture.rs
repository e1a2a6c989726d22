//! Recording changes in the transaction that makes them.
//!
//! [`install`] makes every covered table (`sources.rs`) note its changes on
//! one connection, and [`record`] then turns what one write noted into change
//! entries, in the same transaction, right after the write's own savepoint
//! (before it is released on PostgreSQL: `Dialect::records_before_release`):
//! the writer thread calls it after every write (`db::writer::Capture`), so no
//! handler can forget it, and fails the whole batch if it cannot record. A
//! write that fails is rolled back with its notes and copies
//! ([`discard`] forgets the rest).
//!
//! How a change is noted depends on the engine:
//! - SQLite: the pre-update hook (`db::preupdate`) keeps each insert's,
//!   update's and delete's key and status in memory, and a delete's row
//!   values, which [`record`] copies into the in-memory table
//!   `temp.gone_<table>` before it renders. No triggers: SQLite runs a
//!   statement on a table with a trigger with a statement journal, a copy of
//!   every page the statement touches. `seq` is the rowid SQLite assigns.
//! - PostgreSQL (no TEMP triggers on permanent tables, no functions of this
//!   process): one PL/pgSQL trigger function per covered table, made by
//!   [`install`] on the permanent tables, noting into the session's temp
//!   table `change_notes` and copying deleted rows into `pg_temp.gone_<table>`
//!   — but only in a session that set `quayside.capture = 'on'`, which only
//!   [`install`] does. [`record`] takes the notes back in one statement
//!   (`DELETE … RETURNING`) and assigns `seq` itself: the last one
//!   (`change_log.head`, under the row lock the writer's transaction holds)
//!   plus one, two, … (docs/design/postgresql.md 3.4, 3.10).
//!
//! From the notes on, [`record`] is one code for both: the net effect per
//! record, the `SOURCES` renderers, the entries.
//!
//! On PostgreSQL the notes' take is a round trip, most of what a write
//! costs the writer once its statements are sent ahead. So in a batch run
//! without savepoints a write that offered every row it changed
//! ([`defer`]) has its entries rendered from its offers at once, and its
//! notes are left behind a marker row, to be taken with a later write's or
//! at the batch's end ([`settle`]) and checked then ([`confirm`]): a
//! write's notes that show more than it offered run the batch again, with
//! a savepoint and a take per write.
//!
//! Temp tables never reach the WAL on either engine. Only connections that
//! installed the capture record changes: the writer thread's and the CLI's
//! import. Another program writing the data (the sqlite3 shell, psql) is not
//! seen.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::db::dialect::Engine;
use crate::db::preupdate::{RowChange, RowOp};
use crate::db::{Conn, OptionalExtension, Value, params};

use super::sources::{
    FromOffer, Items, Kept, Rendered, SHADOWED, SOURCES, Source, Tables, noted_tables,
};
use crate::error::ApiResult;

/// The tenants owning a workspace's client and vendor organizations, as far
/// as they are its members (an invited party that has not accepted is not):
/// who may read its records. Organizations never change their owner; a
/// workspace's members change only with its row, which forgets what is kept.
type Parties = (Option<String>, Option<String>);

/// What the capture keeps between writes of one connection.
#[derive(Default)]
pub struct State {
    /// Each workspace's [`Parties`].
    tenants: Kept<Parties>,
    items: Items,
    /// What the row hook noted since the last [`record`] or [`discard`]
    /// (SQLite; PostgreSQL's triggers note into a temp table).
    notes: Arc<Mutex<Vec<Pending>>>,
    /// Entries [`hold`] kept back for [`append_held`] (PostgreSQL), as the
    /// rows of its statement.
    held: Mutex<Vec<serde_json::Value>>,
    /// The writes [`defer`] rendered whose notes are not taken yet, in
    /// write order (PostgreSQL).
    deferred: Mutex<Vec<Deferred>>,
    /// How many deferred writes [`confirm`] confirmed.
    confirmed: std::sync::atomic::AtomicU64,
    /// Notes taken from `change_notes` since [`tidy`] last vacuumed it
    /// (PostgreSQL).
    taken_untidied: std::sync::atomic::AtomicU64,
    /// Whether a write copied deleted rows into the `gone_*` tables since
    /// [`tidy`] last vacuumed them (PostgreSQL).
    gone_untidied: std::sync::atomic::AtomicBool,
    /// The covered tables as the row hook reads them (SQLite).
    covered: OnceLock<Arc<[Covered]>>,
}

/// Drops what a write that failed had noted (its rows were rolled back), and
/// what was kept of rows it may have read. On PostgreSQL the notes are rows
/// of a temp table, rolled back with the write's savepoint.
pub fn discard(state: &State) {
    state
        .notes
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clear();
    state.items.clear();
    state.tenants.clear();
    crate::db::offered::clear();
}

/// What one change did to its row, net over one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Net {
    Created,
    Updated,
    Deleted,
}

/// A covered table itself.
fn live(engine: Engine, table: &str) -> String {
    match engine {
        Engine::Sqlite => format!("main.{table}"),
        // The schema's tables are found on the search path; the capture's
        // temp tables are all named `gone_*` / `change_notes`, so none
        // shadows one.
        Engine::Postgres => table.to_string(),
    }
}

/// The copy of `table`'s deleted rows.
fn gone(engine: Engine, table: &str) -> String {
    match engine {
        Engine::Sqlite => format!("temp.gone_{table}"),
        Engine::Postgres => format!("pg_temp.gone_{table}"),
    }
}

/// The copy of `table`'s deleted rows, the newest first (a row deleted twice
/// in one write: the last known one first). PostgreSQL's is a temp view over
/// the copy (a subquery would need an alias, and renders add their own).
fn newest_gone(engine: Engine, table: &str) -> String {
    match engine {
        Engine::Sqlite => format!(
            "(SELECT * FROM {} ORDER BY rowid DESC)",
            gone(engine, table)
        ),
        Engine::Postgres => format!("pg_temp.newest_gone_{table}"),
    }
}

/// Makes the covered tables of `conn` note their changes (once per
/// connection).
pub fn install(conn: &Conn, state: &State) -> crate::db::Result<()> {
    match conn.dialect().engine {
        Engine::Sqlite => install_sqlite(conn, state),
        Engine::Postgres => {
            conn.execute_batch(&postgres_install())?;
            // `record` settles the offers from each write's notes.
            conn.withdraw_offers()
        }
    }
}

/// Notes taken from `change_notes` after which [`tidy`] vacuums it: about
/// 60 pages of rows deleted (taken), which every take would otherwise read.
pub const TIDY_AFTER_NOTES: u64 = 4096;

/// Keeps the capture's temp tables small, outside any transaction
/// (PostgreSQL; the writer calls it between two batches). A take deletes
/// the notes it reads, but nothing vacuums a temp table by itself
/// (autovacuum cannot see them): the inserts of later notes go to new pages
/// at the table's end while the pages of the notes taken stay, so the table
/// would grow with every write the connection ever made, and every take,
/// which reads the whole table, would slow down with it. Once
/// [`TIDY_AFTER_NOTES`] notes were taken, a `VACUUM` frees their pages and
/// truncates the table (and the `gone_*` copies of deleted rows, when a
/// write copied any since).
pub fn tidy(conn: &Conn, state: &State) -> crate::db::Result<()> {
    use std::sync::atomic::Ordering;
    if conn.dialect().engine != Engine::Postgres
        || state.taken_untidied.load(Ordering::Relaxed) < TIDY_AFTER_NOTES
    {
        return Ok(());
    }
    let mut tables = vec!["pg_temp.change_notes".to_string()];
    if state.gone_untidied.swap(false, Ordering::Relaxed) {
        let engine = Engine::Postgres;
        tables.extend(noted_tables().map(|table| gone(engine, table)));
    }
    state.taken_untidied.store(0, Ordering::Relaxed);
    conn.execute_batch(&format!("VACUUM {}", tables.join(", ")))
}

/// SQLite: the temp tables that keep deleted rows, and the row hook
/// (`db::preupdate`: no triggers, so no statement journal for the covered
/// tables' statements) noting each change of a covered table's row: its key,
/// its status before and after, and a deleted row's values, which [`record`]
/// copies into `temp.gone_<table>` before it renders.
fn install_sqlite(conn: &Conn, state: &State) -> crate::db::Result<()> {
    let mut covered = Vec::new();
    let shadowed = SHADOWED.iter().map(|table| (*table, None));
    for (table, source) in shadowed.chain(SOURCES.iter().map(|s| (s.table, Some(s)))) {
        // Every column, in the table's order (the hook's column numbers);
        // `table_xinfo` also lists generated ones, which would shift them.
        let listed: Vec<(String, i64)> = conn
            .prepare(&format!(
                "SELECT name, hidden FROM pragma_table_xinfo('{table}') ORDER BY cid"
            ))?
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<_, _>>()?;
        if listed.iter().any(|(_, hidden)| *hidden != 0) {
            return Err(crate::db::Error::Unsupported(
                "a covered table with a generated or hidden column",
            ));
        }
        let columns: Vec<String> = listed.into_iter().map(|(name, _)| name).collect();
        conn.execute_batch(&format!(
            "CREATE TEMP TABLE IF NOT EXISTS gone_{table} AS SELECT * FROM main.{table} WHERE 0"
        ))?;
        let column = |name: &str| {
            columns
                .iter()
                .position(|c| c == name)
                .ok_or(crate::db::Error::Unsupported(
                    "a covered table without its key or status column",
                ))
        };
        let placeholders: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
        covered.push(Covered {
            table,
            key: match source {
                Some(source) => source
                    .key
                    .iter()
                    .map(|k| column(k))
                    .collect::<Result<_, _>>()?,
                None => Vec::new(),
            },
            status: match source.and_then(|s| s.status) {
                Some((name, _)) => Some(column(name)?),
                None => None,
            },
            shadowed: source.is_none(),
            columns: columns.len(),
            copy: format!(
                "INSERT INTO temp.gone_{table} ({}) VALUES ({})",
                columns.join(", "),
                placeholders.join(", ")
            ),
        });
    }
    let notes = state.notes.clone();
    let hooked: Arc<[Covered]> = covered.into();
    let _ = state.covered.set(hooked.clone());
    conn.on_row_change(move |change| {
        let Some(table) = hooked.iter().find(|t| t.table == change.table) else {
            return;
        };
        // A panic here must not lose the change: it is noted as unreadable,
        // which fails the write's batch.
        let note = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let note = table.note(change)?;
            // What the write offered of this row, or of a row showing it,
            // no longer holds (`db::offered`).
            match (&note.key1, &note.key2) {
                (Some(key1), None) => crate::db::offered::withdraw(table.table, &[key1]),
                (Some(key1), Some(key2)) => {
                    crate::db::offered::withdraw(table.table, &[key1, key2])
                }
                (None, _) => {}
            }
            Some(note)
        }))
        .unwrap_or_else(|_| Some(Pending::unreadable(table.table)));
        if let Some(note) = note {
            notes.lock().unwrap_or_else(|p| p.into_inner()).push(note);
        }
    })?;
    // The hook above withdraws every offer of a row it sees change.
    conn.withdraw_offers()
}

/// A covered table as SQLite's row hook reads it (column positions).
struct Covered {
    table: &'static str,
    key: Vec<usize>,
    status: Option<usize>,
    /// Only a deleted row is noted, for its copy (`SHADOWED`).
    shadowed: bool,
    columns: usize,
    /// The statement that copies a deleted row into `temp.gone_<table>`.
    copy: String,
}

impl Covered {
    /// What a change of one of the table's rows notes; a value that cannot
    /// be read notes that (`record` then fails the write rather than lose an
    /// entry).
    fn note(&self, change: &RowChange<'_>) -> Option<Pending> {
        let text = |value: Option<Value>| -> Option<String> {
            match value? {
                Value::Null => None,
                Value::Integer(n) => Some(n.to_string()),
                Value::Real(x) => Some(x.to_string()),
                Value::Text(t) => Some(t),
                Value::Blob(b) => Some(String::from_utf8_lossy(&b).into_owned()),
            }
        };
        let deleted = change.op == RowOp::Delete;
        if self.shadowed && !deleted {
            return None;
        }
        if change.columns() != self.columns {
            return Some(Pending::unreadable(self.table));
        }
        let copy = if deleted {
            match (0..self.columns)
                .map(|i| change.before(i))
                .collect::<Option<Vec<_>>>()
            {
                Some(row) => Some(row),
                None => return Some(Pending::unreadable(self.table)),
            }
        } else {
            None
        };
        let key = |i: usize| {
            let at = *self.key.get(i)?;
            match &copy {
                Some(row) => text(row.get(at).cloned()),
                None => text(change.after(at)),
            }
        };
        let (key1, key2) = (key(0), key(1));
        if !self.shadowed && (key1.is_none() || (self.key.len() > 1 && key2.is_none())) {
            return Some(Pending::unreadable(self.table));
        }
        let old_status = self.status.and_then(|at| text(change.before(at)));
        let new_status = self.status.and_then(|at| text(change.after(at)));
        let op = match change.op {
            RowOp::Insert => "c",
            RowOp::Update => "u",
            RowOp::Delete if self.shadowed => "s",
            RowOp::Delete => "d",
        };
        Some(Pending {
            table: self.table,
            key1,
            key2,
            op,
            old_status,
            new_status,
            copy,
        })
    }
}

/// Whether the row a delete was noted for is still in its table.
fn still_there(conn: &Conn, source: &Source, key: &[String]) -> crate::db::Result<bool> {
    let matches: Vec<String> = source
        .key
        .iter()
        .enumerate()
        .map(|(i, column)| format!("{column} = ?{}", i + 1))
        .collect();
    let sql = format!(
        "SELECT 1 FROM main.{} WHERE {}",
        source.table,
        matches.join(" AND ")
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_row(crate::db::params_from_iter(key.iter()), |_| Ok(()))
        .optional()?
        .is_some())
}

/// SQLite: the rows the write deleted, copied into `temp.gone_<table>` in
/// the order deleted (the newest last), where the renders read them.
fn copy_deleted(conn: &Conn, state: &State, pending: &[Pending]) -> ApiResult<()> {
    for note in pending {
        let Some(row) = &note.copy else { continue };
        let table = state
            .covered
            .get()
            .and_then(|covered| covered.iter().find(|t| t.table == note.table));
        let Some(table) = table else { continue };
        conn.prepare_cached(&table.copy)?
            .execute(crate::db::params_from_iter(row.iter()))?;
    }
    Ok(())
}

/// The advisory lock PostgreSQL's [`install`] holds while it replaces the
/// trigger functions, so that processes starting together do not collide
/// ("tuple concurrently updated").
const INSTALL_LOCK: &str = "SELECT pg_advisory_xact_lock(hashtext('quayside.capture'))";

/// The name of the trigger on every covered table (PostgreSQL).
const TRIGGER: &str = "quayside_change";

/// PostgreSQL: everything [`install`] runs, as one batch (one round trip;
/// a simple query of several statements is one transaction, so the advisory
/// lock is held to its end and a failure leaves nothing half made).
///
/// - The trigger functions `quayside_change_<table>()`, one per covered
///   table, generated from `SOURCES` and `SHADOWED`, replaced at every start
///   (`CREATE OR REPLACE`: a new build's functions take over with no
///   migration step; the table is not locked).
/// - The triggers `quayside_change` on the permanent tables, made only where
///   missing: a trigger just names its function, all it does is in the
///   function, and creating one locks its table against writes.
/// - This session's temp tables: `change_notes` (ordered by an identity
///   column, with no index: every take reads the whole table, which
///   [`tidy`] keeps small) and, per table, `gone_<table>` (its columns, then `copy_n`),
///   with the view `newest_gone_<table>` over it, newest first.
/// - `SET quayside.capture = 'on'`: the functions do nothing in a session
///   without it (psql, another tool).
fn postgres_install() -> String {
    let mut sql = format!(
        "{INSTALL_LOCK};\n\
         CREATE TEMP TABLE IF NOT EXISTS change_notes (\
         n bigint GENERATED ALWAYS AS IDENTITY, tbl text NOT NULL, key1 text, \
         key2 text, op text NOT NULL, old_status text, new_status text);\n"
    );
    let noted = |table: &str, k1: &str, k2: &str, op: &str, old: &str, new: &str| {
        format!(
            "INSERT INTO pg_temp.change_notes (tbl, key1, key2, op, old_status, new_status) \
             VALUES ('{table}', {k1}, {k2}, '{op}', {old}, {new});"
        )
    };
    let copy = |table: &str| format!("INSERT INTO pg_temp.gone_{table} SELECT OLD.*;");
    let mut tables: Vec<(&str, &str, String)> = Vec::new();
    for table in SHADOWED {
        // Noted (with no key) so that `record` clears the copies after the write.
        let body = format!(
            "{} {}",
            copy(table),
            noted(table, "NULL", "NULL", "s", "NULL", "NULL")
        );
        tables.push((table, "DELETE", body));
    }
    for source in &SOURCES {
        let t = source.table;
        let key = |row: &str| {
            let k1 = format!("{row}.{}::text", source.key[0]);
            let k2 = source
                .key
                .get(1)
                .map_or("NULL".to_string(), |k| format!("{row}.{k}::text"));
            (k1, k2)
        };
        let status = |row: &str| {
            source.status.map_or("NULL".to_string(), |(column, _)| {
                format!("{row}.{column}::text")
            })
        };
        let (new1, new2) = key("NEW");
        let (old1, old2) = key("OLD");
        let body = format!(
            "IF TG_OP = 'INSERT' THEN {} \
             ELSIF TG_OP = 'UPDATE' THEN {} \
             ELSE {} {} END IF;",
            noted(t, &new1, &new2, "c", "NULL", &status("NEW")),
            noted(t, &new1, &new2, "u", &status("OLD"), &status("NEW")),
            copy(t),
            noted(t, &old1, &old2, "d", &status("OLD"), "NULL"),
        );
        tables.push((t, "INSERT OR UPDATE OR DELETE", body));
    }
    for (t, events, body) in tables {
        sql.push_str(&format!(
            "CREATE TEMP TABLE IF NOT EXISTS gone_{t} \
             (LIKE {t}, copy_n bigint GENERATED ALWAYS AS IDENTITY);\n\
             CREATE OR REPLACE TEMP VIEW newest_gone_{t} AS \
             SELECT * FROM pg_temp.gone_{t} ORDER BY copy_n DESC;\n\
             CREATE OR REPLACE FUNCTION {TRIGGER}_{t}() RETURNS trigger LANGUAGE plpgsql AS $f$\n\
             BEGIN\n\
             IF current_setting('quayside.capture', true) IS DISTINCT FROM 'on' THEN \
             RETURN NULL; END IF;\n\
             {body}\n\
             RETURN NULL;\n\
             END $f$;\n\
             DO $d$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_trigger \
             WHERE tgrelid = '{t}'::regclass AND tgname = '{TRIGGER}') THEN \
             CREATE TRIGGER {TRIGGER} AFTER {events} ON {t} \
             FOR EACH ROW EXECUTE FUNCTION {TRIGGER}_{t}(); END IF; END $d$;\n"
        ));
    }
    sql.push_str("SET quayside.capture = 'on';\n");
    sql
}

/// A covered table and a row's key in it.
type RowKey = (&'static str, Vec<String>);
/// The net effect on one row so far (`None`: none at all), with its status
/// before the write and after it.
type Effect = (Option<Net>, Option<String>, Option<String>);

/// The rows one write changed, in the order it first touched them, each with
/// its net effect. Most writes change a row or a few, found by a look along
/// the list; a write of many rows (an import, a bulk certificate) indexes
/// them beyond [`NetEffects::LOOKED_ALONG`].
#[derive(Default)]
struct NetEffects {
    rows: Vec<(RowKey, Effect)>,
    /// Position in `rows` by key, kept once `rows` is longer than
    /// [`NetEffects::LOOKED_ALONG`].
    index: HashMap<RowKey, usize>,
}

impl NetEffects {
    const LOOKED_ALONG: usize = 16;

    /// Adds change `op` to row `id` (its status before and after it).
    fn note(&mut self, id: RowKey, op: Net, old_status: Option<String>, new: Option<String>) {
        let found = if self.rows.len() <= Self::LOOKED_ALONG {
            self.rows.iter().position(|(row, _)| *row == id)
        } else {
            if self.index.is_empty() {
                self.index = (self.rows.iter().enumerate())
                    .map(|(at, (row, _))| (row.clone(), at))
                    .collect();
            }
            self.index.get(&id).copied()
        };
        match found {
            None => {
                if !self.index.is_empty() {
                    self.index.insert(id.clone(), self.rows.len());
                }
                self.rows.push((id, (Some(op), old_status, new)));
            }
            Some(at) => {
                let (state, _, new_status) = &mut self.rows[at].1;
                *state = match (*state, op) {
                    // Made and removed within one write: nothing happened.
                    (Some(Net::Created) | None, Net::Deleted) => None,
                    (Some(Net::Created), _) => Some(Net::Created),
                    (None, _) => Some(Net::Created),
                    (_, Net::Deleted) => Some(Net::Deleted),
                    _ => Some(Net::Updated),
                };
                *new_status = new;
            }
        }
    }
}

/// One noted change.
struct Pending {
    table: &'static str,
    key1: Option<String>,
    key2: Option<String>,
    /// `c`, `u`, `d`; `s` for a shadowed table's delete; [`UNREADABLE`].
    op: &'static str,
    old_status: Option<String>,
    new_status: Option<String>,
    /// A deleted row's values, for its copy (SQLite; PostgreSQL's trigger
    /// function copies the row itself).
    copy: Option<Vec<Value>>,
}

impl Pending {
    /// A change whose row could not be read.
    fn unreadable(table: &'static str) -> Pending {
        Pending {
            table,
            key1: None,
            key2: None,
            op: UNREADABLE,
            old_status: None,
            new_status: None,
            copy: None,
        }
    }
}

/// The `op` of a change whose row could not be read.
const UNREADABLE: &str = "!";

/// The table (and `op`) of the note [`defer`] adds after a write whose notes
/// it leaves for later: the notes between two markers are one write's.
const MARKER: &str = "#";

/// Takes what the current write noted, in the order noted: from memory
/// (SQLite), or from the session's `change_notes` in one round trip
/// (PostgreSQL; the rows' deletion is part of the transaction, so a batch
/// rolled back after this leaves the table as empty as it found it).
fn take_notes(conn: &Conn, state: &State) -> crate::db::Result<Vec<Pending>> {
    match conn.dialect().engine {
        Engine::Sqlite => Ok(std::mem::take(
            &mut *state.notes.lock().unwrap_or_else(|p| p.into_inner()),
        )),
        Engine::Postgres => {
            let notes = take_postgres_notes(conn)?;
            state
                .taken_untidied
                .fetch_add(notes.len() as u64, std::sync::atomic::Ordering::Relaxed);
            Ok(notes)
        }
    }
}

/// PostgreSQL's part of [`take_notes`].
fn take_postgres_notes(conn: &Conn) -> crate::db::Result<Vec<Pending>> {
    conn.prepare_cached(
        "WITH taken AS (DELETE FROM pg_temp.change_notes \
         RETURNING n, tbl, key1, key2, op, old_status, new_status) \
         SELECT tbl, key1, key2, op, old_status, new_status FROM taken ORDER BY n",
    )?
    .query_map([], |row| {
        let table: String = row.get(0)?;
        let op: String = row.get(3)?;
        if table == MARKER {
            return Ok(Some(Pending {
                op: MARKER,
                ..Pending::unreadable(MARKER)
            }));
        }
        // Named as the hook names them (static names, no copy per note).
        let known = noted_tables().find(|t| *t == table);
        let op = ["c", "u", "d", "s"].into_iter().find(|o| *o == op);
        let (Some(table), Some(op)) = (known, op) else {
            // A table or step this build does not cover (another
            // build's trigger): nothing it renders, as before.
            return Ok(None);
        };
        Ok(Some(Pending {
            table,
            key1: row.get(1)?,
            key2: row.get(2)?,
            op,
            old_status: row.get(4)?,
            new_status: row.get(5)?,
            copy: None,
        }))
    })?
    .filter_map(Result::transpose)
    .collect()
}

/// One entry to append, rendered; its `seq` is given when it is appended.
struct NewEntry {
    event_type: String,
    rendered: Rendered,
    client: Option<String>,
    vendor: Option<String>,
}

/// Turns what the current write noted into change entries by `actor`; returns
/// the last sequence appended, if any. Runs in the write's transaction.
pub fn record(conn: &Conn, actor: &str, state: &State) -> ApiResult<Option<u64>> {
    record_as(conn, actor, state, false)
}

/// [`record`] for the writer: on PostgreSQL the entries are held back and
/// appended by [`append_held`] just before the batch's COMMIT, all of the
/// batch's in one statement instead of one per write (a round trip and
/// 0.06 ms of the backend's time less per write). Their numbers are taken
/// there, under the `change_log` row lock the transaction holds. On SQLite
/// they are appended at once.
pub fn hold(conn: &Conn, actor: &str, state: &State) -> ApiResult<Option<u64>> {
    record_as(conn, actor, state, true)
}

/// Appends the entries [`hold`] held back, in order; the last sequence
/// appended, if any.
pub fn append_held(conn: &Conn, state: &State) -> ApiResult<Option<u64>> {
    let rows = std::mem::take(&mut *state.held.lock().unwrap_or_else(|p| p.into_inner()));
    if rows.is_empty() {
        return Ok(None);
    }
    append_postgres(conn, rows)
}

/// Drops the entries held back: their transaction was rolled back.
pub fn drop_held(state: &State) {
    state.held.lock().unwrap_or_else(|p| p.into_inner()).clear();
    state
        .deferred
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clear();
}

/// A write whose change entries [`defer`] rendered from its offers, waiting
/// for its notes to confirm them.
struct Deferred {
    actor: String,
    /// When it was recorded (the entries' `occurred_at`).
    at: i64,
    /// Each offered row (its table and [`crate::db::offered::row_name`]),
    /// rendered, with its workspace's parties.
    rows: HashMap<(&'static str, String), Offered>,
}

/// A deferred write's offered row.
enum Offered {
    /// Rendered when the write was deferred, with its workspace's parties.
    Rendered(Rendered, Parties),
    /// To be rendered once the statements sent ahead are answered
    /// (`db::offered::offer_later`): at its confirmation.
    Later(FromOffer, Box<dyn std::any::Any + Send>),
}

/// [`hold`] without its round trip, for the writer's writes on PostgreSQL
/// that offered every row they changed through their stores
/// (`db::offered::set_aside`): their entries are rendered now from the
/// offers, and their notes are left in `change_notes` behind a marker sent
/// ahead, to be taken with a later write's ([`hold`]) or at the batch's end
/// ([`settle`]), and checked then. Until then what is kept of the offered
/// rows is forgotten now, as [`hold`] would. False when the write does not
/// qualify; nothing is taken then, and the writer holds it as before.
/// A write that ran no statement that may write (`wrote` false: a PUT
/// that changed nothing) noted nothing: there is nothing to take, now or
/// later.
///
/// The check ([`confirm`]) fails when the notes show any change the offers
/// do not: a row not offered, one changed twice, a delete. The writer then
/// runs the whole batch again with a savepoint and a notes take per write,
/// as after a write that failed after writing.
pub fn defer(conn: &Conn, actor: &str, wrote: bool, state: &State) -> ApiResult<bool> {
    if conn.dialect().engine != Engine::Postgres {
        return Ok(false);
    }
    if !wrote {
        crate::db::offered::clear();
        return Ok(true);
    }
    let source = |table: &str| {
        SOURCES
            .iter()
            .find(|s| s.table == table)
            .and_then(|s| s.offered.map(|offered| (s.table, offered)))
    };
    let Some(offers) = crate::db::offered::set_aside(|table| source(table).is_some()) else {
        return Ok(false);
    };
    let mut rows = HashMap::with_capacity(offers.len());
    for (table, key, offer, when) in offers {
        let Some((table, offered)) = source(table) else {
            continue;
        };
        // What the writer keeps of the row is no longer true (`db::kept`),
        // for the batch's next write.
        let key1 = key.split('/').next().unwrap_or_default();
        crate::db::kept::forget(table, key1);
        if table == crate::catalogs::store::TABLE {
            state.items.forget(key1);
        }
        if table == "workspaces" {
            state.tenants.forget(key1);
        }
        if when == crate::db::offered::Rendering::Later {
            rows.insert((table, key), Offered::Later(offered, offer));
            continue;
        }
        let rendered = offered(offer as Box<dyn std::any::Any>)?;
        let parties = match &rendered.workspace_id {
            Some(workspace) => state
                .tenants
                .get_or(workspace, || workspace_tenants(conn, workspace))?,
            None => (None, None),
        };
        rows.insert((table, key), Offered::Rendered(rendered, parties));
    }
    conn.prepare_cached(&format!(
        "INSERT INTO pg_temp.change_notes (tbl, op) VALUES ('{MARKER}', '{MARKER}')"
    ))?
    .execute_ahead([])?;
    state
        .deferred
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Deferred {
            actor: actor.to_string(),
            at: crate::clock::now_ms(),
            rows,
        });
    Ok(true)
}

/// How many deferred writes were confirmed so far.
pub fn confirmed(state: &State) -> u64 {
    state.confirmed.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether writes [`defer`]red wait for their notes.
pub fn deferring(state: &State) -> bool {
    !state
        .deferred
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_empty()
}

/// At the batch's end: takes the notes of the writes [`defer`]red and
/// [`confirm`]s them, in one round trip. An error (a check that failed,
/// or a statement sent ahead that failed) leaves the batch to be run again.
pub fn settle(conn: &Conn, state: &State) -> ApiResult<()> {
    if !deferring(state) {
        return Ok(());
    }
    let notes = take_notes(conn, state)?;
    if notes.last().is_some_and(|last| last.op != MARKER) {
        return Err(crate::error::ApiError::internal(
            "change log: changes noted after the batch's last write",
        ));
    }
    confirm(conn, state, notes, &[])
}

/// Checks the notes of the writes [`defer`]red (`notes`: theirs, each
/// write's ended by its marker) against what they offered, and holds
/// their entries, in write order. Each write's notes must name only rows it
/// offered, each created or updated once; its entries then follow its
/// notes' order, as [`record`]'s do.
///
/// `after`: the notes taken with them of the write that took them (none at
/// the batch's end). Builds with debug assertions (the test suite) also
/// read back every confirmed row that no later note names, as [`record`]
/// does for an offer, and fail the check if it differs: a row a later
/// write changed reads as that write left it. The read comes here, not
/// when the write is deferred, so that the tests wait where a release
/// build waits.
fn confirm(conn: &Conn, state: &State, notes: Vec<Pending>, after: &[Pending]) -> ApiResult<()> {
    let deferred = std::mem::take(&mut *state.deferred.lock().unwrap_or_else(|p| p.into_inner()));
    let doubt = |why: String| {
        Err(crate::error::ApiError::internal(format!(
            "change log: {why}"
        )))
    };
    let markers = notes.iter().filter(|note| note.op == MARKER).count();
    if markers != deferred.len() {
        return doubt(format!(
            "{markers} markers for {} deferred writes",
            deferred.len()
        ));
    }
    let writes = deferred.len() as u64;
    let groups: Vec<&[Pending]> = notes.split(|note| note.op == MARKER).collect();
    let mut held = Vec::new();
    for (at, mut write) in deferred.into_iter().enumerate() {
        let notes = groups.get(at).copied().unwrap_or_default();
        let later = || {
            (groups.iter().skip(at + 1))
                .flat_map(|group| group.iter())
                .chain(after)
        };
        let mut entries = Vec::with_capacity(notes.len());
        for note in notes {
            let op = match note.op {
                "c" => Net::Created,
                "u" => Net::Updated,
                other => {
                    return doubt(format!(
                        "a deferred write's note `{other}` on {}",
                        note.table
                    ));
                }
            };
            let key1 = note.key1.as_deref().unwrap_or_default();
            let name = match note.key2.as_deref() {
                Some(key2) => crate::db::offered::row_name(&[key1, key2]),
                None => key1.to_string(),
            };
            // Each row's offer serves one note: a second one is a change
            // after the offer.
            let found = match write.rows.remove(&(note.table, name)) {
                Some(Offered::Rendered(rendered, parties)) => Some((rendered, parties)),
                // Its statement's answer has been read with the notes.
                Some(Offered::Later(offered, offer)) => {
                    let rendered = offered(offer as Box<dyn std::any::Any>)?;
                    // A workspace's parties only as kept: a read now would
                    // see the writes after this one.
                    let parties = match &rendered.workspace_id {
                        Some(workspace) => match state.tenants.kept(workspace) {
                            Some(parties) => parties,
                            None => return doubt(format!("the parties of {workspace}")),
                        },
                        None => (None, None),
                    };
                    Some((rendered, parties))
                }
                None => None,
            };
            let Some((rendered, (client, vendor))) = found else {
                return doubt(format!(
                    "a deferred write changed {} {key1} without offering it",
                    note.table
                ));
            };
            let Some(source) = SOURCES.iter().find(|s| s.table == note.table) else {
                return doubt(format!("a deferred write's note on {}", note.table));
            };
            if cfg!(debug_assertions) {
                let items = crate::catalogs::store::TABLE;
                let changed_since = later().any(|later| {
                    (later.table == note.table
                        && later.key1 == note.key1
                        && later.key2 == note.key2)
                        || later.table == items
                });
                if !changed_since {
                    let engine = conn.dialect().engine;
                    let from = Tables {
                        table: live(engine, note.table),
                        blobs: live(engine, "blobs"),
                        items: &state.items,
                    };
                    let key: Vec<String> = [&note.key1, &note.key2]
                        .into_iter()
                        .flatten()
                        .cloned()
                        .collect();
                    same_as_stored(conn, source, &from, &key, &rendered)?;
                }
            }
            let verb = verb(
                source,
                op,
                note.old_status.as_deref(),
                note.new_status.as_deref(),
            );
            entries.push(NewEntry {
                event_type: format!("{}.{verb}", rendered.entity),
                rendered,
                client,
                vendor,
            });
        }
        held.extend(postgres_rows(&write.actor, write.at, entries));
    }
    state
        .held
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(held);
    state
        .confirmed
        .fetch_add(writes, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

fn record_as(conn: &Conn, actor: &str, state: &State, hold: bool) -> ApiResult<Option<u64>> {
    // Whatever the write offered is dropped when this returns, on every path.
    struct DropOffers;
    impl Drop for DropOffers {
        fn drop(&mut self) {
            crate::db::offered::clear();
        }
    }
    let _offers = DropOffers;
    let mut pending = take_notes(conn, state)?;
    // The deferred writes' notes come first, each ended by its marker: their
    // entries go before this write's.
    if deferring(state) {
        let own = match pending.iter().rposition(|p| p.op == MARKER) {
            Some(last) => pending.split_off(last + 1),
            None => std::mem::take(&mut pending),
        };
        confirm(conn, state, pending, &own)?;
        pending = own;
    }
    if pending.is_empty() {
        return Ok(None);
    }
    let engine = conn.dialect().engine;
    if let Some(note) = pending.iter().find(|p| p.op == UNREADABLE) {
        return Err(crate::error::ApiError::internal(format!(
            "change log: a changed row of {} could not be read",
            note.table
        )));
    }
    copy_deleted(conn, state, &pending)?;
    if engine == Engine::Postgres {
        // The notes come after the fact: what the write offered stands only
        // where they say it still holds.
        let noted: Vec<(&'static str, [&str; 2], usize)> = pending
            .iter()
            .filter_map(|p| {
                let key1 = p.key1.as_deref()?;
                Some(match p.key2.as_deref() {
                    Some(key2) => (p.table, [key1, key2], 2),
                    None => (p.table, [key1, ""], 1),
                })
            })
            .collect();
        crate::db::offered::settle(noted.iter().map(|(table, key, n)| (*table, &key[..*n])));
    }
    // One entry per record, in the order the write first touched them, with
    // the net effect of all it did to the record.
    let mut net = NetEffects::default();
    let mut deletes = false;
    for p in pending {
        // What the writer keeps of the row is no longer true (`db::kept`).
        if let Some(id) = &p.key1 {
            crate::db::kept::forget(p.table, id);
        }
        let op = match p.op {
            "c" => Net::Created,
            "u" => Net::Updated,
            "d" => Net::Deleted,
            // A shadowed table's delete: no entry, but its copy is cleared below.
            _ => {
                deletes = true;
                continue;
            }
        };
        deletes |= op == Net::Deleted;
        if p.table == crate::catalogs::store::TABLE
            && let Some(id) = &p.key1
        {
            state.items.forget(id);
        }
        let mut key = Vec::with_capacity(2);
        key.push(p.key1.unwrap_or_default());
        if let Some(k2) = p.key2 {
            key.push(k2);
        }
        net.note((p.table, key), op, p.old_status, p.new_status);
    }
    // Where renders read: made only for a record read back.
    let blobs = || {
        if deletes {
            format!(
                "(SELECT id, size, sha256 FROM {} UNION ALL \
                 SELECT id, size, sha256 FROM {})",
                live(engine, "blobs"),
                gone(engine, "blobs")
            )
        } else {
            live(engine, "blobs")
        }
    };
    let tenants = &state.tenants;
    let items = &state.items;
    let mut entries = Vec::new();
    for (id, (state, old_status, new_status)) in net.rows {
        let Some(state) = state else {
            continue;
        };
        let (table, key) = id;
        let Some(source) = SOURCES.iter().find(|s| s.table == table) else {
            continue;
        };
        let from = || Tables {
            table: match state {
                Net::Deleted => newest_gone(engine, table),
                _ => live(engine, table),
            },
            blobs: blobs(),
            items,
        };
        if state == Net::Deleted && engine == Engine::Sqlite && still_there(conn, source, &key)? {
            // SQLite's hook runs before a row is deleted and keeps its copy
            // outside the statement: a delete whose statement then failed
            // (a foreign key) left its note. A write that goes on after such
            // a failure deleted nothing.
            continue;
        }
        let offered = match (state, source.offered) {
            (Net::Created | Net::Updated, Some(shown)) => {
                let key: Vec<&str> = key.iter().map(String::as_str).collect();
                crate::db::offered::take(source.table, &key).map(shown)
            }
            _ => None,
        };
        let rendered = match offered {
            Some(rendered) => {
                let rendered = rendered?;
                if cfg!(debug_assertions) {
                    same_as_stored(conn, source, &from(), &key, &rendered)?;
                }
                rendered
            }
            None => match (source.render)(conn, &from(), &key)? {
                Some(rendered) => rendered,
                None => {
                    log::warn!("change log: {table} {key:?} changed but cannot be read back");
                    continue;
                }
            },
        };
        let verb = verb(source, state, old_status.as_deref(), new_status.as_deref());
        if table == "workspaces" {
            // The workspace itself changed: its parties may have too.
            tenants.forget(&key[0]);
        }
        let (client, vendor) = match &rendered.workspace_id {
            Some(workspace) => tenants.get_or(workspace, || workspace_tenants(conn, workspace))?,
            None => (None, None),
        };
        if state == Net::Deleted && table == "workspaces" {
            tenants.forget(&key[0]);
        }
        let mut event_type = String::with_capacity(rendered.entity.len() + 1 + verb.len());
        event_type.push_str(rendered.entity);
        event_type.push('.');
        event_type.push_str(verb);
        entries.push(NewEntry {
            event_type,
            rendered,
            client,
            vendor,
        });
    }
    // Held back (the writer on PostgreSQL) or appended now.
    let (held, last) = if hold && engine == Engine::Postgres {
        (postgres_rows(actor, crate::clock::now_ms(), entries), None)
    } else {
        (Vec::new(), append(conn, actor, entries)?)
    };
    if deletes {
        let tables = noted_tables();
        match engine {
            Engine::Sqlite => {
                for table in tables {
                    conn.execute(&format!("DELETE FROM {}", gone(engine, table)), [])?;
                }
            }
            // One round trip for all of them.
            Engine::Postgres => {
                conn.execute_batch(
                    &tables
                        .map(|table| format!("DELETE FROM {};", gone(engine, table)))
                        .collect::<String>(),
                )?;
                state
                    .gone_untidied
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
    // Only now that nothing of the record can fail: a write whose record
    // failed is rolled back, and must leave nothing held back.
    state
        .held
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(held);
    Ok(last)
}

/// Checks a write's offered rendering of a record against the record read
/// back (builds with debug assertions: the test suite runs every offer
/// through it); a difference fails the write.
fn same_as_stored(
    conn: &Conn,
    source: &Source,
    from: &Tables<'_>,
    key: &[String],
    offered: &Rendered,
) -> ApiResult<()> {
    let stored = (source.render)(conn, from, key)?;
    match stored {
        Some(stored) if stored == *offered => Ok(()),
        stored => Err(crate::error::ApiError::internal(format!(
            "change log: the write's own rendering of {} {key:?} is not the stored record: \
             offered {}, stored {}",
            source.table,
            offered.record,
            stored.map_or("nothing".to_string(), |s| s.record)
        ))),
    }
}

/// Appends `entries` to the log, in order; the last sequence appended, if
/// any.
fn append(conn: &Conn, actor: &str, entries: Vec<NewEntry>) -> ApiResult<Option<u64>> {
    if entries.is_empty() {
        return Ok(None);
    }
    let now = crate::clock::now_ms();
    match conn.dialect().engine {
        Engine::Sqlite => append_sqlite(conn, actor, now, entries),
        Engine::Postgres => append_postgres(conn, postgres_rows(actor, now, entries)),
    }
}

/// SQLite assigns each `seq` (the rowid: one writer, so commit order).
fn append_sqlite(
    conn: &Conn,
    actor: &str,
    now: i64,
    entries: Vec<NewEntry>,
) -> ApiResult<Option<u64>> {
    let mut last = None;
    for entry in entries {
        let NewEntry {
            event_type,
            rendered,
            client,
            vendor,
        } = entry;
        conn.prepare_cached(
            "INSERT INTO changes (event_id, type, entity_type, entity_id, feed, workspace_id, \
             client_tenant, vendor_tenant, actor, occurred_at, record) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?
        .execute(params![
            &*uuid::Uuid::now_v7()
                .hyphenated()
                .encode_lower(&mut uuid::Uuid::encode_buffer()),
            event_type,
            rendered.entity_type,
            rendered.entity_id,
            rendered.feed.key(),
            rendered.workspace_id,
            client,
            vendor,
            actor,
            now,
            rendered.record,
        ])?;
        last = Some(conn.last_insert_rowid() as u64);
    }
    Ok(last)
}

/// The rows of [`append_postgres`]'s statement: one JSON object per entry.
fn postgres_rows(actor: &str, now: i64, entries: Vec<NewEntry>) -> Vec<serde_json::Value> {
    entries
        .into_iter()
        .map(|entry| {
            serde_json::json!({
                "event_id": uuid::Uuid::now_v7().to_string(),
                "type": entry.event_type,
                "entity_type": entry.rendered.entity_type,
                "entity_id": entry.rendered.entity_id,
                "feed": entry.rendered.feed.key(),
                "workspace_id": entry.rendered.workspace_id,
                "client_tenant": entry.client,
                "vendor_tenant": entry.vendor,
                "actor": actor,
                "occurred_at": now,
                "record": entry.rendered.record,
            })
        })
        .collect()
}

/// PostgreSQL: `seq` follows `change_log.head`, which the same statement
/// moves past the entries. The writer's transaction holds that row's lock
/// from its first statement (docs/design/postgresql.md 3.4), so the numbers
/// are dense and in commit order across processes. One round trip for all
/// the entries, whatever their number (a write's, or a whole batch's held
/// back by [`hold`]): they go as one JSON array, one object each, read back
/// by `json_to_recordset` (one statement text). In the writer's transaction,
/// whose `BEGIN` read the head, the statement needs no answer and is sent
/// ahead (`Conn::head_at_begin`): no round trip of its own.
fn append_postgres(conn: &Conn, mut rows: Vec<serde_json::Value>) -> ApiResult<Option<u64>> {
    let count = rows.len() as i64;
    for (i, row) in rows.iter_mut().enumerate() {
        if let serde_json::Value::Object(row) = row {
            row.insert("i".to_string(), serde_json::Value::from(i as i64 + 1));
        }
    }
    let rows = serde_json::Value::Array(rows).to_string();
    // The one INSERT, numbering the entries with `seq`: sent ahead, or
    // answering how many it appended and the last number.
    static TEXTS: std::sync::OnceLock<[String; 2]> = std::sync::OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        let insert = |seq: &str| {
            format!(
                "INSERT INTO changes (seq, event_id, type, entity_type, entity_id, feed, \
                 workspace_id, client_tenant, vendor_tenant, actor, occurred_at, record) \
                 SELECT {seq}, e.event_id, e.type, e.entity_type, e.entity_id, e.feed, \
                 e.workspace_id, e.client_tenant, e.vendor_tenant, e.actor, e.occurred_at, e.record \
                 FROM moved, json_to_recordset(?1::json) AS e(i bigint, event_id text, type text, \
                 entity_type text, entity_id text, feed text, workspace_id text, \
                 client_tenant text, vendor_tenant text, actor text, occurred_at bigint, record text)"
            )
        };
        let moved = "WITH moved AS (UPDATE change_log SET head = head + ?2::bigint WHERE id = 1 \
                     RETURNING head)";
        [
            format!(
                "{moved} {}",
                insert("CASE WHEN moved.head = ?3::bigint THEN moved.head - ?2 + e.i END")
            ),
            format!(
                "{moved}, appended AS ({} RETURNING seq) SELECT count(*), max(seq) FROM appended",
                insert("moved.head - ?2 + e.i")
            ),
        ]
    });
    if let Some(head) = conn.head_at_begin() {
        // The numbers are known: the statement is sent ahead, to travel with
        // the COMMIT. Should the head have moved otherwise than this
        // transaction moved it (it cannot, under the lock), the entries get
        // no number, which `seq`'s NOT NULL refuses: the batch fails rather
        // than number them wrong.
        let last = head + count as u64;
        conn.prepare_cached(&texts[0])?
            .execute_ahead(params![rows, count, last as i64])?;
        conn.moved_head(last);
        return Ok(Some(last));
    }
    let (appended, last): (i64, Option<i64>) = conn
        .prepare_cached(&texts[1])?
        .query_row(params![rows, count], |row| Ok((row.get(0)?, row.get(1)?)))?;
    if appended != count {
        return Err(crate::error::ApiError::internal(format!(
            "change log: {count} entries to append, {appended} appended (is the change_log row there?)"
        )));
    }
    Ok(last.map(|seq| seq as u64))
}

/// The last sequence committed: the largest `seq` (SQLite), or
/// `change_log.head` (PostgreSQL: moved with the entries, under the lock).
pub fn head(conn: &Conn) -> crate::db::Result<u64> {
    match conn.dialect().engine {
        Engine::Sqlite => super::head(conn),
        Engine::Postgres => {
            let head: i64 = conn
                .prepare_cached("SELECT head FROM change_log WHERE id = 1")?
                .query_row([], |row| row.get(0))?;
            Ok(head as u64)
        }
    }
}

/// The event verb of a net change.
fn verb(source: &Source, state: Net, old: Option<&str>, new: Option<&str>) -> &'static str {
    match state {
        Net::Created => "created",
        Net::Deleted => "deleted",
        Net::Updated => match source.status {
            Some((_, inactive)) if old != new && new == Some(inactive) => "deactivated",
            Some((_, inactive)) if old != new && old == Some(inactive) => "activated",
            _ => "updated",
        },
    }
}

/// The tenants of a workspace's member parties (`Workspace::members`): who
/// may read its records. A workspace deleted in this write is read from its
/// copy.
fn workspace_tenants(conn: &Conn, workspace: &str) -> crate::db::Result<Parties> {
    use crate::workspaces::store::get_from;
    let engine = conn.dialect().engine;
    let found = match get_from(conn, &live(engine, "workspaces"), workspace)? {
        Some(found) => Some(found),
        None => get_from(conn, &gone(engine, "workspaces"), workspace)?,
    };
    Ok(found.map_or((None, None), |ws| {
        let (client, vendor) = ws.members();
        (client.map(String::from), vendor.map(String::from))
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{Net, NetEffects};

    /// The net effects are the same whether the rows are looked up along the
    /// list or by the index a write of many rows builds, and keep the order
    /// of first touch.
    #[test]
    fn net_effects_keep_first_touch_order_and_fold_changes_at_any_size() {
        for rows in [
            3,
            NetEffects::LOOKED_ALONG,
            NetEffects::LOOKED_ALONG + 1,
            100,
        ] {
            let mut net = NetEffects::default();
            let key = |i: usize| ("documents", vec![format!("d{i}")]);
            for i in 0..rows {
                net.note(key(i), Net::Created, None, None);
            }
            // Then each row again: updated, deleted, or updated then deleted.
            for i in (0..rows).rev() {
                let status = Some(format!("s{i}"));
                match i % 3 {
                    0 => net.note(key(i), Net::Updated, None, status),
                    1 => net.note(key(i), Net::Deleted, None, None),
                    _ => {
                        net.note(key(i), Net::Updated, None, status);
                        net.note(key(i), Net::Deleted, None, None);
                    }
                }
            }
            net.note(
                ("locations", vec!["ports".into(), "X".into()]),
                Net::Updated,
                None,
                None,
            );
            assert_eq!(net.rows.len(), rows + 1, "{rows} rows");
            for (i, ((table, id), (state, _, new_status))) in net.rows.iter().enumerate() {
                if i == rows {
                    assert_eq!((*table, *state), ("locations", Some(Net::Updated)));
                    continue;
                }
                assert_eq!(
                    id,
                    &vec![format!("d{i}")],
                    "{rows} rows: order of first touch"
                );
                let expected = match i % 3 {
                    0 => (Some(Net::Created), Some(format!("s{i}"))),
                    // Made and removed within one write: nothing happened.
                    _ => (None, None),
                };
                assert_eq!(
                    (*state, new_status.clone()),
                    expected,
                    "{rows} rows, row {i}"
                );
            }
        }
    }

    use crate::db::Conn;

    use crate::db::Db;
    use crate::error::ApiError;

    fn open() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(
            &dir.path().join("capture.db"),
            2,
            None,
            Arc::new(crate::changes::Capture::default()),
        )
        .unwrap();
        (dir, db)
    }

    fn org(conn: &Conn, id: &str, name: &str) -> crate::db::Result<usize> {
        conn.execute(
            "INSERT INTO organizations (id, name, name_folded, audience, created_at, updated_at) \
             VALUES (?1, ?2, lower(?2), 't', 1, 1)",
            [id, name],
        )
    }

    async fn log(db: &Db) -> Vec<(String, String, String, String)> {
        db.read(|conn, _| {
            Ok(conn
                .prepare("SELECT type, entity_id, actor, record FROM changes ORDER BY seq")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<Result<_, _>>()?)
        })
        .await
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_entry_per_record_with_the_net_effect_of_the_write() {
        let (_dir, db) = open();
        let actor: Arc<str> = Arc::from("alice");
        // Created and renamed in one write: one `created`, as it ended.
        db.write_as(actor.clone(), |conn| {
            org(conn, "a", "First")?;
            conn.execute(
                "UPDATE organizations SET name = 'Renamed' WHERE id = 'a'",
                [],
            )?;
            // Created and removed in the same write: nothing happened.
            org(conn, "b", "Fleeting")?;
            conn.execute("DELETE FROM organizations WHERE id = 'b'", [])?;
            Ok(())
        })
        .await
        .unwrap();
        // A write that fails leaves no entry.
        let failed = db
            .write_as(actor.clone(), |conn| {
                org(conn, "c", "Refused")?;
                Err::<(), _>(ApiError::conflict("test", "refused"))
            })
            .await;
        assert!(failed.is_err());
        // A delete carries the record as it last was.
        db.write_as(actor.clone(), |conn| {
            conn.execute("DELETE FROM organizations WHERE id = 'a'", [])?;
            Ok(())
        })
        .await
        .unwrap();
        let entries = log(&db).await;
        let summary: Vec<(&str, &str, &str)> = entries
            .iter()
            .map(|(t, id, actor, _)| (t.as_str(), id.as_str(), actor.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                ("organization.created", "a", "alice"),
                ("organization.deleted", "a", "alice")
            ]
        );
        for (_, _, _, record) in &entries {
            let record: serde_json::Value = serde_json::from_str(record).unwrap();
            assert_eq!(record["body"]["name"], "Renamed");
            assert_eq!(record["type"], "svc.hub.organization");
        }
        assert_eq!(*db.changes_head().borrow(), 2);
        db.close().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_delete_whose_statement_failed_records_nothing_when_the_write_goes_on() {
        let (_dir, db) = open();
        let actor: Arc<str> = Arc::from("alice");
        db.write_as(actor.clone(), |conn| {
            org(conn, "x", "Kept")?;
            conn.execute(
                "INSERT INTO workspaces (id, client_id, created_at, updated_at) \
                 VALUES ('w', 'x', 1, 1)",
                [],
            )?;
            Ok(())
        })
        .await
        .unwrap();
        // The workspace refers to the organization: its DELETE fails on the
        // foreign key after SQLite's hook saw the row go; the write goes on.
        db.write_as(actor.clone(), |conn| {
            let refused = conn.execute("DELETE FROM organizations WHERE id = 'x'", []);
            assert!(refused.is_err(), "the foreign key refuses the delete");
            org(conn, "y", "Another")?;
            Ok(())
        })
        .await
        .unwrap();
        let types: Vec<String> = log(&db).await.into_iter().map(|(t, ..)| t).collect();
        assert_eq!(
            types,
            [
                "organization.created",
                "workspace.created",
                "organization.created"
            ]
        );
        db.close().unwrap();
    }
}
