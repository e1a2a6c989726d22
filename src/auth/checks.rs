//! The bound on password checks. PBKDF2 is deliberately slow (about 95 ms of
//! one core at the default work factor), so a crowd of logins could take every
//! core from the requests already signed in. At most `--login-checks` run at
//! once, each on the blocking pool (never on the async workers); at most
//! `--login-queue` more wait for a turn, and a login beyond that is answered
//! 503 with `Retry-After` at once instead of queueing without bound.
//!
//! Waiting logins take their turns by the standing of their address (see
//! [`Standing`]): addresses that logged in lately first, then addresses the
//! server knows nothing about, then addresses with a recent failed login; and
//! when the queue is full, a login gives its place up (503) to one of a better
//! standing. So a crowd of wrong passwords cannot keep an account's owner, at
//! an address that has not failed, from a turn. One check more than the limit
//! is kept for addresses that logged in lately ([`RESERVED_FOR_TRUSTED`]), so
//! their logins do not even wait for a check already running.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::error::{ApiError, ApiResult};

/// What a busy server tells a login to wait, in seconds.
const RETRY_AFTER_SECS: u64 = 1;

/// `--login-checks`' default: half the cores, at least one, so that password
/// checks never take every core from the requests of signed-in clients.
pub fn default_checks() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// Checks beyond `--login-checks` that only logins from addresses of
/// [`Standing::Trusted`] may run.
pub const RESERVED_FOR_TRUSTED: usize = 1;

/// `--login-queue`'s default.
pub const DEFAULT_QUEUE: usize = 16;

/// How a login's address stands, best first: the order of turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Standing {
    /// A login succeeded from it lately, and none failed since.
    Trusted = 0,
    /// Nothing known.
    Unknown = 1,
    /// A login failed from it within the lockout window.
    Suspect = 2,
}

#[derive(Clone)]
pub struct PasswordChecks {
    inner: Arc<Inner>,
}

struct Inner {
    limit: usize,
    queue: usize,
    state: Mutex<Turns>,
}

#[derive(Default)]
struct Turns {
    running: usize,
    /// Waiting logins, by [`Standing`].
    waiting: [VecDeque<oneshot::Sender<Turn>>; 3],
}

impl Turns {
    fn queued(&self) -> usize {
        self.waiting.iter().map(VecDeque::len).sum()
    }
}

/// The right to run one check; handed to the next waiter when dropped.
pub struct Turn {
    inner: Arc<Inner>,
    /// False for a turn that was never taken (its waiter had gone).
    held: bool,
}

impl Turn {
    /// Runs `check` on the blocking pool, holding the turn until it ends,
    /// even if the request is dropped meanwhile.
    pub async fn run<T: Send + 'static>(
        self,
        check: impl FnOnce() -> T + Send + 'static,
    ) -> ApiResult<T> {
        tokio::task::spawn_blocking(move || {
            let out = check();
            drop(self);
            out
        })
        .await
        .map_err(ApiError::internal)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if self.held {
            self.inner.pass_on();
        }
    }
}

impl Inner {
    fn turns(&self) -> std::sync::MutexGuard<'_, Turns> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many checks may run for a login of `standing`.
    fn cap(&self, standing: Standing) -> usize {
        if standing == Standing::Trusted {
            self.limit + RESERVED_FOR_TRUSTED
        } else {
            self.limit
        }
    }

    /// A check ended: waiters whose standing may run now do, best first.
    fn pass_on(self: &Arc<Self>) {
        let mut turns = self.turns();
        turns.running -= 1;
        loop {
            let running = turns.running;
            let next = [Standing::Trusted, Standing::Unknown, Standing::Suspect]
                .into_iter()
                .filter(|&standing| running < self.cap(standing))
                .find_map(|standing| turns.waiting[standing as usize].pop_front());
            let Some(waiter) = next else { return };
            turns.running += 1;
            let turn = Turn {
                inner: self.clone(),
                held: true,
            };
            if let Err(mut unused) = waiter.send(turn) {
                // That login is gone (its client hung up): the next one.
                unused.held = false;
                turns.running -= 1;
            }
        }
    }
}

impl PasswordChecks {
    pub fn new(limit: usize, queue: usize) -> PasswordChecks {
        PasswordChecks {
            inner: Arc::new(Inner {
                limit: limit.max(1),
                queue,
                state: Mutex::default(),
            }),
        }
    }

    /// Runs `check` on the blocking pool when its turn comes; a busy error
    /// when the queue is full (or this login gave its place up).
    pub async fn run<T: Send + 'static>(
        &self,
        standing: Standing,
        check: impl FnOnce() -> T + Send + 'static,
    ) -> ApiResult<T> {
        self.turn(standing).await?.run(check).await
    }

    /// Waits for a turn to check a password; a busy error when the queue is
    /// full (or this login gave its place up to a better one).
    pub async fn turn(&self, standing: Standing) -> ApiResult<Turn> {
        let busy = || ApiError::Busy {
            limit: format!(
                "{} password checks at once and {} waiting",
                self.inner.limit, self.inner.queue
            ),
            retry_after_secs: RETRY_AFTER_SECS,
        };
        let waiting = {
            let mut turns = self.inner.turns();
            let queued = turns.queued();
            let ahead = turns.waiting[..=standing as usize]
                .iter()
                .any(|w| !w.is_empty());
            if turns.running < self.inner.cap(standing) && !ahead {
                turns.running += 1;
                return Ok(Turn {
                    inner: self.inner.clone(),
                    held: true,
                });
            }
            if queued >= self.inner.queue {
                // The newest waiter of the worst standing below this one's
                // is answered busy (its sender dropped), else this one is.
                let worse = turns.waiting[standing as usize + 1..]
                    .iter_mut()
                    .rev()
                    .find(|w| !w.is_empty())
                    .ok_or_else(busy)?;
                worse.pop_back();
            }
            let (tx, rx) = oneshot::channel();
            turns.waiting[standing as usize].push_back(tx);
            rx
        };
        waiting.await.map_err(|_| busy())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use crate::test_support::until;

    /// Starts a check that runs until the returned sender is used or dropped.
    fn blocked(
        checks: &PasswordChecks,
        standing: Standing,
        label: &'static str,
        order: &Arc<Mutex<Vec<&'static str>>>,
    ) -> (mpsc::Sender<()>, tokio::task::JoinHandle<ApiResult<()>>) {
        let (release, wait) = mpsc::channel::<()>();
        let checks = checks.clone();
        let order = order.clone();
        let task = tokio::spawn(async move {
            checks
                .run(standing, move || {
                    order.lock().unwrap().push(label);
                    let _ = wait.recv();
                })
                .await
        });
        (release, task)
    }

    fn queued(checks: &PasswordChecks) -> usize {
        checks.inner.turns().queued()
    }

    fn ran(order: &Arc<Mutex<Vec<&'static str>>>) -> usize {
        order.lock().unwrap().len()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn at_most_the_limit_run_by_standing_and_a_full_queue_is_busy() {
        use Standing::{Suspect, Unknown};
        let checks = PasswordChecks::new(1, 2);
        let order = Arc::new(Mutex::new(Vec::new()));
        let (first, first_task) = blocked(&checks, Suspect, "running", &order);
        until("the first check runs", || ran(&order) == 1).await;
        let (_s1, suspect_task) = blocked(&checks, Suspect, "suspect", &order);
        until("one suspect waits", || queued(&checks) == 1).await;
        let (_s2, evicted_task) = blocked(&checks, Suspect, "suspect 2", &order);
        until("two suspects wait", || queued(&checks) == 2).await;
        // Full: another suspect is busy at once ...
        let refused = checks.run(Suspect, || ()).await;
        assert!(matches!(refused, Err(ApiError::Busy { .. })), "{refused:?}");
        // ... while an unknown one takes the newest suspect's place.
        let (u1, unknown_task) = blocked(&checks, Unknown, "unknown", &order);
        let evicted = evicted_task.await.unwrap();
        assert!(matches!(evicted, Err(ApiError::Busy { .. })), "{evicted:?}");
        let (u2, unknown_too) = blocked(&checks, Unknown, "unknown 2", &order);
        let evicted = suspect_task.await.unwrap();
        assert!(matches!(evicted, Err(ApiError::Busy { .. })), "{evicted:?}");
        // Full of better ones: busy.
        let refused = checks.run(Suspect, || ()).await;
        assert!(matches!(refused, Err(ApiError::Busy { .. })), "{refused:?}");
        let refused = checks.run(Unknown, || ()).await;
        assert!(matches!(refused, Err(ApiError::Busy { .. })), "{refused:?}");
        assert_eq!(*order.lock().unwrap(), ["running"]);
        drop(first);
        first_task.await.unwrap().unwrap();
        until("the next check runs", || ran(&order) == 2).await;
        assert_eq!(*order.lock().unwrap(), ["running", "unknown"]);
        drop(u1);
        unknown_task.await.unwrap().unwrap();
        drop(u2);
        unknown_too.await.unwrap().unwrap();
        assert_eq!(*order.lock().unwrap(), ["running", "unknown", "unknown 2"]);
        // Everything was handed back: the next check runs at once.
        checks.run(Suspect, || ()).await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_trusted_login_has_a_check_of_its_own_beyond_the_limit() {
        let checks = PasswordChecks::new(1, 4);
        let order = Arc::new(Mutex::new(Vec::new()));
        let (busy, busy_task) = blocked(&checks, Standing::Suspect, "suspect", &order);
        until("the suspect's check runs", || ran(&order) == 1).await;
        let (unknown, unknown_task) = blocked(&checks, Standing::Unknown, "unknown", &order);
        until("the unknown one waits", || queued(&checks) == 1).await;
        let (trusted, trusted_task) = blocked(&checks, Standing::Trusted, "trusted", &order);
        until("the trusted check runs", || ran(&order) == 2).await;
        assert_eq!(*order.lock().unwrap(), ["suspect", "trusted"]);
        // Another trusted one waits: one check is reserved, not more.
        let (second, second_task) = blocked(&checks, Standing::Trusted, "second", &order);
        until("the second trusted one waits", || queued(&checks) == 2).await;
        assert_eq!(ran(&order), 2);
        // The trusted check ends: the waiting trusted one takes the reserve
        // (its turn is handed on before its task ends).
        drop(trusted);
        trusted_task.await.unwrap().unwrap();
        until("the second trusted check runs", || ran(&order) == 3).await;
        assert_eq!(*order.lock().unwrap(), ["suspect", "trusted", "second"]);
        drop(second);
        second_task.await.unwrap().unwrap();
        // Only the end of a regular check lets the unknown one run: the
        // reserve handed back, it still waits.
        assert_eq!(queued(&checks), 1);
        assert_eq!(ran(&order), 3);
        drop(busy);
        busy_task.await.unwrap().unwrap();
        drop(unknown);
        unknown_task.await.unwrap().unwrap();
        assert_eq!(order.lock().unwrap()[3], "unknown");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiter_that_went_away_passes_its_turn_on() {
        let checks = PasswordChecks::new(1, 4);
        let order = Arc::new(Mutex::new(Vec::new()));
        let (first, first_task) = blocked(&checks, Standing::Unknown, "first", &order);
        until("the first check runs", || ran(&order) == 1).await;
        let (_gone, gone_task) = blocked(&checks, Standing::Unknown, "gone", &order);
        until("the second one waits", || queued(&checks) == 1).await;
        gone_task.abort();
        assert!(gone_task.await.unwrap_err().is_cancelled());
        let (last, last_task) = blocked(&checks, Standing::Unknown, "last", &order);
        until("the last one waits behind the one gone", || {
            queued(&checks) == 2
        })
        .await;
        drop(first);
        first_task.await.unwrap().unwrap();
        drop(last);
        last_task.await.unwrap().unwrap();
        assert_eq!(*order.lock().unwrap(), ["first", "last"]);
    }
}
