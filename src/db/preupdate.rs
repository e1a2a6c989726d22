//! SQLite's pre-update hook: a callback run just before each row a statement
//! of one connection inserts, updates or deletes, able to read the row's
//! values before and after. The change log notes a data file's changes with
//! it (`changes::capture`).
//!
//! Why a hook rather than triggers: a trigger makes every statement on its
//! table one that may write several rows, and SQLite runs such a statement,
//! when it may fail midway (a constraint, a function), with a statement
//! journal so that it can undo what it wrote; that journal copies each page
//! the statement touches. A document's `INSERT` touches its table and a
//! dozen index pages; with TEMP triggers on the covered tables those copies
//! were about a fifth of the writer's time in a bulk certificate (decision 18
//! in docs/api.md has the figures). A hook adds no statement journal.
//!
//! SQLite has the hook only when compiled with `SQLITE_ENABLE_PREUPDATE_HOOK`.
//! `.cargo/config.toml` hands that flag to the bundled build
//! (`LIBSQLITE3_FLAGS`), and the four functions are declared here: rusqlite's
//! own `preupdate_hook` feature would regenerate all of SQLite's bindings with
//! bindgen and libclang at build time. A build that does not get the flag
//! (cargo run from outside the repository, or `LIBSQLITE3_FLAGS` already set
//! in the environment without it) fails to link rather than running without
//! the hook.
//!
//! A hook gets no access to its connection and must run no SQL on it: SQLite
//! would call it again from within, and it would then read the inner row's
//! values.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::panic::AssertUnwindSafe;

use rusqlite::ffi;

use super::conn::Value;
use super::stamp::Tables;

unsafe extern "C" {
    fn sqlite3_preupdate_hook(
        db: *mut ffi::sqlite3,
        callback: Option<Callback>,
        arg: *mut c_void,
    ) -> *mut c_void;
    fn sqlite3_preupdate_old(
        db: *mut ffi::sqlite3,
        n: c_int,
        out: *mut *mut ffi::sqlite3_value,
    ) -> c_int;
    fn sqlite3_preupdate_new(
        db: *mut ffi::sqlite3,
        n: c_int,
        out: *mut *mut ffi::sqlite3_value,
    ) -> c_int;
    fn sqlite3_preupdate_count(db: *mut ffi::sqlite3) -> c_int;
}

type Callback = unsafe extern "C" fn(
    arg: *mut c_void,
    db: *mut ffi::sqlite3,
    op: c_int,
    schema: *const c_char,
    table: *const c_char,
    old_rowid: i64,
    new_rowid: i64,
);

/// What is about to happen to a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOp {
    Insert,
    Update,
    Delete,
}

/// One row about to change, as the hook sees it.
pub struct RowChange<'a> {
    db: *mut ffi::sqlite3,
    pub op: RowOp,
    /// The table, in the main database.
    pub table: &'a str,
}

impl RowChange<'_> {
    /// The row's columns (the table's, in their declared order).
    pub fn columns(&self) -> usize {
        // SAFETY: only called within the hook, on the connection it was given.
        unsafe { sqlite3_preupdate_count(self.db) }.max(0) as usize
    }

    /// Column `i` before the change (an update or a delete); `None` for an
    /// insert, or a column that cannot be read.
    pub fn before(&self, i: usize) -> Option<Value> {
        if self.op == RowOp::Insert || i >= self.columns() {
            return None;
        }
        // SAFETY: within the hook, a column index in range, an update or a delete.
        unsafe { read(|out| sqlite3_preupdate_old(self.db, i as c_int, out)) }
    }

    /// Column `i` after the change (an insert or an update); `None` for a
    /// delete, or a column that cannot be read.
    pub fn after(&self, i: usize) -> Option<Value> {
        if self.op == RowOp::Delete || i >= self.columns() {
            return None;
        }
        // SAFETY: within the hook, a column index in range, an insert or an update.
        unsafe { read(|out| sqlite3_preupdate_new(self.db, i as c_int, out)) }
    }
}

/// Copies the value one of SQLite's `sqlite3_preupdate_*` calls hands over
/// (valid only until the hook returns).
unsafe fn read(get: impl FnOnce(*mut *mut ffi::sqlite3_value) -> c_int) -> Option<Value> {
    let mut value: *mut ffi::sqlite3_value = std::ptr::null_mut();
    if get(&mut value) != ffi::SQLITE_OK || value.is_null() {
        return None;
    }
    // SAFETY: a protected value SQLite just handed over; text and blob
    // pointers are read before their length, as SQLite documents.
    unsafe {
        Some(match ffi::sqlite3_value_type(value) {
            ffi::SQLITE_INTEGER => Value::Integer(ffi::sqlite3_value_int64(value)),
            ffi::SQLITE_FLOAT => Value::Real(ffi::sqlite3_value_double(value)),
            ffi::SQLITE_TEXT => {
                let text = ffi::sqlite3_value_text(value);
                if text.is_null() {
                    return None;
                }
                let len = ffi::sqlite3_value_bytes(value).max(0) as usize;
                let bytes = std::slice::from_raw_parts(text, len);
                Value::Text(String::from_utf8_lossy(bytes).into_owned())
            }
            ffi::SQLITE_BLOB => {
                let blob = ffi::sqlite3_value_blob(value) as *const u8;
                let len = ffi::sqlite3_value_bytes(value).max(0) as usize;
                if blob.is_null() || len == 0 {
                    Value::Blob(Vec::new())
                } else {
                    Value::Blob(std::slice::from_raw_parts(blob, len).to_vec())
                }
            }
            _ => Value::Null,
        })
    }
}

/// The hook as kept by SQLite.
type Hook = Box<dyn FnMut(&RowChange<'_>) + Send>;

/// The name the hook is kept under as the connection's client data, which
/// frees it when the connection closes or another hook replaces it.
const KEPT_AS: &CStr = c"quayside.preupdate";

/// Runs `hook` just before each row a statement of `conn` inserts, updates or
/// deletes in a table of the main database (not `temp`, not attached ones);
/// replaces a hook set before. A panic in `hook` is caught and logged (a hook
/// that must not lose a row catches its own). Fails only when SQLite cannot
/// keep the hook (out of memory); nothing is set then.
pub(super) fn set(conn: &rusqlite::Connection, hook: Hook) -> rusqlite::Result<()> {
    // A new hook withdraws offers only once it says so.
    mark(conn, std::ptr::null_mut())?;
    let arg = Box::into_raw(Box::new(hook));
    // SAFETY: `arg` is kept as the connection's client data first, which
    // frees it when the connection closes or a later `set` replaces it. If
    // SQLite cannot keep it, it has freed it already and the hook is not set.
    // Otherwise the hook takes its place at once: nothing runs between the
    // two calls (the connection is not shared across threads), and a hook
    // replaced as client data was replaced as the hook in the same call, so
    // SQLite never calls a freed hook.
    unsafe {
        let db = conn.handle();
        checked(ffi::sqlite3_set_clientdata(
            db,
            KEPT_AS.as_ptr(),
            arg.cast(),
            Some(free),
        ))?;
        sqlite3_preupdate_hook(db, Some(call), arg.cast());
    }
    Ok(())
}

/// The name of the mark [`withdraw_offers`] sets as the connection's client
/// data (a pointer to a static, never freed).
const WITHDRAWS_OFFERS: &CStr = c"quayside.withdraws-offers";

/// The mark's target: any address that is not null.
static MARK: u8 = 1;

/// Marks `conn`'s hook as one that withdraws `db::offered` offers of every
/// row it sees change (the change log's capture does). A hook set later
/// clears the mark ([`set`]).
pub(super) fn withdraw_offers(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    mark(conn, (&raw const MARK).cast_mut().cast())
}

/// Whether `conn`'s hook withdraws offers ([`withdraw_offers`]).
pub(super) fn withdraws_offers(conn: &rusqlite::Connection) -> bool {
    // SAFETY: reads the pointer kept as client data, without using it.
    unsafe { !ffi::sqlite3_get_clientdata(conn.handle(), WITHDRAWS_OFFERS.as_ptr()).is_null() }
}

fn mark(conn: &rusqlite::Connection, to: *mut c_void) -> rusqlite::Result<()> {
    // SAFETY: a pointer to a static (or null), with no destructor: SQLite
    // only keeps it.
    checked(unsafe {
        ffi::sqlite3_set_clientdata(conn.handle(), WITHDRAWS_OFFERS.as_ptr(), to, None)
    })
}

/// A result code of SQLite's as a result (only `SQLITE_OK` succeeds).
fn checked(code: c_int) -> rusqlite::Result<()> {
    if code == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rusqlite::Error::SqliteFailure(ffi::Error::new(code), None))
    }
}

unsafe extern "C" fn free(arg: *mut c_void) {
    // SAFETY: a pointer `set` made with `Box::into_raw`, freed once.
    drop(unsafe { Box::from_raw(arg as *mut Hook) });
}

thread_local! {
    /// The groups of tables the caches watch (`stamp::Tables`) of which a
    /// statement of a connection with a hook ([`set`]), run on this thread,
    /// changed a row since [`take_changed`] was last called here.
    static CHANGED: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// The watched groups of tables (`stamp::Tables::of`) of which a row was
/// changed on this thread, by a statement of a connection with a hook,
/// since the last call, with the ids of the documents changed (`None`:
/// more than [`DOCUMENTS_NOTED`], or one that could not be read); starts
/// over.
pub(super) fn take_changed() -> (Tables, Option<Vec<String>>) {
    let tables = Tables::from_bits(CHANGED.with(|changed| changed.replace(0)));
    let documents = DOCUMENTS.with(|ids| ids.replace(Some(Vec::new())));
    (tables, documents)
}

/// The most document ids noted between two [`take_changed`]: a batch that
/// changed more (about 130 certificates of 30 results) ends every kept document.
const DOCUMENTS_NOTED: usize = 4096;

thread_local! {
    /// The ids of the documents changed since [`take_changed`], as
    /// [`CHANGED`] notes their group.
    static DOCUMENTS: std::cell::RefCell<Option<Vec<String>>> =
        const { std::cell::RefCell::new(Some(Vec::new())) };
}

/// Notes the id of the document `change` changes: its first column (the
/// table's key, `schema.sql`), before an update or a delete, after an insert.
fn note_document(change: &RowChange<'_>) {
    let id = match change.op {
        RowOp::Insert => change.after(0),
        RowOp::Update | RowOp::Delete => change.before(0),
    };
    DOCUMENTS.with(|ids| {
        let mut ids = ids.borrow_mut();
        match (ids.as_mut(), id) {
            (Some(noted), Some(Value::Text(id))) if noted.len() < DOCUMENTS_NOTED => noted.push(id),
            _ => *ids = None,
        }
    });
}

/// Whether `conn` has a hook ([`set`]): then every row it changes in the
/// main database is seen, by its hook and [`take_changed`].
pub(super) fn hooked(conn: &rusqlite::Connection) -> bool {
    // SAFETY: reads the pointer kept as client data, without using it.
    unsafe { !ffi::sqlite3_get_clientdata(conn.handle(), KEPT_AS.as_ptr()).is_null() }
}

unsafe extern "C" fn call(
    arg: *mut c_void,
    db: *mut ffi::sqlite3,
    op: c_int,
    schema: *const c_char,
    table: *const c_char,
    _old_rowid: i64,
    _new_rowid: i64,
) {
    // SAFETY: the names are NUL-terminated strings SQLite owns for the
    // duration of the call.
    let (schema, table) = unsafe { (CStr::from_ptr(schema), CStr::from_ptr(table)) };
    if schema.to_bytes() != b"main" {
        return;
    }
    let watched = Tables::of(table.to_bytes());
    if watched != Tables::NONE {
        CHANGED.with(|changed| changed.set(changed.get() | watched.bits()));
    }
    // SAFETY: `arg` is the live hook `set` registered, called once at a time
    // (a hook runs no SQL on its connection, so it is not entered again).
    let hook = unsafe { &mut *(arg as *mut Hook) };
    let op = match op {
        ffi::SQLITE_INSERT => RowOp::Insert,
        ffi::SQLITE_UPDATE => RowOp::Update,
        ffi::SQLITE_DELETE => RowOp::Delete,
        _ => return,
    };
    let Ok(table) = table.to_str() else {
        return;
    };
    let change = RowChange { db, op, table };
    if watched.meets(Tables::DOCUMENTS) {
        note_document(&change);
    }
    if std::panic::catch_unwind(AssertUnwindSafe(|| hook(&change))).is_err() {
        log::error!("the row-change hook panicked on a change of {table}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    type Seen = Arc<Mutex<Vec<(RowOp, String, Vec<Option<Value>>, Vec<Option<Value>>)>>>;

    fn watched() -> (rusqlite::Connection, Seen) {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, x REAL, b BLOB);
             CREATE TABLE w (a TEXT, k TEXT, v TEXT, PRIMARY KEY (k, a)) WITHOUT ROWID;
             CREATE TEMP TABLE scratch (z);",
        )
        .unwrap();
        let seen: Seen = Arc::default();
        let kept = seen.clone();
        set(
            &conn,
            Box::new(move |change| {
                let all = |f: &dyn Fn(usize) -> Option<Value>| {
                    (0..change.columns()).map(f).collect::<Vec<_>>()
                };
                let old = all(&|i| change.before(i));
                let new = all(&|i| change.after(i));
                kept.lock()
                    .unwrap()
                    .push((change.op, change.table.to_string(), old, new));
            }),
        )
        .unwrap();
        (conn, seen)
    }

    #[test]
    fn the_hook_sees_each_row_of_the_main_database_before_and_after_in_declared_column_order() {
        let (conn, seen) = watched();
        conn.execute_batch(
            "INSERT INTO t VALUES ('a', 1, 1.5, x'00ff');
             UPDATE t SET n = 2 WHERE id = 'a';
             INSERT INTO w VALUES ('first', 'key', 'value');
             UPDATE w SET v = 'changed' WHERE k = 'key';
             DELETE FROM w;
             DELETE FROM t;
             INSERT INTO scratch VALUES (1);",
        )
        .unwrap();
        let seen = seen.lock().unwrap();
        let text = |s: &str| Some(Value::Text(s.into()));
        assert_eq!(
            seen.len(),
            6,
            "the temp table's insert is not seen: {seen:?}"
        );
        assert_eq!(seen[0].0, RowOp::Insert);
        assert_eq!(
            seen[0].3,
            vec![
                text("a"),
                Some(Value::Integer(1)),
                Some(Value::Real(1.5)),
                Some(Value::Blob(vec![0, 255]))
            ]
        );
        assert_eq!(seen[0].2, vec![None, None, None, None]);
        assert_eq!(
            (seen[1].0, seen[1].2[1].clone()),
            (RowOp::Update, Some(Value::Integer(1)))
        );
        assert_eq!(seen[1].3[1], Some(Value::Integer(2)));
        // A WITHOUT ROWID table: columns in declared order, not key order.
        assert_eq!((seen[2].0, seen[2].1.as_str()), (RowOp::Insert, "w"));
        assert_eq!(seen[2].3, vec![text("first"), text("key"), text("value")]);
        assert_eq!(seen[3].0, RowOp::Update);
        assert_eq!(seen[3].2, vec![text("first"), text("key"), text("value")]);
        assert_eq!(seen[3].3, vec![text("first"), text("key"), text("changed")]);
        assert_eq!(seen[4].0, RowOp::Delete);
        assert_eq!(seen[4].2, vec![text("first"), text("key"), text("changed")]);
        assert_eq!(seen[4].3, vec![None, None, None]);
        assert_eq!(
            (seen[5].0, seen[5].2[0].clone()),
            (RowOp::Delete, text("a"))
        );
    }

    #[test]
    fn a_hook_set_again_replaces_the_first_and_a_closed_connection_frees_it() {
        let (conn, first) = watched();
        let second: Arc<Mutex<usize>> = Arc::default();
        let counted = second.clone();
        set(&conn, Box::new(move |_| *counted.lock().unwrap() += 1)).unwrap();
        conn.execute("INSERT INTO t (id) VALUES ('b')", []).unwrap();
        assert!(first.lock().unwrap().is_empty());
        assert_eq!(*second.lock().unwrap(), 1);
        // The first hook was freed when replaced, the second with the connection.
        assert_eq!(Arc::strong_count(&first), 1);
        drop(conn);
        assert_eq!(Arc::strong_count(&second), 1);
    }
}
