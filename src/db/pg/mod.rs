//! The PostgreSQL connection layer (issue #17, step 4 of
//! docs/design/postgresql.md 3.13): connecting (URL or key-value string, TLS
//! over rustls), SQLite's `?`/`?N` placeholders rewritten to `$N` once per
//! statement text, a statement cache, [`Value`] to and from PostgreSQL's
//! types, the server's SQLSTATEs sorted into [`Error`]'s variants, and the
//! schema (`pg/schema.sql`, the translation of `schema.sql`) with its version.
//!
//! `db::Conn`'s PostgreSQL arm holds a [`Client`]; [`position`] reads the
//! commit counter the caches compare; [`listen`] hears of other processes'
//! commits that appended changes, so that this process's waiting readers
//! wake. Tests run this layer against a real PostgreSQL server
//! (`tests/it/pg/`).
//!
//! The driver is `tokio-postgres`, made blocking by [`driver`]: each
//! [`Client`] drives its connection on a small runtime of its own, so it may
//! be used from the writer's thread and from `spawn_blocking` threads, never
//! on the async executor (the store never runs there). Unlike the `postgres`
//! crate's blocking client, it can send a statement without waiting for its
//! answer ([`Client::execute_ahead`]).

pub mod config;
mod driver;
mod error;
pub mod listen;
pub mod placeholders;
pub mod position;
pub mod schema;
pub mod tls;
mod types;

pub use config::{ConnectOptions, SslMode, is_postgres};
pub use error::{Error, Result};
pub use schema::apply_schema;
pub use types::value_ref;

use std::cell::RefCell;
use std::collections::HashMap;

use tokio_postgres::types::ToSql;

use crate::db::value::Value;

/// Prepared statements a connection keeps, as SQLite's connections do
/// (`db::STATEMENT_CACHE`); beyond it, the least recently used is closed.
pub const STATEMENT_CACHE: usize = 256;

/// One row of a result, owned: its columns' values in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    values: Vec<Value>,
}

impl Row {
    pub fn get(&self, column: usize) -> Option<&Value> {
        self.values.get(column)
    }

    pub fn values(&self) -> &[Value] {
        &self.values
    }

    pub fn into_values(self) -> Vec<Value> {
        self.values
    }
}

impl std::ops::Index<usize> for Row {
    type Output = Value;

    fn index(&self, column: usize) -> &Value {
        &self.values[column]
    }
}

/// A connection with a statement cache keyed by the statement's text as
/// written (with `?` placeholders): the rewrite and the server's prepare
/// happen on a miss only.
///
/// Methods take `&self`, as rusqlite's do: the connection and its cache sit in
/// a `RefCell` (a `Client` is used by one thread at a time; it is `Send`, not
/// `Sync`). Every result is read whole into owned [`Row`]s before the call
/// returns, so no borrow outlives a call.
pub struct Client {
    inner: RefCell<Inner>,
    /// When the server last answered a statement.
    answered: std::cell::Cell<std::time::Instant>,
    /// Statements held back by [`Client::defer`], each followed by `;`.
    deferred: RefCell<String>,
    /// Whether the change log's capture settles `db::offered` offers from
    /// this session's notes ([`Client::settle_offers`]).
    settles_offers: std::cell::Cell<bool>,
    /// The change log's head in the writing transaction now open
    /// (`Conn::head_at_begin`).
    head: std::cell::Cell<Option<u64>>,
    /// What the `BEGIN` sent ahead ([`Client::begin_counted_ahead`])
    /// answered, once its answer is read: the count of writing transactions
    /// and the change log's head.
    begun: std::sync::Arc<std::sync::Mutex<Option<Counted>>>,
}

/// The count of writing transactions and the change log's head, as a
/// writing transaction's `BEGIN` found them ([`Client::begin_counted`]).
pub type Counted = (Option<u64>, Option<u64>);

/// The writing transaction's first statement: the `change_log` row's lock,
/// the count of writing transactions, the change log's head, and
/// `quayside.counted` set for the tables' triggers.
const BEGIN_COUNTED: &str = "UPDATE change_log SET commits = commits + 1 WHERE id = 1 \
     RETURNING commits, head, set_config('quayside.counted', 'yes', true)";

/// [`Counted`] from [`BEGIN_COUNTED`]'s row.
fn counted(row: Option<&tokio_postgres::Row>) -> Counted {
    let number = |column: usize| match row.map(|row| row.try_get::<_, Value>(column)) {
        Some(Ok(Value::Integer(n))) => u64::try_from(n).ok(),
        _ => None,
    };
    (number(0), number(1))
}

struct Inner {
    /// Dropped by [`Client`]'s `Drop`, off any async runtime.
    driver: std::mem::ManuallyDrop<driver::Driver>,
    statements: HashMap<String, Cached>,
    /// Uses so far: the cache's clock for "least recently used".
    uses: u64,
    /// Statements prepared (cache misses) since the connection was made.
    prepared: u64,
}

struct Cached {
    statement: tokio_postgres::Statement,
    last_used: u64,
}

/// The session of a connection whose statements find rows by key (the
/// writer's, the CLI's): its plans are kept
/// (`plan_cache_mode = auto`), not made again at every execution as the
/// readers' are ([`ConnectOptions::parse`]: a partial index on `kind = $1`
/// serves only a plan made for the value). A generic plan serves such
/// statements as well as a custom one, and `auto` still plans for the values
/// when the generic plan would cost more. With every statement planned again,
/// planning took 25% of the writing backend's time and POST quality result
/// ran at 545-667 requests/s; with `auto`, 827-925
/// (docs/design/performance.md).
pub const KEEP_PLANS: &str = "SET plan_cache_mode = auto";

impl Client {
    /// Connects with these options' TLS settings; the session gets
    /// `plan_cache_mode = force_custom_plan` (see [`ConnectOptions::parse`]).
    pub fn connect(options: &ConnectOptions) -> Result<Client> {
        let tls = tls::MakeRustlsConnect::new(options)?;
        let driver = driver::Driver::connect(&options.config, tls)?;
        Ok(Client {
            inner: RefCell::new(Inner {
                driver: std::mem::ManuallyDrop::new(driver),
                statements: HashMap::new(),
                uses: 0,
                prepared: 0,
            }),
            answered: std::cell::Cell::new(std::time::Instant::now()),
            deferred: RefCell::new(String::new()),
            settles_offers: std::cell::Cell::new(false),
            head: std::cell::Cell::new(None),
            begun: Default::default(),
        })
    }

    /// Declares that the change log's capture notes this session's changes
    /// (its triggers) and settles the `db::offered` offers made on it from
    /// those notes (`offered::settle`).
    pub fn settle_offers(&self) {
        self.settles_offers.set(true);
    }

    /// The change log's head in the writing transaction now open, as the
    /// writer knows it (`Conn::head_at_begin`).
    pub fn head(&self) -> Option<u64> {
        self.head.get()
    }

    pub fn set_head(&self, head: Option<u64>) {
        self.head.set(head);
    }

    /// Whether [`Client::settle_offers`] was declared.
    pub fn settles_offers(&self) -> bool {
        self.settles_offers.get()
    }

    /// Holds back a statement with no parameters and no rows (the writer's
    /// `SAVEPOINT` and `RELEASE`) to go with the next one: in front of the
    /// next simple query's text ([`Client::batch_execute`],
    /// [`Client::batch_first`]), or, before the next prepared statement, as
    /// one simple query with whatever else was held back. The statements run
    /// in the order of the calls; an error of a held-back one is the error of
    /// the call that sent it.
    pub fn defer(&self, sql: &str) {
        let mut deferred = self.deferred.borrow_mut();
        deferred.push_str(sql);
        deferred.push_str(";\n");
    }

    /// Drops what [`Client::defer`] held back, and the answers of the
    /// statements sent ahead ([`Client::execute_ahead`]) not yet read: the
    /// transaction they belonged to is being rolled back.
    pub fn forget_deferred(&self) {
        self.deferred.borrow_mut().clear();
        self.forget_sent_ahead();
    }

    /// Drops the answers of the statements sent ahead and not yet read (the
    /// write that sent them is being rolled back to its savepoint).
    pub fn forget_sent_ahead(&self) {
        self.inner.borrow_mut().driver.forget_unanswered();
    }

    /// `sql` after what [`Client::defer`] held back, which is now sent.
    fn with_deferred<'s>(&self, sql: &'s str) -> std::borrow::Cow<'s, str> {
        let mut deferred = self.deferred.borrow_mut();
        if deferred.is_empty() {
            std::borrow::Cow::Borrowed(sql)
        } else {
            let mut text = std::mem::take(&mut *deferred);
            text.push_str(sql);
            std::borrow::Cow::Owned(text)
        }
    }

    /// Sends what [`Client::defer`] held back, if anything (before a
    /// prepared statement, which cannot share a simple query's text). In the
    /// writer's transaction as a simple query sent ahead: its answer is read
    /// with the prepared statement's (or, after one sent ahead too, with the
    /// next one waited for), whose error its failure becomes, as when it went
    /// in front of that statement's text; the transaction it aborted refuses
    /// the statements after it. Anywhere else it is waited for, so that a
    /// failure stops the statement after it.
    fn send_deferred(&self) -> Result<()> {
        let deferred = std::mem::take(&mut *self.deferred.borrow_mut());
        if deferred.is_empty() {
            return Ok(());
        }
        if crate::db::writer::current_transaction().is_none() {
            return self.wait(async |client| client.batch_execute(&deferred).await);
        }
        self.send_ahead(|client| async move { client.batch_execute(&deferred).await.map(|()| 0) });
        Ok(())
    }

    /// Runs `request` on the driver's client and waits for its answer (and
    /// for those of the statements sent ahead before it, the first failure
    /// of which is the error).
    fn wait<T>(
        &self,
        request: impl AsyncFnOnce(&tokio_postgres::Client) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T> {
        let mut inner = self.inner.borrow_mut();
        let client = std::sync::Arc::clone(inner.driver.client());
        let answer = inner.driver.wait(request(&client))?;
        self.answered.set(std::time::Instant::now());
        Ok(answer)
    }

    /// Runs one statement; the number of rows it changed (for a SELECT, the
    /// rows it returned).
    pub fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        self.run(sql, async |client, statement| {
            client.execute(statement, &as_params(params)).await
        })
    }

    /// Runs one statement whose count of rows is not wanted. On the writer's
    /// thread it is sent without waiting for its answer, which is read with
    /// that of the next statement waited for (in the writer, the notes its
    /// write's capture takes back, at the latest): a failure then is the
    /// error of that later call, and is noted for the writer
    /// ([`Client::take_failed_ahead`]). Anywhere else it runs as
    /// [`Client::execute`] does.
    pub fn execute_ahead(&self, sql: &str, params: &[Value]) -> Result<()> {
        if crate::db::writer::current_transaction().is_none() {
            return self.execute(sql, params).map(|_| ());
        }
        // It may write, and its failure is found later: noted now.
        crate::db::conn::mark_written();
        self.send_deferred()?;
        let statement = self.statement(sql)?;
        let values = params.to_vec();
        self.send_ahead(
            |client| async move { client.execute(&statement, &as_params(&values)).await },
        );
        Ok(())
    }

    /// [`Client::execute_ahead`] for a statement whose rows are wanted, but
    /// not now: `deliver` gets them when its answer is read (on the writer's
    /// thread, with the next statement waited for; anywhere else, at once).
    /// A failure is found as [`Client::execute_ahead`]'s is.
    pub fn query_ahead(
        &self,
        sql: &str,
        params: &[Value],
        deliver: impl FnOnce(Vec<tokio_postgres::Row>) + Send + 'static,
    ) -> Result<()> {
        if crate::db::writer::current_transaction().is_none() {
            deliver(self.query_rows(sql, params)?);
            return Ok(());
        }
        crate::db::conn::mark_written();
        self.send_deferred()?;
        let statement = self.statement(sql)?;
        let values = params.to_vec();
        self.send_ahead(|client| async move {
            let rows = client.query(&statement, &as_params(&values)).await?;
            let count = rows.len() as u64;
            deliver(rows);
            Ok(count)
        });
        Ok(())
    }

    /// Sends the request `request` makes on the driver's client without
    /// waiting for its answer (`driver::Driver::send`).
    fn send_ahead<F>(&self, request: impl FnOnce(std::sync::Arc<tokio_postgres::Client>) -> F)
    where
        F: std::future::Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'static,
    {
        let mut inner = self.inner.borrow_mut();
        let client = std::sync::Arc::clone(inner.driver.client());
        inner.driver.send(Box::pin(request(client)));
    }

    /// Reads the answers of the statements sent ahead that no call has read
    /// yet: the first failure among them, if any (a round trip only when
    /// some are unread).
    pub fn settle_ahead(&self) -> Result<()> {
        let mut inner = self.inner.borrow_mut();
        if !inner.driver.has_unanswered() {
            return Ok(());
        }
        inner
            .driver
            .settle()
            .inspect_err(|_| crate::db::conn::mark_written())?;
        self.answered.set(std::time::Instant::now());
        Ok(())
    }

    /// Whether a call's error since the last call of this one was the
    /// failure of a statement sent ahead ([`Client::execute_ahead`]): the
    /// writer then fails the write that sent it, not its own step.
    pub fn take_failed_ahead(&self) -> bool {
        self.inner.borrow_mut().driver.take_failed_ahead()
    }

    /// Runs one statement and reads all its rows.
    pub fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let rows = self.query_rows(sql, params)?;
        rows.iter()
            .map(|row| {
                let values = (0..row.len())
                    .map(|i| row.try_get::<_, Value>(i))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Row { values })
            })
            .collect()
    }

    /// Runs one statement and answers its rows as the driver holds them
    /// (read with [`value_ref`], borrowing each column).
    pub fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<tokio_postgres::Row>> {
        self.run(sql, async |client, statement| {
            client.query(statement, &as_params(params)).await
        })
    }

    /// The first row of a statement's result, if it has one.
    pub fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Runs statements separated by `;`, with no parameters and no
    /// placeholder rewrite (the schema, `BEGIN`/`COMMIT`, `SET`).
    pub fn batch_execute(&self, sql: &str) -> Result<()> {
        let sql = self.with_deferred(sql);
        self.wait(async |client| client.batch_execute(&sql).await)
            .inspect_err(|_| crate::db::conn::mark_written())
    }

    /// Runs statements separated by `;` as [`Client::batch_execute`] does
    /// (one round trip), answering the first column of the first row any of
    /// them returned, as text.
    pub fn batch_first(&self, sql: &str) -> Result<Option<String>> {
        let sql = self.with_deferred(sql);
        let messages = self
            .wait(async |client| client.simple_query(&sql).await)
            .inspect_err(|_| crate::db::conn::mark_written())?;
        Ok(messages.iter().find_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(String::from),
            _ => None,
        }))
    }

    /// Begins a writing transaction (`Conn::begin_writing`): `BEGIN`, then
    /// the `change_log` row's lock, the count of writing transactions it
    /// brings `commits` to and the change log's head, with
    /// `quayside.counted` set for the tables' triggers. One round trip: the
    /// `BEGIN` (with whatever [`Client::defer`] held back) is sent ahead of
    /// the prepared `UPDATE`, so nothing is parsed or planned per
    /// transaction.
    pub fn begin_counted(&self) -> Result<Counted> {
        self.begin_counted_ahead()?;
        self.confirm_begun()
    }

    /// [`Client::begin_counted`] without waiting: both statements are sent
    /// ahead, and what they answer is read with the next statement waited
    /// for ([`Client::begun`], [`Client::confirm_begun`]). The writer's
    /// first write then reaches the server in the same round trip as its
    /// `BEGIN`. Anywhere but in the writer's transaction, the `UPDATE` is
    /// waited for at once.
    pub fn begin_counted_ahead(&self) -> Result<()> {
        *self.begun.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let begin = self.with_deferred("BEGIN").into_owned();
        self.send_ahead(|client| async move { client.batch_execute(&begin).await.map(|()| 0) });
        let begun = std::sync::Arc::clone(&self.begun);
        self.query_ahead(BEGIN_COUNTED, &[], move |rows| {
            *begun.lock().unwrap_or_else(|e| e.into_inner()) = Some(counted(rows.first()));
        })
        .inspect_err(|_| crate::db::conn::mark_written())
    }

    /// What [`Client::begin_counted_ahead`]'s statements answered, if their
    /// answer was read already (taken: it is answered once).
    pub fn begun(&self) -> Option<Counted> {
        self.begun.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// What [`Client::begin_counted_ahead`]'s statements answered, waiting
    /// for it (with every statement sent ahead) if it is not read yet.
    pub fn confirm_begun(&self) -> Result<Counted> {
        if let Some(begun) = self.begun() {
            return Ok(begun);
        }
        self.settle_ahead()?;
        self.begun().ok_or(Error::Closed)
    }

    /// The payloads of the notifications (`LISTEN`) that arrive within
    /// `wait`, or are already there: empty when none came.
    pub fn notifications(&self, wait: std::time::Duration) -> Result<Vec<String>> {
        let mut inner = self.inner.borrow_mut();
        let mut payloads = Vec::new();
        if let Some(first) = inner.driver.notification(wait)? {
            payloads.push(first.payload().to_string());
            for next in inner.driver.more_notifications()? {
                payloads.push(next.payload().to_string());
            }
        }
        Ok(payloads)
    }

    /// Whether the server answered a statement on this connection within
    /// `within` (a pool skips its liveness round trip for such a one).
    pub fn answered_within(&self, within: std::time::Duration) -> bool {
        self.answered.get().elapsed() < within
    }

    /// Runs `f` inside `BEGIN` … `COMMIT`, rolling back if it fails.
    pub fn transaction<T>(&self, f: impl FnOnce(&Client) -> Result<T>) -> Result<T> {
        self.batch_execute("BEGIN")?;
        match f(self) {
            Ok(value) => {
                self.batch_execute("COMMIT")?;
                Ok(value)
            }
            Err(error) => {
                // A lost connection has rolled back already: the first error
                // is the one that matters.
                self.forget_sent_ahead();
                let _ = self.batch_execute("ROLLBACK");
                Err(error)
            }
        }
    }

    /// Refuses a database whose collation is not C: text must sort bytewise,
    /// as on SQLite (the lists' order and cursors). Checked by the
    /// collation's name and by an order that only C gives (`'B' < 'a'`).
    pub fn check_collation(&self) -> Result<()> {
        let row = self.query_row(
            "SELECT datcollate::text, ('B' < 'a') FROM pg_database \
             WHERE datname = current_database()",
            &[],
        )?;
        let (name, bytewise) = match row.as_ref().map(Row::values) {
            Some([Value::Text(name), Value::Integer(b)]) => (name.clone(), *b == 1),
            _ => (String::from("unknown"), false),
        };
        if matches!(name.as_str(), "C" | "POSIX") && bytewise {
            Ok(())
        } else {
            Err(Error::Collation { found: name })
        }
    }

    /// How many columns `sql`'s rows have (its prepared statement's
    /// description; prepared now if it is not cached).
    pub fn column_count(&self, sql: &str) -> Result<usize> {
        self.send_deferred()?;
        Ok(self.statement(sql)?.columns().len())
    }

    /// Statements in the cache now.
    pub fn cached_statements(&self) -> usize {
        self.inner.borrow().statements.len()
    }

    /// Statements prepared (cache misses) since the connection was made.
    pub fn prepared_statements(&self) -> u64 {
        self.inner.borrow().prepared
    }

    /// Whether the connection is known to be gone.
    pub fn is_closed(&self) -> bool {
        self.inner.borrow().driver.client().is_closed()
    }

    /// `sql`'s prepared statement, then `f` with the driver's client and it.
    /// A statement that may change rows, or one that fails (which leaves the
    /// transaction to be rolled back), is noted for the writer
    /// (`conn::take_written`).
    fn run<T>(
        &self,
        sql: &str,
        f: impl AsyncFnOnce(
            &tokio_postgres::Client,
            &tokio_postgres::Statement,
        ) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T> {
        if may_write(sql) {
            crate::db::conn::mark_written();
        }
        self.prepared_then(sql, f)
            .inspect_err(|_| crate::db::conn::mark_written())
    }

    fn prepared_then<T>(
        &self,
        sql: &str,
        f: impl AsyncFnOnce(
            &tokio_postgres::Client,
            &tokio_postgres::Statement,
        ) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T> {
        self.send_deferred()?;
        let statement = self.statement(sql)?;
        self.wait(async |client| f(client, &statement).await)
            .inspect_err(|error| {
                // 0A000 "cached plan must not change result type": the table
                // changed under the statement; the next use prepares it anew.
                if error.code()
                    == Some(tokio_postgres::error::SqlState::FEATURE_NOT_SUPPORTED.code())
                {
                    self.inner.borrow_mut().statements.remove(sql);
                }
            })
    }

    /// `sql`'s prepared statement: from the cache, or rewritten and prepared
    /// now (a round trip).
    fn statement(&self, sql: &str) -> Result<tokio_postgres::Statement> {
        let mut inner = self.inner.borrow_mut();
        let inner = &mut *inner;
        inner.uses += 1;
        let now = inner.uses;
        if let Some(cached) = inner.statements.get_mut(sql) {
            cached.last_used = now;
            return Ok(cached.statement.clone());
        }
        let rewritten = placeholders::rewrite(sql).map_err(|source| Error::Placeholder {
            sql: sql.to_owned(),
            source,
        })?;
        let client = std::sync::Arc::clone(inner.driver.client());
        let statement = inner.driver.wait(client.prepare(&rewritten.sql))?;
        self.answered.set(std::time::Instant::now());
        inner.prepared += 1;
        if inner.statements.len() >= STATEMENT_CACHE {
            let oldest = inner
                .statements
                .iter()
                .min_by_key(|(_, cached)| cached.last_used)
                .map(|(text, _)| text.clone());
            if let Some(oldest) = oldest {
                inner.statements.remove(&oldest);
            }
        }
        inner.statements.insert(
            sql.to_owned(),
            Cached {
                statement: statement.clone(),
                last_used: now,
            },
        );
        Ok(statement)
    }
}

/// Closing a connection blocks on the driver's own runtime, which may not
/// happen on a thread that drives another runtime (a pool's connection may be
/// dropped anywhere, the server's last handle inside its runtime): there, the
/// connection is closed by a thread of its own.
impl Drop for Client {
    fn drop(&mut self) {
        let inner = self.inner.get_mut();
        // The statements close through the driver's client: dropped first.
        inner.statements.clear();
        // SAFETY: `driver` is taken once, here, and never used again.
        let driver = unsafe { std::mem::ManuallyDrop::take(&mut inner.driver) };
        if tokio::runtime::Handle::try_current().is_ok() {
            let _ = std::thread::Builder::new()
                .name("quayside-pg-close".into())
                .spawn(move || drop(driver));
        } else {
            drop(driver);
        }
    }
}

/// Whether a statement may change rows: any but a `SELECT` (the writer's
/// test of whether a write that failed left anything to undo,
/// `conn::take_written`).
fn may_write(sql: &str) -> bool {
    !sql.trim_start()
        .get(..6)
        .is_some_and(|verb| verb.eq_ignore_ascii_case("select"))
}

fn as_params(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}
