//! The seam between the service and its storage engine.
//!
//! Every store module, route and background task talks to the database through
//! [`Conn`]: statements ([`Statement`]), rows ([`Row`]), parameters
//! ([`params!`](crate::db::params)) and one error type ([`Error`]). None of them
//! names the engine's crate; only `src/db/` does (an invariant test checks it).
//! Today the one engine is SQLite and every call goes straight through to
//! rusqlite (a `Conn` is a borrowed connection, nothing is copied); the enum
//! leaves room for a second engine without a second copy of the stores.
//!
//! Values cross the seam as SQLite's five storage classes ([`Value`],
//! [`ValueRef`]), converted by [`ToSql`] and [`FromSql`]: the model every
//! engine's values map onto (integers, reals, text, blobs, NULL).

use std::fmt;

/// What can be bound as a parameter.
pub use rusqlite::ToSql;
pub use rusqlite::params;
/// What a column can be read as.
pub use rusqlite::types::FromSql;
/// A value as stored: NULL, integer, real, text or blob.
pub use rusqlite::types::Value;
/// A borrowed [`Value`], as read from a row without copying.
pub use rusqlite::types::ValueRef;

use super::pg;
use super::value::Value as Neutral;

/// The parameters of a statement: `[a, b]`, `params![a, b]`, `[]`, `()`, or
/// [`params_from_iter`]; each a [`ToSql`], read by either engine.
pub trait Params {
    /// Calls `f` with the parameters in order.
    fn with<R>(self, f: impl FnOnce(&[&dyn ToSql]) -> R) -> R;
}

impl Params for [&(dyn ToSql + Send + Sync); 0] {
    #[inline]
    fn with<R>(self, f: impl FnOnce(&[&dyn ToSql]) -> R) -> R {
        f(&[])
    }
}

impl Params for () {
    #[inline]
    fn with<R>(self, f: impl FnOnce(&[&dyn ToSql]) -> R) -> R {
        f(&[])
    }
}

impl Params for &[&dyn ToSql] {
    #[inline]
    fn with<R>(self, f: impl FnOnce(&[&dyn ToSql]) -> R) -> R {
        f(self)
    }
}

macro_rules! params_for_arrays {
    ($($n:literal)*) => {$(
        impl<T: ToSql> Params for [T; $n] {
            #[inline]
            fn with<R>(self, f: impl FnOnce(&[&dyn ToSql]) -> R) -> R {
                f(&self.each_ref().map(|v| v as &dyn ToSql))
            }
        }
        impl<T: ToSql> Params for &[&T; $n] {
            #[inline]
            fn with<R>(self, f: impl FnOnce(&[&dyn ToSql]) -> R) -> R {
                f(&self.map(|v| v as &dyn ToSql))
            }
        }
    )*};
}
params_for_arrays!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);

/// Parameters from an iterator (a list built at run time).
pub struct ParamsFromIter<I>(I);

/// The items of `iter` as a statement's parameters.
pub fn params_from_iter<I>(iter: I) -> ParamsFromIter<I>
where
    I: IntoIterator,
    I::Item: ToSql,
{
    ParamsFromIter(iter)
}

impl<I> Params for ParamsFromIter<I>
where
    I: IntoIterator,
    I::Item: ToSql,
{
    fn with<R>(self, f: impl FnOnce(&[&dyn ToSql]) -> R) -> R {
        let items: Vec<I::Item> = self.0.into_iter().collect();
        let refs: Vec<&dyn ToSql> = items.iter().map(|v| v as &dyn ToSql).collect();
        f(&refs)
    }
}

/// Parameters as PostgreSQL's layer takes them.
fn neutral(params: &[&dyn ToSql]) -> Result<Vec<Neutral>> {
    params
        .iter()
        .map(|param| {
            Ok(match param.to_sql()? {
                rusqlite::types::ToSqlOutput::Borrowed(value) => from_ref(value),
                rusqlite::types::ToSqlOutput::Owned(value) => Neutral::from(value),
                rusqlite::types::ToSqlOutput::ZeroBlob(len) => {
                    Neutral::Blob(vec![0; len.max(0) as usize])
                }
                other => {
                    return Err(Error::conversion(
                        0,
                        format!("a parameter PostgreSQL cannot take: {other:?}"),
                    ));
                }
            })
        })
        .collect()
}

fn from_ref(value: ValueRef<'_>) -> Neutral {
    match value {
        ValueRef::Null => Neutral::Null,
        ValueRef::Integer(n) => Neutral::Integer(n),
        ValueRef::Real(x) => Neutral::Real(x),
        ValueRef::Text(t) => Neutral::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Neutral::Blob(b.to_vec()),
    }
}

thread_local! {
    /// Whether this thread ran a statement that may write since
    /// [`take_written`] last asked (the writer's test of whether a failed
    /// write left anything to undo).
    static WRITTEN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

pub(in crate::db) fn mark_written() {
    WRITTEN.with(|written| written.set(true));
}

/// Whether this thread ran a statement that may write (one SQLite does not
/// call read-only, a batch of statements, or anything through
/// [`Conn::sqlite`]; on PostgreSQL any prepared statement but a `SELECT`, and
/// any statement that failed, which leaves the transaction to be rolled
/// back) since the last call; forgets it.
pub(crate) fn take_written() -> bool {
    WRITTEN.with(|written| written.replace(false))
}

/// A connection to the store. The service borrows one (`&Conn`) for each
/// read or write: the reader pool's, or the writer's own.
pub enum Conn {
    Sqlite(rusqlite::Connection),
    Pg(Box<pg::Client>),
}

impl Conn {
    /// Opens the data file with the standard settings, creating or migrating
    /// its schema (the CLI's commands).
    pub fn open(path: &std::path::Path) -> std::result::Result<Conn, super::StoreError> {
        Ok(Conn::Sqlite(super::open_and_migrate(path)?))
    }

    /// A store in memory with the current schema (tests).
    pub fn memory() -> Result<Conn> {
        let mut conn = rusqlite::Connection::open_in_memory()?;
        conn.execute_batch("PRAGMA foreign_keys = ON")?;
        super::migrate::migrate(&mut conn).map_err(|e| Error::Other(Box::new(e)))?;
        Ok(Conn::Sqlite(conn))
    }

    /// An empty store in memory, with no schema (tests of SQL by itself).
    pub fn empty_memory() -> Result<Conn> {
        Ok(Conn::Sqlite(rusqlite::Connection::open_in_memory()?))
    }

    /// The SQL fragments of this connection's engine.
    pub fn dialect(&self) -> &'static super::Dialect {
        match self {
            Conn::Sqlite(_) => &super::dialect::SQLITE,
            Conn::Pg(_) => &super::dialect::POSTGRES,
        }
    }

    /// The SQLite connection underneath (the modules of `src/db/` that are
    /// SQLite's own: pragmas, blobs, backup, checkpoints). Panics on another
    /// engine: those modules are not reached there.
    pub fn sqlite(&self) -> &rusqlite::Connection {
        mark_written();
        match self {
            Conn::Sqlite(conn) => conn,
            Conn::Pg(_) => panic!("a SQLite-only operation on a PostgreSQL connection"),
        }
    }

    /// A prepared statement from the connection's cache (prepared once per
    /// connection per SQL text): for every statement a route runs.
    #[inline]
    pub fn prepare_cached(&self, sql: &str) -> Result<Statement<'_>> {
        match self {
            Conn::Sqlite(conn) => Ok(Statement::Cached(conn.prepare_cached(sql)?)),
            Conn::Pg(client) => Ok(Statement::Pg {
                client,
                sql: sql.to_owned(),
            }),
        }
    }

    /// A statement prepared for one use (SQL built at run time, which would
    /// only crowd the cache).
    pub fn prepare(&self, sql: &str) -> Result<Statement<'_>> {
        match self {
            Conn::Sqlite(conn) => Ok(Statement::Once(conn.prepare(sql)?)),
            Conn::Pg(_) => self.prepare_cached(sql),
        }
    }

    /// Runs one statement (prepared for this use); answers the rows changed.
    pub fn execute<P: Params>(&self, sql: &str, params: P) -> Result<usize> {
        self.prepare(sql)?.execute(params)
    }

    /// Runs statements separated by `;`, with no parameters (schema, pragmas).
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        mark_written();
        match self {
            Conn::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Conn::Pg(client) => Ok(client.batch_execute(sql)?),
        }
    }

    /// Runs a statement with no parameters and no rows (the writer's
    /// `SAVEPOINT` and `RELEASE`): at once on SQLite; on PostgreSQL held back
    /// to travel with the next statement (`pg::Client::defer`), so that the
    /// writer's `RELEASE` and the next write's `SAVEPOINT` take one round trip
    /// together, and the last `RELEASE` goes with the `COMMIT`.
    pub(crate) fn execute_soon(&self, sql: &str) -> Result<()> {
        match self {
            Conn::Sqlite(_) => self.prepare_cached(sql)?.execute([]).map(|_| ()),
            Conn::Pg(client) => {
                client.defer(sql);
                Ok(())
            }
        }
    }

    /// Rolls the transaction back. What [`Conn::execute_soon`] held back is
    /// dropped, not sent: a held-back statement that failed would stop the
    /// `ROLLBACK` sent after it in the same text.
    pub(crate) fn rollback(&self) -> Result<()> {
        if let Conn::Pg(client) = self {
            client.forget_deferred();
            client.set_head(None);
        }
        self.execute_batch("ROLLBACK")
    }

    /// PostgreSQL, in a writing transaction ([`Conn::begin_writing`]): the
    /// change log's head as this transaction moved it so far (read with its
    /// lock, moved by [`Conn::moved_head`]). `None` on SQLite, and outside
    /// such a transaction.
    pub(crate) fn head_at_begin(&self) -> Option<u64> {
        match self {
            Conn::Pg(client) => client.head(),
            Conn::Sqlite(_) => None,
        }
    }

    /// The change log's head moved to `head` by this transaction.
    pub(crate) fn moved_head(&self, head: u64) {
        if let Conn::Pg(client) = self {
            client.set_head(Some(head));
        }
    }

    /// Reads the answers of the statements sent ahead
    /// ([`Statement::execute_ahead`]) that no call has read yet: the first
    /// failure among them, if any. Nothing to do on SQLite, or when none
    /// is unread.
    pub(crate) fn settle_ahead(&self) -> Result<()> {
        match self {
            Conn::Sqlite(_) => Ok(()),
            Conn::Pg(client) => Ok(client.settle_ahead()?),
        }
    }

    /// Whether the last error of a call on this connection (since this was
    /// last asked) was the failure of a statement sent ahead
    /// ([`Statement::execute_ahead`]), not of the call's own: the writer
    /// then fails the write that sent it. Never on SQLite.
    pub(crate) fn take_failed_ahead(&self) -> bool {
        match self {
            Conn::Sqlite(_) => false,
            Conn::Pg(client) => client.take_failed_ahead(),
        }
    }

    /// Drops the answers of statements sent ahead and not yet read: the
    /// write that sent them is being rolled back to its savepoint.
    pub(crate) fn forget_sent_ahead(&self) {
        if let Conn::Pg(client) = self {
            client.forget_sent_ahead();
        }
    }

    /// The first row of one statement (prepared for this use), mapped by `f`;
    /// [`Error::is_no_rows`] when there is none (see [`OptionalExtension`]).
    pub fn query_row<T, P, F>(&self, sql: &str, params: P, f: F) -> Result<T>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> Result<T>,
    {
        self.prepare(sql)?.query_row(params, f)
    }

    /// Begins a writing transaction holding the store's one write lock until
    /// it ends, so that writers of every process commit one after another:
    /// SQLite's file lock (`BEGIN IMMEDIATE`); on PostgreSQL, the row lock
    /// on `change_log`, taken by the transaction's first statement (the
    /// change log's order is the commit order: docs/design/postgresql.md 3.4).
    /// Answers what tells a writer whether another process (or the CLI)
    /// wrote since its own last transaction ([`Conn::counts_own_commits`]):
    /// on PostgreSQL, the count of writing transactions this one brought
    /// `change_log.commits` to, which moved by one more than the writer's own
    /// last commit when another wrote in between; on SQLite, the count of
    /// other connections' commits this connection has seen
    /// (`PRAGMA data_version`, read once the lock is held), which its own
    /// commits do not move.
    pub(crate) fn begin_writing(&self) -> Result<Option<u64>> {
        match self {
            Conn::Sqlite(_) => {
                self.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
                Ok(u64::try_from(self.data_version()?).ok())
            }
            Conn::Pg(client) => {
                // Also counts the writing transactions (the commit position
                // the caches compare, `pg::position`; the tables' triggers
                // then find it counted); the row lock it takes orders writers
                // of every process. One round trip.
                // With the change log's head, which only writers holding
                // that lock move: the entries' numbers are known before
                // they are appended (`Conn::head_at_begin`).
                let (commits, head) = client.begin_counted()?;
                client.set_head(head);
                Ok(commits)
            }
        }
    }

    /// [`Conn::begin_writing`] without waiting for its answer where that
    /// costs a round trip (PostgreSQL): `Ok(None)` then, and the answer is
    /// [`Conn::begun`] or [`Conn::confirm_begun`]'s, once read. On SQLite it
    /// is `begin_writing`'s at once.
    pub(crate) fn begin_writing_ahead(&self) -> Result<Option<Option<u64>>> {
        match self {
            Conn::Sqlite(_) => self.begin_writing().map(Some),
            Conn::Pg(client) => {
                client.set_head(None);
                client.begin_counted_ahead()?;
                Ok(None)
            }
        }
    }

    /// What [`Conn::begin_writing_ahead`] answered (the count of writing
    /// transactions), if its answer was read by a statement waited for
    /// since: the change log's head is then known too
    /// ([`Conn::head_at_begin`]). Taken: answered once.
    pub(crate) fn begun(&self) -> Option<Option<u64>> {
        match self {
            Conn::Pg(client) => client.begun().map(|(commits, head)| {
                client.set_head(head);
                commits
            }),
            Conn::Sqlite(_) => None,
        }
    }

    /// [`Conn::begun`], waiting for the answer (and those of every statement
    /// sent ahead) when it is not read yet.
    pub(crate) fn confirm_begun(&self) -> Result<Option<u64>> {
        match self {
            Conn::Pg(client) => {
                let (commits, head) = client.confirm_begun()?;
                client.set_head(head);
                Ok(commits)
            }
            Conn::Sqlite(_) => Err(Error::Unsupported("a BEGIN sent ahead")),
        }
    }

    /// SQLite's count of commits by other connections, as this one has seen
    /// them (`PRAGMA data_version`: unchanged by its own commits).
    pub(crate) fn data_version(&self) -> Result<i64> {
        self.prepare_cached("PRAGMA data_version")?
            .query_row([], |row| row.get(0))
    }

    /// Whether [`Conn::begin_writing`]'s answer counts this connection's own
    /// commits too (PostgreSQL's counter of writing transactions) or only
    /// the others' (SQLite's `data_version`).
    pub(crate) fn counts_own_commits(&self) -> bool {
        matches!(self, Conn::Pg(_))
    }

    /// Commits the writing transaction. One that `appended` change entries is
    /// announced on PostgreSQL, in the same round trip, so that other
    /// processes' waiting readers wake (`pg::listen`); SQLite's readers are
    /// this process's (the CLI's imports are seen by polling).
    pub(crate) fn commit(&self, appended: bool) -> Result<()> {
        if let Conn::Pg(client) = self {
            client.set_head(None);
        }
        match self {
            Conn::Pg(_) if appended => {
                self.execute_batch(&format!("{}; COMMIT", pg::listen::announce()))
            }
            // A simple query: it takes what `execute_soon` held back along.
            Conn::Pg(client) => Ok(client.batch_execute("COMMIT")?),
            Conn::Sqlite(_) => {
                self.prepare_cached("COMMIT")?.execute([])?;
                Ok(())
            }
        }
    }

    /// Begins a write transaction that takes the write lock at once
    /// (`BEGIN IMMEDIATE`: waiting on the busy timeout, never failing later
    /// on a snapshot another process moved). Rolled back when dropped
    /// without [`WriteTransaction::commit`]. For the CLI's writes; the
    /// server's go through the writer.
    pub fn begin_write(&self) -> Result<WriteTransaction<'_>> {
        self.begin_writing()?;
        Ok(WriteTransaction {
            conn: self,
            open: true,
        })
    }

    /// Runs `hook` just before each row a statement of this connection
    /// inserts, updates or deletes in a table of the main database, with the
    /// row's values before and after (SQLite's pre-update hook,
    /// `db::preupdate`); replaces a hook set before.
    pub fn on_row_change<F>(&self, hook: F) -> Result<()>
    where
        F: FnMut(&super::preupdate::RowChange<'_>) + Send + 'static,
    {
        match self {
            Conn::Sqlite(conn) => {
                super::preupdate::set(conn, Box::new(hook))?;
                // Statements prepared before were compiled for a connection
                // without a hook (SQLite may, for one, clear a table in one
                // step rather than row by row): prepare them afresh.
                conn.flush_prepared_statement_cache();
                Ok(())
            }
            Conn::Pg(_) => Err(Error::Unsupported(
                "an in-process row hook (PostgreSQL's triggers are PL/pgSQL)",
            )),
        }
    }

    /// Declares that the change log's capture sees every change of a
    /// covered row on this connection and keeps the `db::offered` offers
    /// true, so that offers made on it may be taken (`changes::capture`).
    /// SQLite: the row hook set on it ([`Conn::on_row_change`]) withdraws
    /// the offer of every row it sees about to change; setting another hook
    /// takes the declaration back. PostgreSQL: the session's triggers note
    /// the changes, and the capture settles the offers from a write's notes
    /// before it renders (`offered::settle`).
    pub fn withdraw_offers(&self) -> Result<()> {
        match self {
            Conn::Sqlite(conn) => Ok(super::preupdate::withdraw_offers(conn)?),
            Conn::Pg(client) => {
                client.settle_offers();
                Ok(())
            }
        }
    }

    /// Whether offers made on this connection are kept true
    /// ([`Conn::withdraw_offers`]).
    pub fn withdraws_offers(&self) -> bool {
        match self {
            Conn::Sqlite(conn) => super::preupdate::withdraws_offers(conn),
            Conn::Pg(client) => client.settles_offers(),
        }
    }

    /// The rowid of the row the last INSERT made on this connection.
    pub fn last_insert_rowid(&self) -> i64 {
        match self {
            Conn::Sqlite(conn) => conn.last_insert_rowid(),
            Conn::Pg(_) => panic!("no rowid on PostgreSQL: use RETURNING"),
        }
    }

    /// Whether the connection is known to be gone (PostgreSQL's, after the
    /// server ended it: a restart, a failover, `pg_terminate_backend`). A
    /// SQLite connection never is.
    pub fn is_lost(&self) -> bool {
        match self {
            Conn::Sqlite(_) => false,
            Conn::Pg(client) => client.is_closed(),
        }
    }

    /// Whether no transaction is open (the engine ended one by itself).
    pub fn is_autocommit(&self) -> bool {
        match self {
            Conn::Sqlite(conn) => conn.is_autocommit(),
            // A lost connection has ended its transaction; PostgreSQL never
            // ends one by itself otherwise (a failed statement leaves it to
            // be rolled back).
            Conn::Pg(client) => client.is_closed(),
        }
    }
}

/// A write transaction begun by [`Conn::begin_write`].
pub struct WriteTransaction<'c> {
    conn: &'c Conn,
    open: bool,
}

impl<'c> WriteTransaction<'c> {
    /// The connection, inside the transaction.
    pub fn conn(&self) -> &'c Conn {
        self.conn
    }

    /// Commits it (announced as a commit that may have appended changes).
    pub fn commit(mut self) -> Result<()> {
        self.open = false;
        self.conn.commit(true)
    }
}

impl Drop for WriteTransaction<'_> {
    fn drop(&mut self) {
        if self.open && !self.conn.is_autocommit() {
            if let Err(err) = self.conn.rollback() {
                log::error!("cannot roll back a write transaction: {err}");
            }
        }
    }
}

/// A prepared statement.
pub enum Statement<'c> {
    Cached(rusqlite::CachedStatement<'c>),
    Once(rusqlite::Statement<'c>),
    /// PostgreSQL's layer prepares and caches by the text when it runs.
    Pg {
        client: &'c pg::Client,
        sql: String,
    },
}

/// The SQLite statement of a [`Statement`], if it is one.
enum Engine<'s, 'c> {
    Sqlite(&'s mut rusqlite::Statement<'c>),
    Pg(&'c pg::Client, &'s str),
}

impl<'c> Statement<'c> {
    #[inline]
    fn engine(&mut self) -> Engine<'_, 'c> {
        match self {
            Statement::Cached(statement) => Engine::Sqlite(statement),
            Statement::Once(statement) => Engine::Sqlite(statement),
            Statement::Pg { client, sql } => Engine::Pg(client, sql),
        }
    }

    /// Runs it; answers the rows changed.
    #[inline]
    pub fn execute<P: Params>(&mut self, params: P) -> Result<usize> {
        match self.engine() {
            Engine::Sqlite(statement) => {
                if !statement.readonly() {
                    mark_written();
                }
                params.with(|p| Ok(statement.execute(p)?))
            }
            Engine::Pg(client, sql) => {
                let values = params.with(neutral)?;
                Ok(client.execute(sql, &values)? as usize)
            }
        }
    }

    /// Runs it when its count of rows is not wanted: on PostgreSQL, in the
    /// writer, it is sent without waiting for its answer, which comes with
    /// the next statement's (`pg::Client::execute_ahead`; its failure is
    /// then that statement's error, and the writer fails the write that sent
    /// it). On SQLite, and anywhere else, as [`Statement::execute`].
    pub fn execute_ahead<P: Params>(&mut self, params: P) -> Result<()> {
        match self.engine() {
            Engine::Sqlite(_) => self.execute(params).map(|_| ()),
            Engine::Pg(client, sql) => {
                let values = params.with(neutral)?;
                Ok(client.execute_ahead(sql, &values)?)
            }
        }
    }

    /// Its rows, one at a time.
    #[inline]
    pub fn query<P: Params>(&mut self, params: P) -> Result<Rows<'_>> {
        match self.engine() {
            Engine::Sqlite(statement) => {
                if !statement.readonly() {
                    mark_written();
                }
                params.with(|p| Ok(Rows::Sqlite(statement.query(p)?)))
            }
            Engine::Pg(client, sql) => {
                let values = params.with(neutral)?;
                Ok(Rows::Pg {
                    rows: client.query_rows(sql, &values)?.into_iter(),
                    current: None,
                })
            }
        }
    }

    /// Its rows, each mapped by `f`.
    #[inline]
    pub fn query_map<T, P, F>(&mut self, params: P, f: F) -> Result<MappedRows<'_, F>>
    where
        P: Params,
        F: FnMut(&Row<'_>) -> Result<T>,
    {
        Ok(MappedRows {
            rows: self.query(params)?,
            map: f,
        })
    }

    /// Runs it when its rows are wanted only later: on PostgreSQL, in the
    /// writer, it is sent without waiting, as [`Statement::execute_ahead`]
    /// is, and its rows, each mapped by `f`, are in the answer once the
    /// writer has read the answers of what it sent ahead (the next
    /// statement it waits for, at the latest the batch's COMMIT; a row `f`
    /// cannot map is then the answer's error). On SQLite, and anywhere
    /// else, it runs now, and any failure is the call's.
    pub fn query_ahead<T, P, F>(&mut self, params: P, f: F) -> Result<Later<T>>
    where
        P: Params,
        F: Fn(&Row<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let later = Later::default();
        match self.engine() {
            Engine::Sqlite(_) => {
                // A failure is the statement's: it fails the write now.
                let rows = self.query_map(params, f)?.collect::<Result<Vec<T>>>()?;
                later.put(Ok(rows));
            }
            Engine::Pg(client, sql) => {
                let values = params.with(neutral)?;
                let slot = later.clone();
                client.query_ahead(sql, &values, move |rows| {
                    slot.put(rows.iter().map(|row| f(&Row::Pg(row))).collect());
                })?;
            }
        }
        Ok(later)
    }

    /// Its first row, mapped by `f`; [`Error::is_no_rows`] when there is none.
    #[inline]
    pub fn query_row<T, P, F>(&mut self, params: P, f: F) -> Result<T>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> Result<T>,
    {
        let mut rows = self.query(params)?;
        match rows.next()? {
            Some(row) => f(&row),
            None => Err(Error::NoRows),
        }
    }

    /// How many columns its rows have.
    pub fn column_count(&mut self) -> Result<usize> {
        match self.engine() {
            Engine::Sqlite(statement) => Ok(statement.column_count()),
            Engine::Pg(client, sql) => Ok(client.column_count(sql)?),
        }
    }

    /// Whether it answers any row.
    pub fn exists<P: Params>(&mut self, params: P) -> Result<bool> {
        Ok(self.query(params)?.next()?.is_some())
    }
}

/// The rows of a statement run by [`Statement::query_ahead`], mapped: there
/// once its answer has been read.
pub struct Later<T>(std::sync::Arc<std::sync::Mutex<Option<Result<Vec<T>>>>>);

impl<T> Default for Later<T> {
    fn default() -> Self {
        Later(std::sync::Arc::default())
    }
}

impl<T> Clone for Later<T> {
    fn clone(&self) -> Self {
        Later(self.0.clone())
    }
}

impl<T> Later<T> {
    fn put(&self, rows: Result<Vec<T>>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(rows);
    }

    /// The rows, if the answer has been read (taken: a second call answers
    /// `None`).
    pub fn take(&self) -> Option<Result<Vec<T>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// `f` of the rows, if the answer has been read (left in place).
    pub fn read<R>(&self, f: impl FnOnce(&Result<Vec<T>>) -> R) -> Option<R> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(f)
    }
}

/// The rows of a statement being read.
pub enum Rows<'s> {
    Sqlite(rusqlite::Rows<'s>),
    /// PostgreSQL's rows, read whole when the statement ran.
    Pg {
        rows: std::vec::IntoIter<tokio_postgres::Row>,
        current: Option<tokio_postgres::Row>,
    },
}

impl Rows<'_> {
    /// The next row, if any.
    #[inline]
    #[allow(clippy::should_implement_trait)] // a lending iterator: each row borrows the statement
    pub fn next(&mut self) -> Result<Option<Row<'_>>> {
        match self {
            Rows::Sqlite(rows) => Ok(rows.next()?.map(Row::Sqlite)),
            Rows::Pg { rows, current } => {
                *current = rows.next();
                Ok(current.as_ref().map(Row::Pg))
            }
        }
    }
}

/// [`Rows`] mapped by a function: an iterator of results.
pub struct MappedRows<'s, F> {
    rows: Rows<'s>,
    map: F,
}

impl<T, F> Iterator for MappedRows<'_, F>
where
    F: FnMut(&Row<'_>) -> Result<T>,
{
    type Item = Result<T>;

    #[inline]
    fn next(&mut self) -> Option<Result<T>> {
        match self.rows.next() {
            Ok(Some(row)) => Some((self.map)(&row)),
            Ok(None) => None,
            Err(err) => Some(Err(err)),
        }
    }
}

/// One row of an answer.
#[derive(Clone, Copy)]
pub enum Row<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    /// PostgreSQL's row as the driver received it: columns are read from its
    /// bytes when asked.
    Pg(&'r tokio_postgres::Row),
}

/// A column, by its position from 0.
pub trait ColumnIndex: Copy + fmt::Debug {
    #[doc(hidden)]
    fn position(self) -> usize;
}

impl ColumnIndex for usize {
    #[inline]
    fn position(self) -> usize {
        self
    }
}

impl<'r> Row<'r> {
    /// The column as `T`.
    #[inline]
    pub fn get<I: ColumnIndex, T: FromSql>(&self, index: I) -> Result<T> {
        match self {
            Row::Sqlite(row) => Ok(row.get(index.position())?),
            Row::Pg(_) => {
                let column = index.position();
                T::column_result(self.get_ref(column)?)
                    .map_err(|source| Error::conversion(column, source))
            }
        }
    }

    /// The column as stored, borrowed.
    #[inline]
    pub fn get_ref<I: ColumnIndex>(&self, index: I) -> Result<ValueRef<'r>> {
        match self {
            Row::Sqlite(row) => Ok(row.get_ref(index.position())?),
            Row::Pg(row) => pg::value_ref(row, index.position())
                .map_err(|source| Error::conversion(index.position(), source)),
        }
    }

    /// How many columns the row has.
    pub fn column_count(&self) -> usize {
        match self {
            Row::Sqlite(row) => row.as_ref().column_count(),
            Row::Pg(row) => row.len(),
        }
    }
}

/// Why a statement failed.
#[derive(Debug)]
pub enum Error {
    /// A query that must answer a row answered none.
    NoRows,
    /// A column's value cannot be read as the type asked (`column`: its
    /// position, when known).
    Conversion {
        column: Option<usize>,
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// SQLite's own error.
    Sqlite(rusqlite::Error),
    /// PostgreSQL's layer's error.
    Pg(pg::Error),
    /// What this engine does not do (`what`).
    Unsupported(&'static str),
    /// Anything else underneath (the schema's migration, ...).
    Other(Box<dyn std::error::Error + Send + Sync + 'static>),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A column whose stored value cannot become what the row is read as.
    pub fn conversion(
        column: usize,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Error {
        Error::Conversion {
            column: Some(column),
            source: source.into(),
        }
    }

    /// Whether the query answered no row.
    pub fn is_no_rows(&self) -> bool {
        matches!(
            self,
            Error::NoRows | Error::Sqlite(rusqlite::Error::QueryReturnedNoRows)
        )
    }

    /// Whether the database could not be reached (its connection was lost,
    /// or could not be made): a 503 for the client, not a fault of ours.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Error::Pg(pg::Error::Lost(_) | pg::Error::Closed))
    }

    /// Whether the store is out of space (the disk, or the file's size cap).
    pub fn is_storage_full(&self) -> bool {
        match self {
            Error::Sqlite(err) => err.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull),
            Error::Pg(pg::Error::DiskFull(_)) => true,
            _ => false,
        }
    }
}

impl From<pg::Error> for Error {
    fn from(err: pg::Error) -> Error {
        Error::Pg(err)
    }
}

impl From<rusqlite::Error> for Error {
    #[inline]
    fn from(err: rusqlite::Error) -> Error {
        match err {
            rusqlite::Error::QueryReturnedNoRows => Error::NoRows,
            other => Error::Sqlite(other),
        }
    }
}

/// A borrowed value read as the wrong type (`ValueRef::as_str`, ...).
impl From<rusqlite::types::FromSqlError> for Error {
    fn from(err: rusqlite::types::FromSqlError) -> Error {
        Error::Conversion {
            column: None,
            source: Box::new(err),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoRows => f.write_str("the query answered no row"),
            Error::Conversion {
                column: Some(column),
                ..
            } => write!(f, "column {column} cannot be read as its type"),
            Error::Conversion { column: None, .. } => {
                f.write_str("a column cannot be read as its type")
            }
            Error::Sqlite(err) => write!(f, "sqlite: {err}"),
            Error::Pg(err) => write!(f, "{err}"),
            Error::Unsupported(what) => write!(f, "not supported on this engine: {what}"),
            Error::Other(err) => write!(f, "{err}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::NoRows | Error::Unsupported(_) => None,
            Error::Pg(err) => Some(err),
            Error::Conversion { source, .. } => Some(&**source),
            Error::Sqlite(err) => Some(err),
            Error::Other(err) => Some(&**err),
        }
    }
}

/// `.optional()`: a query's "no row" as `None`.
pub trait OptionalExtension<T> {
    fn optional(self) -> Result<Option<T>>;
}

impl<T> OptionalExtension<T> for Result<T> {
    #[inline]
    fn optional(self) -> Result<Option<T>> {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(err) if err.is_no_rows() => Ok(None),
            Err(err) => Err(err),
        }
    }
}

/// The store's own modules (`src/db/`) use rusqlite directly; their errors
/// reach a client as [`Error`]'s would.
impl From<rusqlite::Error> for crate::error::ApiError {
    fn from(err: rusqlite::Error) -> Self {
        Error::from(err).into()
    }
}

#[cfg(test)]
mod tests {
    use crate::error::ApiError;

    #[test]
    fn disk_full_maps_to_507() {
        let err = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        assert_eq!(ApiError::from(super::Error::from(err)).status(), 507);
    }
}
