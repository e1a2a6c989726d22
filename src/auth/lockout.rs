//! What a failed login costs, and whom. A stranger must not be able to lock an
//! account's owner out, so the contract's lockout (5 failures for a username
//! within 5 minutes: 429 with `Retry-After` until the window passes) counts
//! failures per username *and client address*: it stops the client that
//! failed, not the right password from everywhere else. Across addresses a
//! username is only slowed down: once it has more than 5 failures in the
//! window from all addresses together, every further failed attempt on it is
//! answered later (250 ms more per failure, at most 5 s); the right password
//! is never delayed. Each address also has a budget of failed logins per
//! minute, over all usernames (`--login-failures-per-minute`), so one client
//! cannot spray guesses over many names.
//!
//! Kept in memory: a restart clears it, which an attacker cannot cause, and it
//! keeps failed logins from turning into writes. `quayside user unlock NAME`,
//! a process of its own, reaches a running server through a file beside the
//! data file ([`unlock_requests_path`]): one username per line, appended; the
//! server reads what was added when a login would be refused or slowed.
//!
//! On PostgreSQL several server processes may serve one database, and a
//! client's attempts may reach any of them: there the failures that lock a
//! (username, address) pair are rows of the UNLOGGED table `login_failures`
//! ([`shared`]), written through the writer before the 401 is answered and
//! counted at every login, so the lock counts across processes and `quayside
//! user unlock` deletes rows instead of writing the file. The username's
//! slowdown counts the same rows (its failures from every address); the
//! address's budget stays in each process's memory.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Seek, SeekFrom};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::checks::Standing;
use crate::error::{ApiError, ApiResult, Throttle};

/// Failures of one username from one address that lock that pair.
pub const MAX_FAILURES: usize = 5;
/// How long a failure counts.
pub const WINDOW: Duration = Duration::from_secs(5 * 60);
/// What each failure of a username past [`MAX_FAILURES`] (from all addresses)
/// adds to the answer of the next failed attempt on it.
pub const SLOWDOWN_STEP: Duration = Duration::from_millis(250);
/// The longest a failed attempt is slowed down.
pub const SLOWDOWN_MAX: Duration = Duration::from_secs(5);
/// How long an address that logged in stays [`Standing::Trusted`] (unless a
/// login fails from it).
pub const TRUSTED_FOR: Duration = Duration::from_secs(24 * 3600);
/// Past this many tracked entries of a kind, stale ones are swept.
const SWEEP_ABOVE: usize = 10_000;

/// The file through which `quayside user unlock` reaches a running server:
/// the data file's name with `-unlock` appended (like SQLite's `-wal`).
pub fn unlock_requests_path(data: &Path) -> PathBuf {
    let mut name = data.as_os_str().to_owned();
    name.push("-unlock");
    PathBuf::from(name)
}

/// Where a login comes from: the client's IPv4 address, or the /64 network of
/// its IPv6 address (one host commonly holds a whole /64).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct Source(IpAddr);

impl Source {
    /// `None` (a caller without a socket) is one source of its own.
    pub fn of(address: Option<IpAddr>) -> Source {
        Source(match address {
            None => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let network = u128::from(v6) & !((1u128 << 64) - 1);
                    IpAddr::V6(Ipv6Addr::from(network))
                }
            },
            Some(v4) => v4,
        })
    }
}

/// An address's budget of failed logins, its last failure and its last
/// success.
struct Budget {
    tokens: f64,
    refilled_at: Instant,
    last_failure: Option<Instant>,
    last_success: Option<Instant>,
}

impl Budget {
    fn new(failures_per_minute: u32, now: Instant) -> Budget {
        Budget {
            tokens: f64::from(failures_per_minute),
            refilled_at: now,
            last_failure: None,
            last_success: None,
        }
    }

    fn standing(&self, now: Instant) -> Standing {
        let within =
            |t: Option<Instant>, span| t.is_some_and(|t| now.saturating_duration_since(t) < span);
        let failed_since_success = match (self.last_failure, self.last_success) {
            (Some(failure), Some(success)) => failure >= success,
            (failure, _) => failure.is_some(),
        };
        if within(self.last_failure, WINDOW) && failed_since_success {
            Standing::Suspect
        } else if within(self.last_success, TRUSTED_FOR) {
            Standing::Trusted
        } else {
            Standing::Unknown
        }
    }
}

#[derive(Default)]
struct State {
    /// Recent failures per (username, source).
    pairs: HashMap<(String, Source), VecDeque<Instant>>,
    /// Recent failures per username, from every source.
    names: HashMap<String, VecDeque<Instant>>,
    sources: HashMap<Source, Budget>,
    /// How far the unlock requests file has been read.
    unlocks_read: u64,
    /// Entries of a kind past which stale ones are swept: [`SWEEP_ABOVE`],
    /// or twice what a sweep left, so sweeps stay rare however many are live.
    sweep_above: usize,
}

impl State {
    /// Sweeps stale entries when there are many.
    fn tidy(&mut self, now: Instant, failures_per_minute: u32) {
        let most = self
            .pairs
            .len()
            .max(self.names.len())
            .max(self.sources.len());
        if most > self.sweep_above.max(SWEEP_ABOVE) {
            sweep(self, now, failures_per_minute);
            let left = self
                .pairs
                .len()
                .max(self.names.len())
                .max(self.sources.len());
            self.sweep_above = left * 2;
        }
    }
}

pub struct Lockout {
    state: Mutex<State>,
    /// Failed logins an address may make per minute (0: no limit).
    failures_per_minute: u32,
    unlocks: Option<PathBuf>,
    /// The pairs' failures are counted in the store ([`shared`]), not here.
    shared_pairs: bool,
}

impl Default for Lockout {
    fn default() -> Self {
        Lockout::new(DEFAULT_FAILURES_PER_MINUTE, None)
    }
}

/// `--login-failures-per-minute`'s default.
pub const DEFAULT_FAILURES_PER_MINUTE: u32 = 20;

/// One login attempt let through: settle it with [`Attempt::failed`] or
/// [`Attempt::succeeded`]. An attempt dropped unsettled (a busy server, an
/// error) gives its address's budget back.
pub struct Attempt<'a> {
    lockout: &'a Lockout,
    username: String,
    source: Source,
    /// How the address stands: the order of its password check's turn.
    pub standing: Standing,
    settled: bool,
}

impl Attempt<'_> {
    /// Records the failure; answer it after the returned delay (the
    /// username's slowdown).
    pub fn failed(self) -> Duration {
        self.failed_at(Instant::now())
    }

    fn failed_at(mut self, now: Instant) -> Duration {
        self.settled = true;
        self.lockout.failed_at(&self.username, self.source, now)
    }

    pub fn succeeded(self) {
        self.succeeded_at(Instant::now());
    }

    fn succeeded_at(mut self, now: Instant) {
        self.settled = true;
        let mut state = self.lockout.lock();
        state.pairs.remove(&(self.username.clone(), self.source));
        self.lockout.refund(&mut state, self.source);
        state
            .sources
            .entry(self.source)
            .or_insert_with(|| Budget::new(self.lockout.failures_per_minute, now))
            .last_success = Some(now);
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        if !self.settled {
            let mut state = self.lockout.lock();
            self.lockout.refund(&mut state, self.source);
        }
    }
}

impl Lockout {
    /// `unlocks`: the file `quayside user unlock` appends to; what it holds
    /// already is old news.
    pub fn new(failures_per_minute: u32, unlocks: Option<PathBuf>) -> Lockout {
        let unlocks_read = unlocks
            .as_deref()
            .and_then(|path| std::fs::metadata(path).ok())
            .map_or(0, |meta| meta.len());
        Lockout {
            state: Mutex::new(State {
                unlocks_read,
                ..State::default()
            }),
            failures_per_minute,
            unlocks,
            shared_pairs: false,
        }
    }

    /// A lockout whose (username, address) failures are counted in the
    /// store by the caller ([`shared`]; PostgreSQL, where several processes
    /// serve one database): [`Lockout::admit`] does not lock pairs itself.
    pub fn shared(failures_per_minute: u32) -> Lockout {
        Lockout {
            shared_pairs: true,
            ..Lockout::new(failures_per_minute, None)
        }
    }

    /// Whether the pairs' failures are counted in the store ([`shared`]).
    pub fn counts_in_store(&self) -> bool {
        self.shared_pairs
    }

    /// Lets a login attempt through, or refuses it with 429: the pair is
    /// locked, or the address has spent its budget of failures.
    pub fn admit(&self, username: &str, source: Source) -> ApiResult<Attempt<'_>> {
        self.admit_at(username, source, Instant::now())
    }

    fn admit_at(&self, username: &str, source: Source, now: Instant) -> ApiResult<Attempt<'_>> {
        let mut state = self.lock();
        state.tidy(now, self.failures_per_minute);
        let pair = (username.to_string(), source);
        if !self.shared_pairs && locked_for(&mut state, &pair, now).is_some() {
            self.read_unlock_requests(&mut state);
            if let Some(wait) = locked_for(&mut state, &pair, now) {
                return Err(ApiError::TooManyRequests {
                    retry_after_secs: whole_seconds(wait),
                    reason: Throttle::FailedLogins,
                });
            }
        }
        let per_minute = self.failures_per_minute;
        let budget = state
            .sources
            .entry(source)
            .or_insert_with(|| Budget::new(per_minute, now));
        if per_minute > 0 {
            let rate = f64::from(per_minute) / 60.0;
            let elapsed = now.saturating_duration_since(budget.refilled_at);
            budget.tokens =
                (budget.tokens + elapsed.as_secs_f64() * rate).min(f64::from(per_minute));
            budget.refilled_at = now;
            if budget.tokens < 1.0 {
                let wait = Duration::from_secs_f64((1.0 - budget.tokens) / rate);
                return Err(ApiError::TooManyRequests {
                    retry_after_secs: whole_seconds(wait),
                    reason: Throttle::Address,
                });
            }
            budget.tokens -= 1.0;
        }
        let standing = budget.standing(now);
        Ok(Attempt {
            lockout: self,
            username: pair.0,
            source,
            standing,
            settled: false,
        })
    }

    fn failed_at(&self, username: &str, source: Source, now: Instant) -> Duration {
        let mut state = self.lock();
        state.tidy(now, self.failures_per_minute);
        let pair = state
            .pairs
            .entry((username.to_string(), source))
            .or_default();
        push_bounded(pair, now, MAX_FAILURES);
        state
            .sources
            .entry(source)
            .or_insert_with(|| Budget::new(self.failures_per_minute, now))
            .last_failure = Some(now);
        let steps = (SLOWDOWN_MAX.as_millis() / SLOWDOWN_STEP.as_millis()) as usize;
        let names = state.names.entry(username.to_string()).or_default();
        push_bounded(names, now, MAX_FAILURES + steps);
        if recent(names, now) <= MAX_FAILURES {
            return Duration::ZERO;
        }
        // Slowed down: an unlock sent meanwhile ends that too.
        self.read_unlock_requests(&mut state);
        slowdown_after(
            state
                .names
                .get_mut(username)
                .map_or(0, |times| recent(times, now)),
        )
    }

    /// Forgets every failed login of `username`, from every address.
    pub fn unlock(&self, username: &str) {
        let mut state = self.lock();
        unlock(&mut state, username);
    }

    /// Gives an address's budget back for an attempt that did not fail.
    fn refund(&self, state: &mut State, source: Source) {
        let capacity = f64::from(self.failures_per_minute);
        if let Some(budget) = state.sources.get_mut(&source) {
            budget.tokens = (budget.tokens + 1.0).min(capacity);
        }
    }

    /// Applies the usernames `quayside user unlock` appended since the last
    /// look. A few bytes of a small file, read only when a login would be
    /// refused or slowed down.
    fn read_unlock_requests(&self, state: &mut State) {
        let Some(path) = &self.unlocks else { return };
        let Ok(mut file) = std::fs::File::open(path) else {
            return;
        };
        let Ok(len) = file.metadata().map(|m| m.len()) else {
            return;
        };
        if len < state.unlocks_read {
            // Replaced or emptied: read it from the start.
            state.unlocks_read = 0;
        }
        if len == state.unlocks_read || file.seek(SeekFrom::Start(state.unlocks_read)).is_err() {
            return;
        }
        let mut added = Vec::new();
        if file
            .take(len - state.unlocks_read)
            .read_to_end(&mut added)
            .is_err()
        {
            return;
        }
        // Only whole lines: a line still being written is read next time.
        let Some(end) = added.iter().rposition(|&b| b == b'\n') else {
            return;
        };
        state.unlocks_read += end as u64 + 1;
        for name in String::from_utf8_lossy(&added[..end]).lines() {
            let name = name.trim();
            if !name.is_empty() {
                log::info!("login failures of {name} forgotten (quayside user unlock)");
                unlock(state, name);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn unlock(state: &mut State, username: &str) {
    state.pairs.retain(|(name, _), _| name != username);
    state.names.remove(username);
}

/// How long a pair stays locked, if it is.
fn locked_for(state: &mut State, pair: &(String, Source), now: Instant) -> Option<Duration> {
    let times = state.pairs.get_mut(pair)?;
    if recent(times, now) < MAX_FAILURES {
        return None;
    }
    let oldest = times[times.len() - MAX_FAILURES];
    Some(WINDOW.saturating_sub(now.saturating_duration_since(oldest)))
}

/// Drops the times that left the window; how many are left.
fn recent(times: &mut VecDeque<Instant>, now: Instant) -> usize {
    while times
        .front()
        .is_some_and(|t| now.saturating_duration_since(*t) >= WINDOW)
    {
        times.pop_front();
    }
    times.len()
}

fn push_bounded(times: &mut VecDeque<Instant>, now: Instant, keep: usize) {
    times.push_back(now);
    while times.len() > keep {
        times.pop_front();
    }
}

fn sweep(state: &mut State, now: Instant, failures_per_minute: u32) {
    state.pairs.retain(|_, times| recent(times, now) > 0);
    state.names.retain(|_, times| recent(times, now) > 0);
    // An address is forgotten once its budget is whole again and its last
    // failure is out of the window: it is then as good as new.
    let refill = Duration::from_secs(60);
    state.sources.retain(|_, budget| {
        let full =
            failures_per_minute == 0 || now.saturating_duration_since(budget.refilled_at) >= refill;
        remembered(budget, now) || !full
    });
}

/// Whether an address's standing is still worth remembering.
fn remembered(budget: &Budget, now: Instant) -> bool {
    budget.standing(now) != Standing::Unknown
}

/// The failed logins of (username, address) pairs in the store, counted by
/// every server process on one PostgreSQL database (see the module's doc).
/// Times are the wall clock's milliseconds: the processes share no `Instant`.
pub mod shared {
    use std::time::Duration;

    use super::{MAX_FAILURES, Source, WINDOW, whole_seconds};
    use crate::db::{Conn, Result, params};
    use crate::error::{ApiError, Throttle};

    fn window_ms() -> i64 {
        WINDOW.as_millis() as i64
    }

    /// How an address is written in the table.
    pub fn source_key(source: Source) -> String {
        source.0.to_string()
    }

    /// The 429 of a pair with [`MAX_FAILURES`] failures in the window at
    /// `now_ms`, with the wait until the oldest of them leaves it.
    pub fn refusal(
        conn: &Conn,
        username: &str,
        source: &str,
        now_ms: i64,
    ) -> Result<Option<ApiError>> {
        let mut statement = conn.prepare_cached(
            "SELECT at FROM login_failures WHERE username = ?1 AND source = ?2 AND at > ?3 \
             ORDER BY at DESC LIMIT ?4",
        )?;
        let times = statement
            .query_map(
                params![username, source, now_ms - window_ms(), MAX_FAILURES as i64],
                |row| row.get::<_, i64>(0),
            )?
            .collect::<Result<Vec<i64>>>()?;
        if times.len() < MAX_FAILURES {
            return Ok(None);
        }
        let oldest = times[MAX_FAILURES - 1];
        let left = (window_ms() - (now_ms - oldest)).max(0) as u64;
        Ok(Some(ApiError::TooManyRequests {
            retry_after_secs: whole_seconds(Duration::from_millis(left)),
            reason: Throttle::FailedLogins,
        }))
    }

    /// Records a failure of the pair at `now_ms`; forgets the pair's
    /// failures that left the window (the table stays small).
    pub fn failed(conn: &Conn, username: &str, source: &str, now_ms: i64) -> Result<()> {
        conn.prepare_cached(
            "DELETE FROM login_failures WHERE username = ?1 AND source = ?2 AND at <= ?3",
        )?
        .execute(params![username, source, now_ms - window_ms()])?;
        conn.prepare_cached(
            "INSERT INTO login_failures (username, source, at) VALUES (?1, ?2, ?3)",
        )?
        .execute(params![username, source, now_ms])?;
        Ok(())
    }

    /// The failures of `username` within the window at `now_ms`, from every
    /// address, recorded by every process: what its slowdown counts
    /// ([`super::slowdown_after`]), so that it spans the processes and ends
    /// with `quayside user unlock`.
    pub fn username_failures(conn: &Conn, username: &str, now_ms: i64) -> Result<usize> {
        let count: i64 = conn
            .prepare_cached("SELECT count(*) FROM login_failures WHERE username = ?1 AND at > ?2")?
            .query_row(params![username, now_ms - window_ms()], |row| row.get(0))?;
        Ok(count.max(0) as usize)
    }

    /// A login of the pair succeeded: its failures are forgotten.
    pub fn succeeded(conn: &Conn, username: &str, source: &str) -> Result<()> {
        conn.prepare_cached("DELETE FROM login_failures WHERE username = ?1 AND source = ?2")?
            .execute(params![username, source])?;
        Ok(())
    }

    /// `quayside user unlock`: every failure of `username`, from every address.
    pub fn unlock(conn: &Conn, username: &str) -> Result<usize> {
        conn.prepare_cached("DELETE FROM login_failures WHERE username = ?1")?
            .execute(params![username])
    }
}

/// The wait before a failed login on a username is answered, given the
/// username's failures within [`WINDOW`] from all addresses, this one
/// included: [`SLOWDOWN_STEP`] per failure past [`MAX_FAILURES`], at most
/// [`SLOWDOWN_MAX`].
pub fn slowdown_after(failures: usize) -> Duration {
    let beyond = failures.saturating_sub(MAX_FAILURES);
    SLOWDOWN_STEP
        .saturating_mul(u32::try_from(beyond).unwrap_or(u32::MAX))
        .min(SLOWDOWN_MAX)
}

/// Seconds to announce in `Retry-After`: rounded up, at least one.
fn whole_seconds(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> Source {
        Source::of(Some(text.parse().unwrap()))
    }

    fn fail(lockout: &Lockout, name: &str, from: Source, now: Instant) -> Duration {
        lockout
            .admit_at(name, from, now)
            .expect("admitted")
            .failed_at(now)
    }

    fn retry_after(result: ApiResult<Attempt<'_>>) -> (u64, Throttle) {
        match result.err().expect("refused") {
            ApiError::TooManyRequests {
                retry_after_secs,
                reason,
            } => (retry_after_secs, reason),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn five_failures_lock_the_pair_not_the_account() {
        let lockout = Lockout::new(0, None);
        let (stranger, owner) = (source("192.0.2.7"), source("198.51.100.1"));
        let now = Instant::now();
        for _ in 0..5 {
            assert_eq!(fail(&lockout, "ann", stranger, now), Duration::ZERO);
        }
        let (wait, reason) = retry_after(lockout.admit_at("ann", stranger, now));
        assert_eq!((wait, reason), (300, Throttle::FailedLogins));
        // The owner, from an address that did not fail, gets through.
        let attempt = lockout.admit_at("ann", owner, now).expect("owner");
        assert_eq!(attempt.standing, Standing::Unknown);
        attempt.succeeded();
        let again = lockout.admit_at("ann", owner, Instant::now()).unwrap();
        assert_eq!(again.standing, Standing::Trusted);
        // The stranger's other names are not locked, and the lock ends.
        assert!(lockout.admit_at("bob", stranger, now).is_ok());
        let later = now + WINDOW + Duration::from_secs(1);
        assert!(lockout.admit_at("ann", stranger, later).is_ok());
    }

    #[test]
    fn failures_from_many_addresses_slow_the_username_down() {
        let lockout = Lockout::new(0, None);
        let now = Instant::now();
        for i in 0..5 {
            let from = source(&format!("192.0.2.{i}"));
            assert_eq!(fail(&lockout, "ann", from, now), Duration::ZERO);
        }
        assert_eq!(
            fail(&lockout, "ann", source("192.0.2.9"), now),
            SLOWDOWN_STEP
        );
        assert_eq!(
            fail(&lockout, "ann", source("192.0.2.10"), now),
            SLOWDOWN_STEP * 2
        );
        for i in 11..60 {
            fail(&lockout, "ann", source(&format!("192.0.2.{i}")), now);
        }
        assert_eq!(
            fail(&lockout, "ann", source("192.0.2.99"), now),
            SLOWDOWN_MAX
        );
        // Only failures are slowed down, and no address is locked.
        assert!(lockout.admit_at("ann", source("192.0.2.1"), now).is_ok());
        let later = now + WINDOW;
        assert_eq!(
            fail(&lockout, "ann", source("192.0.2.1"), later),
            Duration::ZERO
        );
    }

    #[test]
    fn an_address_has_a_budget_of_failures_over_all_names() {
        let lockout = Lockout::new(3, None);
        let (from, other) = (source("192.0.2.7"), source("192.0.2.8"));
        let now = Instant::now();
        let at = |secs| now + Duration::from_secs(secs);
        let first = lockout.admit_at("a", from, at(0)).unwrap();
        assert_eq!(first.standing, Standing::Unknown);
        first.failed_at(at(0));
        let second = lockout.admit_at("b", from, at(1)).unwrap();
        assert_eq!(second.standing, Standing::Suspect);
        second.failed_at(at(1));
        // Successes and unsettled attempts give the budget back.
        lockout
            .admit_at("c", from, at(2))
            .unwrap()
            .succeeded_at(at(2));
        drop(lockout.admit_at("c", from, at(2)).unwrap());
        // A success since its failures: trusted again.
        let third = lockout.admit_at("c", from, at(2)).unwrap();
        assert_eq!(third.standing, Standing::Trusted);
        third.failed_at(at(2));
        // 3 a minute: 3, less 3 failures, plus 2 s of refill (0.1) is 0.1;
        // the next whole one is 18 s away.
        let (wait, reason) = retry_after(lockout.admit_at("d", from, at(2)));
        assert_eq!((wait, reason), (18, Throttle::Address));
        assert!(lockout.admit_at("d", other, at(2)).is_ok());
        assert!(lockout.admit_at("d", from, at(21)).is_ok());
    }

    #[test]
    fn stale_entries_are_swept_when_there_are_many() {
        let lockout = Lockout::new(20, None);
        let address = |i: u32| Source::of(Some(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i))));
        let now = Instant::now();
        for i in 0..=SWEEP_ABOVE as u32 {
            fail(&lockout, &format!("old{i}"), address(i), now);
        }
        // All live at the first sweep: the next waits for twice as many.
        assert_eq!(lockout.lock().sweep_above, 2 * (SWEEP_ABOVE + 1));
        let later = now + WINDOW + Duration::from_secs(61);
        for i in 0..=SWEEP_ABOVE as u32 + 1 {
            fail(
                &lockout,
                &format!("new{i}"),
                address(SWEEP_ABOVE as u32 + 1 + i),
                later,
            );
        }
        let state = lockout.lock();
        assert!(state.pairs.keys().all(|(name, _)| name.starts_with("new")));
        assert!(state.names.keys().all(|name| name.starts_with("new")));
        assert!(
            state.sources.len() <= SWEEP_ABOVE + 2,
            "{}",
            state.sources.len()
        );
    }

    #[test]
    fn ipv6_clients_count_by_their_64_network() {
        assert_eq!(source("2001:db8::1"), source("2001:db8::ffff:2"));
        assert_ne!(source("2001:db8::1"), source("2001:db8:0:1::1"));
        assert_eq!(source("::ffff:192.0.2.1"), source("192.0.2.1"));
    }

    #[test]
    fn unlock_forgets_the_username_from_every_address_also_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("q.db");
        let requests = unlock_requests_path(&data);
        std::fs::write(&requests, "ann\n").unwrap();
        let lockout = Lockout::new(0, Some(requests.clone()));
        let now = Instant::now();
        let from = source("192.0.2.7");
        for _ in 0..5 {
            fail(&lockout, "ann", from, now);
            fail(&lockout, "bob", from, now);
        }
        // What the file held before the server started is old news.
        assert!(lockout.admit_at("ann", from, now).is_err());
        lockout.unlock("bob");
        assert!(lockout.admit_at("bob", from, now).is_ok());
        // A line still being written counts only once whole.
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&requests)
            .unwrap();
        std::io::Write::write_all(&mut file, b"an").unwrap();
        assert!(lockout.admit_at("ann", from, now).is_err());
        std::io::Write::write_all(&mut file, b"n\n").unwrap();
        assert!(lockout.admit_at("ann", from, now).is_ok());
    }
}
