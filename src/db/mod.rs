//! The store: one SQLite file, read through a pool of connections and written
//! through exactly one writer thread.
//!
//! Every call here runs its SQLite work on a blocking thread, never on the async
//! executor. A read runs inside one read transaction (a consistent snapshot);
//! a write runs inside its own savepoint of the writer's current batch and is
//! acknowledged only after that batch has committed durably.

pub mod blobs;
pub mod cache;
pub mod checkpoint;
pub mod conn;
pub mod dialect;
pub mod durable;
mod error;
pub mod held;
pub mod kept;
pub mod lease;
pub mod maintenance;
pub mod migrate;
pub mod offered;
pub mod pg;
pub mod preupdate;
pub mod stamp;
pub mod statistics;
pub mod transfer;
pub mod vacuum;
pub mod value;
pub mod wal_writes;
pub mod writer;

pub use conn::{
    Conn, Error, FromSql, Later, MappedRows, OptionalExtension, Params, Result, Row, Rows,
    Statement, ToSql, Value, ValueRef, WriteTransaction, params, params_from_iter,
};
pub use dialect::{Dialect, Engine};
pub use error::StoreError;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::OpenFlags;

use crate::error::{ApiError, ApiResult};
pub use stamp::Tables;
use stamp::{CommitWatch, Stamp};
use writer::Writer;

/// How long a connection waits on a lock held by another process (the CLI, a
/// backup) before it reports busy. Inside the server the single writer means
/// no request ever waits on another request's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Prepared statements a connection keeps. The writer runs every route's
/// writes and the change log's capture after each: more distinct statements
/// than rusqlite's default of 16, and a cyclic use of one more than the cache
/// holds misses every time (a prepare costs far more than the statement).
const STATEMENT_CACHE: usize = 256;

/// Pragmas every connection gets. `synchronous=FULL` makes a commit durable
/// before it returns (the server's writer alone sets `NORMAL` and flushes
/// behind itself: [`durable`]).
pub fn configure(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         PRAGMA synchronous = FULL;
         PRAGMA foreign_keys = ON;
         PRAGMA temp_store = MEMORY;",
    )?;
    Ok(())
}

/// How the writer and the CLI open a data file.
const READ_WRITE: OpenFlags = OpenFlags::SQLITE_OPEN_READ_WRITE
    .union(OpenFlags::SQLITE_OPEN_CREATE)
    .union(OpenFlags::SQLITE_OPEN_NO_MUTEX);

/// Opens a read-write connection with the standard pragmas.
pub fn open_connection(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open_with_flags(path, READ_WRITE)?;
    configure(&conn)?;
    Ok(conn)
}

/// The writer's connection: through [`wal_writes`], so that a commit writes
/// its WAL frames with one system call.
fn open_writer_connection(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    wal_writes::register();
    let conn = rusqlite::Connection::open_with_flags_and_vfs(path, READ_WRITE, wal_writes::NAME)?;
    configure(&conn)?;
    Ok(conn)
}

/// Opens the file, creating or migrating its schema. Used by `serve` and by
/// every CLI command that touches the data.
pub fn open_and_migrate(path: &Path) -> Result<rusqlite::Connection, StoreError> {
    migrated(path, open_connection(path))
}

/// The connection opened at `path`, its schema created or migrated.
fn migrated(
    path: &Path,
    conn: rusqlite::Result<rusqlite::Connection>,
) -> Result<rusqlite::Connection, StoreError> {
    let mut conn = conn.map_err(|source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    migrate::migrate(&mut conn).map_err(|source| StoreError::Migrate {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(conn)
}

/// Where the store lives: one SQLite file (the default), or a PostgreSQL
/// database (`--database postgres://...`).
#[derive(Clone, Debug)]
pub enum Location {
    File(PathBuf),
    Postgres(Box<pg::ConnectOptions>),
}

impl Location {
    /// `--database`: a PostgreSQL connection string (URL or key-value), or
    /// else the path of a data file.
    pub fn parse(database: &str) -> Result<Location, StoreError> {
        if pg::is_postgres(database) {
            pg::ConnectOptions::parse(database)
                .map(|options| Location::Postgres(Box::new(options)))
                .map_err(|source| StoreError::Postgres {
                    what: "read the connection string",
                    target: "--database".into(),
                    source,
                })
        } else {
            Ok(Location::File(PathBuf::from(database)))
        }
    }

    /// The data file, when the store is one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Location::File(path) => Some(path),
            Location::Postgres(_) => None,
        }
    }

    /// What the log calls it (no password).
    pub fn describe(&self) -> String {
        match self {
            Location::File(path) => path.display().to_string(),
            Location::Postgres(options) => options.describe(),
        }
    }
}

impl Conn {
    /// Connects to `location` with the standard settings, creating or
    /// migrating its schema (the CLI's commands and the server's writer). On
    /// PostgreSQL the session then keeps its plans ([`pg::KEEP_PLANS`]).
    pub fn open_at(location: &Location) -> Result<Conn, StoreError> {
        match location {
            Location::File(path) => Conn::open(path),
            Location::Postgres(options) => {
                let failed = |what| {
                    move |source| StoreError::Postgres {
                        what,
                        target: options.describe(),
                        source,
                    }
                };
                let client = pg::Client::connect(options).map_err(failed("connect to"))?;
                pg::apply_schema(&client).map_err(failed("create or check the schema of"))?;
                client
                    .batch_execute(pg::KEEP_PLANS)
                    .map_err(failed("prepare the session of"))?;
                Ok(Conn::Pg(Box::new(client)))
            }
        }
    }

    /// Begins a read transaction: one consistent snapshot for the whole read.
    /// On PostgreSQL a pooled connection is always in one already (see
    /// [`Conn::end_read`]).
    fn begin_read(&self) -> Result<()> {
        match self {
            Conn::Sqlite(_) => {
                self.prepare_cached("BEGIN DEFERRED")?.execute([])?;
                Ok(())
            }
            Conn::Pg(_) => Ok(()),
        }
    }

    /// Ends a read transaction (it has nothing to keep: whatever happened).
    ///
    /// On PostgreSQL the next read's transaction begins in the same round
    /// trip: `BEGIN ISOLATION LEVEL REPEATABLE READ` takes no snapshot (the
    /// first statement does), so a connection waiting in the pool holds
    /// nothing back, and a read costs its own statements plus this one round
    /// trip. A connection whose transaction cannot be ended is dropped by the
    /// pool (it reports itself broken).
    fn end_read(&self) {
        match self {
            Conn::Sqlite(_) => {
                let _ = self
                    .prepare_cached("COMMIT")
                    .and_then(|mut s| s.execute([]));
            }
            Conn::Pg(client) => {
                if client.batch_execute(PG_END_READ).is_err() {
                    let _ = client.batch_execute(PG_ABANDON_READ);
                }
            }
        }
    }
}

/// Begins a pooled PostgreSQL connection's read transaction.
const PG_BEGIN_READ: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
/// Ends it and begins the next.
const PG_END_READ: &str = "COMMIT; BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
/// The same after a failure.
const PG_ABANDON_READ: &str = "ROLLBACK; BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

/// The reader pool's connections: SQLite's opened read-only, or PostgreSQL's.
enum Readers {
    Sqlite(SqliteConnectionManager),
    Pg(pg::ConnectOptions),
}

impl r2d2::ManageConnection for Readers {
    type Connection = Conn;
    type Error = Error;

    fn connect(&self) -> Result<Conn, Error> {
        match self {
            Readers::Sqlite(manager) => Ok(manager.connect().map(Conn::Sqlite)?),
            Readers::Pg(options) => {
                let client = pg::Client::connect(options)?;
                client.batch_execute(PG_BEGIN_READ)?;
                Ok(Conn::Pg(Box::new(client)))
            }
        }
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), Error> {
        match (self, conn) {
            (Readers::Sqlite(manager), Conn::Sqlite(conn)) => Ok(manager.is_valid(conn)?),
            // A connection that answered within the last second is taken as
            // live: the round trip of a check would be a third of a cached
            // read's cost. One idle longer (a server restarted meanwhile) is
            // checked.
            (_, Conn::Pg(client)) if client.answered_within(Duration::from_secs(1)) => Ok(()),
            (_, conn) => conn.execute_batch(""),
        }
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        match (self, conn) {
            (Readers::Sqlite(manager), Conn::Sqlite(conn)) => manager.has_broken(conn),
            (_, Conn::Pg(client)) => client.is_closed(),
            _ => true,
        }
    }
}

/// The actor the change log records for the server's own writes.
pub const SERVER_ACTOR: &str = "quayside";

/// Handle to the store shared by all requests.
#[derive(Clone)]
pub struct Db {
    location: Location,
    readers: r2d2::Pool<Readers>,
    /// Reads in progress at once, handed out first come, first served: one
    /// more than the cores (at most the pool's size). Reads are CPU work once
    /// the file is cached; more at once only time-slice the same cores, and a
    /// page of 200 that loses its slice waits several: the search p99 went
    /// from 23-24 ms with 8 at once to 17 ms with 3, at the same throughput.
    read_slots: Arc<tokio::sync::Semaphore>,
    writer: Writer,
    /// SQLite's background checkpoint (none on PostgreSQL).
    checkpointer: Option<Arc<checkpoint::Checkpointer>>,
    /// A data file's batches committed and flushed (`durable`; none on
    /// PostgreSQL, whose COMMIT is durable when it returns).
    durable: Option<Arc<durable::Durable>>,
    /// Where the store's commit position is read (the caches' basis).
    commits: Commits,
    /// PostgreSQL: other processes' commits that appended changes, heard
    /// (`pg::listen`); none on a file.
    elsewhere: Option<Arc<pg::listen::Listener>>,
    /// PostgreSQL: the connection of [`Db::write_aside`]; none on a file.
    aside: Option<Arc<Aside>>,
}

/// A connection outside the writer, made when first needed and again when
/// lost (see [`Db::write_aside`]).
struct Aside {
    location: Location,
    conn: std::sync::Mutex<Option<Conn>>,
}

/// How long a read may take ([`Db::read_sized`]).
#[derive(Clone, Copy)]
pub enum ReadSize {
    /// A read of one record: a few index look-ups, bounded whatever the
    /// store holds (a document by id with its references, a port by code).
    /// On a data file it runs on the request's own thread instead of handing
    /// over to a blocking thread and back, which cost GET one job about a
    /// fifth of its throughput (bench/ab, six interleaved rounds, median
    /// 1.24 with it). On PostgreSQL the read waits on the network: it is
    /// handed over as any other.
    Point,
    /// Anything whose time grows with the data (a list, a search, a feed
    /// page, a blob): on a blocking thread, so that it never holds a
    /// request's thread for long.
    Long,
}

/// What a read answers: its result with the position it read at, and the
/// last batch it may have seen (see `durable`), to wait for before the
/// answer leaves.
type ReadAnswer<T> = (
    ApiResult<(Option<Stamp>, T)>,
    Option<(Arc<durable::Durable>, u64)>,
);

/// One read on a pooled connection, on the calling thread: its position
/// (`counted`: PostgreSQL's, read before), its transaction, `f`; the answer
/// goes to `answer` before the transaction is ended. A panic in `f` answers
/// an internal error and still ends the transaction.
fn run_read<T, F>(
    pool: &r2d2::Pool<Readers>,
    commits: &Commits,
    counted: Option<Option<Stamp>>,
    durable: Option<&Arc<durable::Durable>>,
    f: F,
    answer: impl FnOnce(ReadAnswer<T>),
) where
    F: FnOnce(&Conn, Option<Stamp>) -> ApiResult<T>,
{
    let conn = match pool.get() {
        Ok(conn) => conn,
        Err(err) => return answer((Err(ApiError::from(err)), None)),
    };
    let stamp = match commits {
        Commits::Wal(watch) => watch.stamp(),
        Commits::Counter(_) => counted.flatten(),
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        conn.begin_read()
            .map_err(ApiError::from)
            .and_then(|()| f(&conn, stamp))
    }))
    .unwrap_or_else(|_| Err(ApiError::internal("read task failed: it panicked")));
    let observed = durable.map(|d| (d.clone(), d.observed()));
    answer((result.map(|value| (stamp, value)), observed));
    conn.end_read();
}

/// How a store tells whether anything was committed since a moment.
#[derive(Clone)]
enum Commits {
    /// SQLite: the WAL index's header, read from shared memory.
    Wal(Arc<CommitWatch>),
    /// PostgreSQL: the commit counter, one round trip shared by many requests.
    Counter(Arc<pg::position::Position>),
}

/// How many reads may run at once (see `Db::read_slots`).
fn read_slots(readers: u32) -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (readers as usize).min(cores + 1).max(1)
}

impl Db {
    /// Opens the store: migrates the schema, starts the writer, fills the reader pool.
    /// `max_page_count` caps the file's size (tests of a full disk use it).
    /// `capture` runs around every write (the change log; see [`writer::Capture`]).
    pub fn open(
        path: &Path,
        readers: u32,
        max_page_count: Option<u64>,
        capture: Arc<dyn writer::Capture>,
    ) -> Result<Db, StoreError> {
        let write_conn = migrated(path, open_writer_connection(path))?;
        let pragma = |what| {
            move |source: Error| StoreError::Pragma {
                path: path.to_path_buf(),
                what,
                source,
            }
        };
        write_conn
            .query_row(
                &format!(
                    "PRAGMA wal_autocheckpoint = {}",
                    checkpoint::WRITER_AUTOCHECKPOINT_PAGES
                ),
                [],
                |_| Ok(()),
            )
            .map_err(|e| pragma("set the checkpoint threshold")(e.into()))?;
        // The writer's COMMIT does not wait for the disk; its syncer flushes
        // the WAL behind it, and callers hear of a write only after that
        // (`durable`).
        write_conn
            .execute_batch("PRAGMA synchronous = NORMAL")
            .map_err(|e| pragma("defer the writer's flush")(e.into()))?;
        if let Some(pages) = max_page_count {
            write_conn
                .query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
                .map_err(|e| pragma("cap the page count")(e.into()))?;
        }
        let manager = SqliteConnectionManager::file(path)
            .with_flags(OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .with_init(|c| {
                c.busy_timeout(BUSY_TIMEOUT)?;
                c.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
                // A modest page cache per reader: the OS caches the file too, and
                // eight large caches would dominate the server's memory.
                c.execute_batch(
                    "PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -1024;",
                )
            });
        let pool = r2d2::Pool::builder()
            .max_size(readers)
            .min_idle(Some(readers.min(2)))
            // No test statement at each checkout (r2d2_sqlite's `SELECT 1`,
            // parsed and run before every read that misses the read cache:
            // 3.5% of the workers' time in a GET profile): a connection to a
            // local file has no peer to lose, and one that fails fails the
            // read that uses it, with its error.
            .test_on_check_out(false)
            .build(Readers::Sqlite(manager))
            .map_err(|source| StoreError::Pool {
                path: path.to_path_buf(),
                source,
            })?;
        let watch = Arc::new(CommitWatch::new(path));
        let durable = Arc::new(durable::Durable::default());
        let syncer =
            durable::Syncer::start(path, durable.clone()).map_err(|source| StoreError::Thread {
                what: "the thread that flushes the WAL",
                source,
            })?;
        let caught_up = Arc::new(checkpoint::CaughtUp::default());
        Ok(Db {
            location: Location::File(path.to_path_buf()),
            readers: pool,
            read_slots: Arc::new(tokio::sync::Semaphore::new(read_slots(readers))),
            writer: Writer::start(
                Conn::Sqlite(write_conn),
                capture,
                watch.clone(),
                durable.clone(),
                syncer,
                caught_up.clone(),
            )
            .map_err(pragma("prepare the change log's capture"))?,
            durable: Some(durable),
            checkpointer: Some(Arc::new(
                checkpoint::Checkpointer::start(path, caught_up).map_err(|source| {
                    StoreError::Checkpointer {
                        path: path.to_path_buf(),
                        source,
                    }
                })?,
            )),
            commits: Commits::Wal(watch),
            elsewhere: None,
            aside: None,
        })
    }

    /// Opens the store at `location`: a data file ([`Db::open`]), or a
    /// PostgreSQL database (the schema created if it is empty, the writer on
    /// a connection of its own, `readers` pooled connections). SQLite's file
    /// settings (`max_page_count`, checkpoints) do not apply there.
    pub fn open_at(
        location: &Location,
        readers: u32,
        max_page_count: Option<u64>,
        capture: Arc<dyn writer::Capture>,
    ) -> Result<Db, StoreError> {
        let options = match location {
            Location::File(path) => return Db::open(path, readers, max_page_count, capture),
            Location::Postgres(options) => options,
        };
        let write_conn = Conn::open_at(location)?;
        let pool = r2d2::Pool::builder()
            .max_size(readers)
            .min_idle(Some(readers.min(2)))
            .build(Readers::Pg((**options).clone()))
            .map_err(|source| StoreError::Pool {
                path: PathBuf::from(options.describe()),
                source,
            })?;
        let again = location.clone();
        let reconnect: writer::Reconnect =
            Box::new(move || Conn::open_at(&again).map_err(|e| crate::error::chain(&e)));
        let writer =
            Writer::start_reconnecting(write_conn, capture, reconnect).map_err(|source| {
                StoreError::Pragma {
                    path: PathBuf::from(options.describe()),
                    what: "prepare the change log's capture",
                    source,
                }
            })?;
        Ok(Db {
            location: location.clone(),
            readers: pool,
            // On PostgreSQL a read mostly waits on round trips, not on
            // this machine's cores: every pooled connection may be busy.
            read_slots: Arc::new(tokio::sync::Semaphore::new(readers.max(1) as usize)),
            writer,
            checkpointer: None,
            durable: None,
            aside: Some(Arc::new(Aside {
                location: location.clone(),
                conn: std::sync::Mutex::new(None),
            })),
            elsewhere: Some(Arc::new(
                pg::listen::Listener::start((**options).clone()).map_err(|source| {
                    StoreError::Thread {
                        what: "the listener for other processes' commits",
                        source,
                    }
                })?,
            )),
            commits: Commits::Counter(Arc::new(pg::position::Position::new((**options).clone()))),
        })
    }

    /// Where the store lives.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The data file, when the store is one.
    pub fn path(&self) -> Option<&Path> {
        self.location.file()
    }

    /// Whether other server processes may serve the same store (PostgreSQL):
    /// what they commit reaches no watch of this process, and background
    /// work that must run once runs under [`lease`].
    pub fn shared(&self) -> bool {
        matches!(self.location, Location::Postgres(_))
    }

    /// Where the store is now: unchanged stamps mean nothing was committed in
    /// between (see [`stamp`]). On a file, a read of shared memory; on
    /// PostgreSQL, the commit counter read by a query sent after this call
    /// began, shared with the requests that asked meanwhile
    /// ([`pg::position`]).
    pub async fn stamp(&self) -> Option<Stamp> {
        match &self.commits {
            Commits::Wal(watch) => watch.stamp(),
            // Boxed: the query's future is large, and would otherwise make
            // every future that awaits a stamp as large, on a file too.
            Commits::Counter(position) => Box::pin(position.stamp()).await,
        }
    }

    /// Whether the store holds the same data now, at `now`, as when `then`
    /// was read: the same position, or on a file only bookkeeping commits in
    /// between (see [`stamp`]). An unknown position is never the same.
    pub fn same_data(&self, then: Option<Stamp>, now: Option<Stamp>) -> bool {
        match (then, now, &self.commits) {
            (Some(then), Some(now), _) if then == now => true,
            (Some(then), Some(now), Commits::Wal(watch)) => watch.same_data(then, now),
            _ => false,
        }
    }

    /// Whether the store holds the same rows of `tables` now, at `now`, as
    /// when `then` was read: what an in-memory copy of them is made of (a
    /// cached session, the read cache's location records, a workspace's
    /// scope; `Tables`). [`Db::same_data`],
    /// or in between only commits that changed none of them:
    /// - on a file, commits of the writer whose row hook saw none of them
    ///   change (`CommitWatch::holds`);
    /// - on PostgreSQL, for a group counted apart (`Tables::COUNTED`: the
    ///   locations, the workspaces, the sessions), an unchanged count of the
    ///   transactions that changed one of its rows (`change_log.location_commits`
    ///   and the others, moved by triggers on the group's tables in whatever
    ///   transaction changes them, `pg/group_commits.sql`); for the documents,
    ///   no commit at all.
    ///
    /// A workspace's writes then leave the location records cached: with
    /// five writes a second, GET one port ran at about half its rate on a
    /// file and a fifth on PostgreSQL while every commit emptied the cache;
    /// its documents' writes leave its scope cached; and no write but a
    /// session's or an account's makes a cached session be confirmed again
    /// (`docs/design/performance.md`).
    pub fn same(&self, tables: Tables, then: Option<Stamp>, now: Option<Stamp>) -> bool {
        match (then, now, &self.commits) {
            (Some(then), Some(now), _) if then == now => true,
            (Some(then), Some(now), Commits::Wal(watch)) => watch.holds(tables, then, now),
            (
                Some(Stamp::Commits { groups: then, .. }),
                Some(Stamp::Commits { groups: now, .. }),
                Commits::Counter(_),
            ) => tables.counted().is_some_and(|i| then[i] == now[i]),
            _ => false,
        }
    }

    /// The documents changed between `then` and `now` (an id once or more),
    /// when all are known: on a file, by the writer's recorded commits
    /// (`CommitWatch::changed_documents`); on PostgreSQL only when nothing
    /// was committed. `None`: not known, so no kept document holds.
    pub fn changed_documents(
        &self,
        then: Option<Stamp>,
        now: Option<Stamp>,
    ) -> Option<Vec<String>> {
        match (then, now, &self.commits) {
            (Some(then), Some(now), _) if then == now => Some(Vec::new()),
            (Some(then), Some(now), Commits::Wal(watch)) => watch.changed_documents(then, now),
            _ => None,
        }
    }

    /// Queries sent to read the PostgreSQL commit position (0 on a file).
    pub fn position_queries(&self) -> u64 {
        match &self.commits {
            Commits::Wal(_) => 0,
            Commits::Counter(position) => position.queries(),
        }
    }

    /// Runs `f` on a pooled read-only connection inside one read transaction;
    /// `f` also gets the store's position taken just before the read began.
    pub fn read<T, F>(&self, f: F) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnOnce(&Conn, Option<Stamp>) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let read = self.read_at(f);
        async move { Ok(read.await?.1) }
    }

    /// [`Db::read`], also answering the store's position taken just before the
    /// read began: what the answer may be cached under.
    pub fn read_at<T, F>(
        &self,
        f: F,
    ) -> impl Future<Output = ApiResult<(Option<Stamp>, T)>> + Send + 'static
    where
        F: FnOnce(&Conn, Option<Stamp>) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        self.read_after(None, f)
    }

    /// [`Db::read_at`] for a caller that already holds a position read
    /// before this read begins (its session check's): on PostgreSQL that
    /// position is the read's, sparing a second look at the counter; a file's
    /// position costs nothing and is read afresh.
    ///
    /// The answer is handed over as soon as `f` returns; the transaction is
    /// ended after that, before the connection goes back to the pool.
    pub fn read_after<T, F>(
        &self,
        known: Option<Stamp>,
        f: F,
    ) -> impl Future<Output = ApiResult<(Option<Stamp>, T)>> + Send + 'static
    where
        F: FnOnce(&Conn, Option<Stamp>) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        self.read_sized(known, ReadSize::Long, f)
    }

    /// [`Db::read_after`] for a read of the given [`ReadSize`].
    pub fn read_sized<T, F>(
        &self,
        known: Option<Stamp>,
        size: ReadSize,
        f: F,
    ) -> impl Future<Output = ApiResult<(Option<Stamp>, T)>> + Send + 'static
    where
        F: FnOnce(&Conn, Option<Stamp>) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        // Boxed: a read's future is some kilobytes (the commit position's
        // query, the reader slot, the hand-over), and every future awaiting
        // one inline would be as large, a cost paid on every request, taken
        // or not (a request's future is moved into its box whole).
        Box::pin(self.read_sized_inline(known, size, f))
    }

    fn read_sized_inline<T, F>(
        &self,
        known: Option<Stamp>,
        size: ReadSize,
        f: F,
    ) -> impl Future<Output = ApiResult<(Option<Stamp>, T)>> + Send + 'static
    where
        F: FnOnce(&Conn, Option<Stamp>) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let pool = self.readers.clone();
        let commits = self.commits.clone();
        let slots = self.read_slots.clone();
        let durable = self.durable.clone();
        async move {
            let counted = match (&commits, known) {
                (Commits::Wal(_), _) => None,
                (Commits::Counter(_), Some(known)) => Some(Some(known)),
                (Commits::Counter(position), None) => Some(position.stamp().await),
            };
            let slot = slots
                .acquire_owned()
                .await
                .map_err(|e| ApiError::internal(format!("reader slots closed: {e}")))?;
            let (result, observed) = if let (ReadSize::Point, Commits::Wal(_)) = (size, &commits) {
                // On this thread: the slot bounds the connections in use, so
                // one is free without waiting.
                let mut answered = None;
                run_read(&pool, &commits, counted, durable.as_ref(), f, |answer| {
                    answered = Some(answer);
                });
                drop(slot);
                answered.unwrap_or_else(|| (Err(ApiError::internal("a read gave no answer")), None))
            } else {
                let (answer, answered) = tokio::sync::oneshot::channel();
                tokio::task::spawn_blocking(move || {
                    let _slot = slot;
                    run_read(&pool, &commits, counted, durable.as_ref(), f, |read| {
                        let _ = answer.send(read);
                    });
                });
                answered
                    .await
                    .map_err(|e| ApiError::internal(format!("read task failed: {e}")))?
            };
            if let Some((durable, batch)) = observed {
                durable.settled(batch).await;
            }
            result
        }
    }

    /// Waits until every batch committed so far is on disk (see
    /// [`durable`]), for an answer taken from a cache that a read may have
    /// filled before its own wait; at once when nothing is in flight, or on
    /// PostgreSQL.
    pub async fn flushed(&self) {
        if let Some(durable) = &self.durable {
            durable.settled(durable.observed()).await;
        }
    }

    /// Runs `f` through the single writer, inside its own savepoint, for
    /// `actor` (the name the change log records). Returns after the batch
    /// holding this write has committed durably; if `f` fails, only its own
    /// changes are rolled back.
    pub fn write_as<T, F>(
        &self,
        actor: Arc<str>,
        f: F,
    ) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnMut(&Conn) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        self.writer.submit(actor, false, f)
    }

    /// [`Db::write_as`] for a write of bookkeeping only: one that changes no
    /// data any cache holds and nothing the change log covers (the planner's
    /// statistics, a session's sliding expiry, an incremental vacuum step).
    /// Its commit leaves the caches' entries valid, on either engine:
    /// - on a data file it goes through the writer, which recognises a
    ///   commit of bookkeeping only (see [`stamp`]); a write that does
    ///   append changes is treated as any other;
    /// - on PostgreSQL it runs aside ([`Db::write_aside`]), in a transaction
    ///   of its own that the tables' counting triggers do not count
    ///   (`uncounted`): `change_log.commits` stays where it was, so no
    ///   process's caches are emptied, and no other process's writer finds
    ///   a foreign commit before its next batch. A server with many users
    ///   refreshes some session's expiry every few seconds; through the
    ///   writer each refresh emptied every process's read cache.
    pub fn write_bookkeeping<T, F>(
        &self,
        actor: Arc<str>,
        f: F,
    ) -> std::pin::Pin<Box<dyn Future<Output = ApiResult<T>> + Send + 'static>>
    where
        F: FnMut(&Conn) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        if self.aside.is_some() {
            let mut f = f;
            return self.write_aside(move |conn| uncounted(conn, &mut f));
        }
        Box::pin(self.writer.submit(actor, true, f))
    }

    /// Runs `f` outside the writer, on a connection of its own where each
    /// statement commits by itself: for the writes that must not count as a
    /// commit, PostgreSQL's record of a failed login (`login_failures`: no
    /// counting trigger, nothing caches it, the change log does not cover
    /// it) and bookkeeping ([`Db::write_bookkeeping`]). Through the writer
    /// they would move the commit counter, and every wrong password would
    /// empty every process's caches and wake every waiting feed reader. On
    /// a data file it is a write through the writer like any other (failed
    /// logins are counted in memory there).
    pub fn write_aside<T, F>(
        &self,
        f: F,
    ) -> std::pin::Pin<Box<dyn Future<Output = ApiResult<T>> + Send + 'static>>
    where
        F: FnMut(&Conn) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let Some(aside) = self.aside.clone() else {
            return Box::pin(self.write(f));
        };
        let mut f = f;
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut held = aside.conn.lock().unwrap_or_else(|p| p.into_inner());
                if held.as_ref().is_none_or(Conn::is_lost) {
                    *held = None;
                    match Conn::open_at(&aside.location) {
                        Ok(conn) => *held = Some(conn),
                        Err(err) => {
                            log::warn!("cannot write aside: {}", crate::error::chain(&err));
                            return Err(crate::error::database_unreachable());
                        }
                    }
                }
                f(held.as_ref().expect("connected above"))
            })
            .await
            .map_err(|e| ApiError::internal(format!("write task failed: {e}")))?
        })
    }

    /// [`Db::write_as`] for the server itself (uploads' chunks, cleanup).
    pub fn write<T, F>(&self, f: F) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnMut(&Conn) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        self.write_as(Arc::from(SERVER_ACTOR), f)
    }

    /// The last change sequence committed; changes after each commit that
    /// appended change entries (long-poll and live feeds wait on it).
    pub fn changes_head(&self) -> tokio::sync::watch::Receiver<u64> {
        self.writer.head()
    }

    /// On PostgreSQL, changes when another process is heard to have
    /// committed changes ([`pg::listen`]: a hint to look, not a head);
    /// `None` on a file.
    pub fn changes_elsewhere(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.elsewhere.as_ref().map(|listener| listener.heard())
    }

    /// Stops the writer after it has finished what is queued, then folds the
    /// WAL back into the main file so the one `.db` file is the whole store.
    pub fn close(&self) -> Result<(), StoreError> {
        self.writer.stop();
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.stop();
        }
        let Location::File(path) = &self.location else {
            return Ok(());
        };
        let conn = open_connection(path).map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(|source| StoreError::Checkpoint {
                path: path.clone(),
                source,
            })?;
        Ok(())
    }
}

/// Runs `f` on an aside connection to PostgreSQL ([`Db::write_aside`]) as one
/// transaction that the tables' counting triggers (`quayside_count_commit`,
/// `quayside_count_group`) take as counted already, so that neither
/// `change_log.commits` nor a group's count moves: for bookkeeping only
/// ([`Db::write_bookkeeping`]; a session's sliding expiry, which a cached
/// session that has not seen it only takes for nearer than it is). Rolled
/// back when `f` fails or panics, so that the connection is never left inside
/// a transaction.
fn uncounted<T>(conn: &Conn, f: &mut impl FnMut(&Conn) -> ApiResult<T>) -> ApiResult<T> {
    let mut begin = String::from("BEGIN; SELECT set_config('quayside.counted', 'yes', true)");
    for (_, column) in Tables::COUNTED {
        begin.push_str(&format!(", set_config('quayside.{column}', 'yes', true)"));
    }
    conn.execute_batch(&begin)?;
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(conn)))
        .unwrap_or_else(|_| Err(ApiError::internal("a bookkeeping write panicked")));
    match ran {
        Ok(value) => {
            conn.execute_batch("COMMIT")?;
            Ok(value)
        }
        Err(err) => {
            if let Err(rollback) = conn.execute_batch("ROLLBACK") {
                log::warn!("a bookkeeping write could not be rolled back: {rollback}");
            }
            Err(err)
        }
    }
}

/// Waits until another process's commit is heard on `elsewhere` (from
/// [`Db::changes_elsewhere`]); never on a file (`None`), nor once the
/// listener is gone.
pub async fn heard_elsewhere(elsewhere: Option<&mut tokio::sync::watch::Receiver<u64>>) {
    if let Some(heard) = elsewhere {
        if heard.changed().await.is_ok() {
            return;
        }
    }
    std::future::pending().await
}
