//! The commit position of a PostgreSQL database, for the in-memory caches
//! (sessions, location reads): what `db::stamp` reads from the `-shm` file on
//! SQLite.
//!
//! Every writing transaction of every process increments
//! `change_log.commits` (`Conn::begin_writing`, `migrate`), so the counter read
//! after a moment is a position that any commit acknowledged before that
//! moment has moved. A cache entry read at position P is served while the
//! counter still reads P, which makes the caches as strict on several
//! processes as on one file: a logout through one process is refused by the
//! other on its very next request.
//!
//! Reading the counter costs a round trip, so many requests share one: a
//! request takes a ticket; the first to find no query out sends one for
//! every ticket taken so far, on the server's own runtime (the connection is
//! a task of that runtime: no thread of its own, no second runtime, no
//! condvar), and publishes the answer to every ticket it covers. A query
//! sent after a request arrived is what makes the answer valid for it; under
//! load one round trip serves every request that arrived during the previous
//! one. A request dropped while it asks hands the asking on to those
//! waiting. When the database cannot be asked (a lost connection, no answer
//! within [`WAIT`]) the answer is "unknown", and the caller goes to the
//! store.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::{ConnectOptions, tls};
use crate::db::stamp::{Stamp, Tables};

/// The counters' query (autocommit: the latest committed values): every
/// writing transaction's count, then each counted group's
/// (`Tables::COUNTED`, in its order: `pg/group_commits.sql`), which the
/// caches of that group compare (`Db::same`).
fn query() -> String {
    let mut columns = vec!["commits"];
    columns.extend(Tables::COUNTED.iter().map(|(_, column)| *column));
    format!("SELECT {} FROM change_log WHERE id = 1", columns.join(", "))
}

/// The longest a request waits for an answer before treating the position as
/// unknown (it then asks the store itself, which has its own timeouts).
const WAIT: Duration = Duration::from_secs(2);

/// After a failed connection attempt, how long requests are answered
/// "unknown" at once rather than each waiting for another attempt.
const RECONNECT_PAUSE: Duration = Duration::from_millis(250);

/// The last answer: tickets up to `covered` may use `commits`.
#[derive(Clone, Copy, Debug)]
struct Answer {
    covered: u64,
    stamp: Option<Stamp>,
}

/// Answers "what is the commit counter now" for many requests at once.
pub struct Position {
    options: ConnectOptions,
    /// Tickets handed out so far.
    tickets: AtomicU64,
    /// Whether a request is asking now (its query out).
    asking: AtomicBool,
    answers: watch::Sender<Answer>,
    /// The connection the askers use, one at a time.
    link: Mutex<Link>,
    /// Queries sent since the start (tests check that requests share them).
    queries: AtomicU64,
}

enum Link {
    /// Not connected yet, or the connection was lost.
    None,
    Up(Arc<tokio_postgres::Client>, tokio_postgres::Statement),
    /// A connection attempt failed: none is made again before this.
    Down(Instant),
}

impl Position {
    /// A position read through a connection made on first demand, on the
    /// runtime of the request that needs it.
    pub fn new(options: ConnectOptions) -> Position {
        let (answers, _) = watch::channel(Answer {
            covered: 0,
            stamp: None,
        });
        Position {
            options,
            tickets: AtomicU64::new(0),
            asking: AtomicBool::new(false),
            answers,
            link: Mutex::new(Link::None),
            queries: AtomicU64::new(0),
        }
    }

    /// The counters as read by a query sent after this call began; `None`
    /// when they could not be read.
    pub async fn stamp(&self) -> Option<Stamp> {
        let ticket = self.tickets.fetch_add(1, Ordering::SeqCst) + 1;
        let mut answers = self.answers.subscribe();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            // Seen before `asking` is read: an answer sent after this wakes
            // `changed` below.
            let answer = *answers.borrow_and_update();
            if answer.covered >= ticket {
                return answer.stamp;
            }
            if !self.asking.swap(true, Ordering::SeqCst) {
                let asking = Asking(self);
                // Every ticket taken up to here was taken before the query
                // is sent.
                let covered = self.tickets.load(Ordering::SeqCst);
                let stamp = tokio::time::timeout_at(deadline, self.ask())
                    .await
                    .unwrap_or(None);
                asking.answer(Answer { covered, stamp });
                return stamp;
            }
            match tokio::time::timeout_at(deadline, answers.changed()).await {
                Ok(Ok(())) => {}
                _ => return None,
            }
        }
    }

    /// Queries sent so far.
    pub fn queries(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }
}

/// The asking request's hold on `asking`: released with its answer, or
/// without one if the request is dropped mid-way (another then asks).
struct Asking<'a>(&'a Position);

impl Asking<'_> {
    fn answer(self, answer: Answer) {
        let position = self.0;
        std::mem::forget(self);
        // Released before the answer is sent: a request that still finds
        // `asking` set has seen the answer before it, and `changed` wakes it.
        position.asking.store(false, Ordering::SeqCst);
        position.answers.send_replace(answer);
    }
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        self.0.asking.store(false, Ordering::SeqCst);
        // Wakes the waiting requests, one of which asks instead.
        self.0.answers.send_modify(|_| {});
    }
}

impl Position {
    /// One query on the connection, made now if there is none.
    async fn ask(&self) -> Option<Stamp> {
        let (client, statement) = self.link().await?;
        self.queries.fetch_add(1, Ordering::Relaxed);
        match client.query_opt(&statement, &[]).await {
            Ok(row) => row.and_then(|row| {
                let mut groups = [0; Tables::COUNTED.len()];
                for (i, count) in groups.iter_mut().enumerate() {
                    *count = row.try_get::<_, i64>(i + 1).ok()?;
                }
                Some(Stamp::Commits {
                    all: row.try_get::<_, i64>(0).ok()?,
                    groups,
                })
            }),
            Err(err) => {
                log::warn!("cannot read the commit position (caches bypassed): {err}");
                *self.link.lock().unwrap_or_else(|e| e.into_inner()) = Link::None;
                None
            }
        }
    }

    async fn link(&self) -> Option<(Arc<tokio_postgres::Client>, tokio_postgres::Statement)> {
        {
            let link = self.link.lock().unwrap_or_else(|e| e.into_inner());
            match &*link {
                Link::Up(client, statement) if !client.is_closed() => {
                    return Some((client.clone(), statement.clone()));
                }
                Link::Down(until) if Instant::now() < *until => return None,
                _ => {}
            }
        }
        match self.connect().await {
            Ok((client, statement)) => {
                let client = Arc::new(client);
                *self.link.lock().unwrap_or_else(|e| e.into_inner()) =
                    Link::Up(client.clone(), statement.clone());
                Some((client, statement))
            }
            Err(err) => {
                log::warn!("cannot read the commit position (caches bypassed): {err}");
                *self.link.lock().unwrap_or_else(|e| e.into_inner()) =
                    Link::Down(Instant::now() + RECONNECT_PAUSE);
                None
            }
        }
    }

    /// A connection whose driving task runs on the current runtime, and the
    /// query prepared on it.
    async fn connect(&self) -> super::Result<(tokio_postgres::Client, tokio_postgres::Statement)> {
        let tls = tls::MakeRustlsConnect::new(&self.options)?;
        let (client, connection) = self.options.config.connect(tls).await?;
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                log::debug!("the commit position's connection ended: {err}");
            }
        });
        let statement = client.prepare(&query()).await?;
        Ok((client, statement))
    }
}
