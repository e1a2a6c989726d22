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
//! request takes a ticket, and the [`Position`]'s own thread answers every
//! ticket taken before its query was sent with that query's result. A query
//! sent after a request arrived is what makes the answer valid for it; under
//! load one round trip serves every request that arrived during the previous
//! one. When the database cannot be asked (a lost connection, no answer
//! within [`WAIT`]) the answer is "unknown", and the caller goes to the store.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::{Client, ConnectOptions};

/// The counter's query (autocommit: the latest committed value).
const QUERY: &str = "SELECT commits FROM change_log WHERE id = 1";

/// The longest a request waits for an answer before treating the position as
/// unknown (it then asks the store itself, which has its own timeouts).
const WAIT: Duration = Duration::from_secs(2);

/// After a failed connection attempt, how long requests are answered
/// "unknown" at once rather than each waiting for another attempt.
const RECONNECT_PAUSE: Duration = Duration::from_millis(250);

/// Answers "what is the commit counter now" for many requests at once.
pub struct Position {
    shared: Arc<Shared>,
    answers: watch::Receiver<Answer>,
}

/// The last answer: tickets up to `covered` may use `commits`.
#[derive(Clone, Copy, Debug)]
struct Answer {
    covered: u64,
    commits: Option<i64>,
}

struct Shared {
    /// Tickets handed out so far.
    tickets: AtomicU64,
    /// Guards the thread's sleep (with `wake`), so no ticket is missed.
    pending: Mutex<()>,
    wake: Condvar,
    stop: AtomicBool,
    /// Queries sent since the start (tests check that requests share them).
    queries: AtomicU64,
}

impl Position {
    /// Starts the thread that asks; its connection is made on first demand.
    pub fn start(options: ConnectOptions) -> std::io::Result<Position> {
        let shared = Arc::new(Shared {
            tickets: AtomicU64::new(0),
            pending: Mutex::new(()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            queries: AtomicU64::new(0),
        });
        let (send, answers) = watch::channel(Answer {
            covered: 0,
            commits: None,
        });
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("quayside-position".into())
            .spawn(move || ask(&thread_shared, &options, &send))?;
        Ok(Position { shared, answers })
    }

    /// The counter as read by a query sent after this call began; `None`
    /// when it could not be read.
    pub async fn commits(&self) -> Option<i64> {
        let ticket = self.shared.tickets.fetch_add(1, Ordering::SeqCst) + 1;
        self.shared.nudge();
        let mut answers = self.answers.clone();
        let waited = tokio::time::timeout(WAIT, answers.wait_for(|a| a.covered >= ticket)).await;
        match waited {
            Ok(Ok(answer)) => answer.commits,
            _ => None,
        }
    }

    /// Queries sent so far.
    pub fn queries(&self) -> u64 {
        self.shared.queries.load(Ordering::Relaxed)
    }
}

impl Drop for Position {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.nudge();
    }
}

impl Shared {
    /// Wakes the thread (a new ticket, or the stop), under the lock its sleep
    /// checks the tickets under, so no wake-up falls between its check and
    /// its sleep.
    fn nudge(&self) {
        let _guard = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        self.wake.notify_one();
    }
}

/// The thread: waits for tickets, then answers all taken so far with one query.
fn ask(shared: &Shared, options: &ConnectOptions, send: &watch::Sender<Answer>) {
    let mut client: Option<Client> = None;
    let mut covered = 0;
    loop {
        {
            let mut guard = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
            while shared.tickets.load(Ordering::SeqCst) <= covered {
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                guard = shared.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
            }
        }
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        // Every ticket taken up to here was taken before the query is sent.
        covered = shared.tickets.load(Ordering::SeqCst);
        if client.as_ref().is_none_or(Client::is_closed) {
            client = match Client::connect(options) {
                Ok(made) => Some(made),
                Err(err) => {
                    log::warn!("cannot read the commit position (caches bypassed): {err}");
                    send.send_replace(Answer {
                        covered,
                        commits: None,
                    });
                    std::thread::sleep(RECONNECT_PAUSE);
                    // Tickets taken during the pause are answered "unknown" too:
                    // none of them may wait on a connection that is not there.
                    covered = shared.tickets.load(Ordering::SeqCst);
                    send.send_replace(Answer {
                        covered,
                        commits: None,
                    });
                    continue;
                }
            };
        }
        shared.queries.fetch_add(1, Ordering::Relaxed);
        let commits =
            client
                .as_ref()
                .map(|c| c.query_row(QUERY, &[]))
                .and_then(|read| match read {
                    Ok(Some(row)) => match row.get(0) {
                        Some(super::Value::Integer(n)) => Some(*n),
                        _ => None,
                    },
                    Ok(None) => None,
                    Err(err) => {
                        log::warn!("cannot read the commit position (caches bypassed): {err}");
                        client = None;
                        None
                    }
                });
        send.send_replace(Answer { covered, commits });
    }
}
