//! Login lockout: after 5 failed logins for one username within 5 minutes,
//! further attempts get 429 until the oldest failure leaves the window.
//!
//! Kept in memory: a restart clears it, which an attacker cannot cause, and it
//! keeps failed logins from turning into writes.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const MAX_FAILURES: usize = 5;
pub const WINDOW: Duration = Duration::from_secs(5 * 60);
/// Past this many tracked usernames, stale entries are swept on the next failure.
const SWEEP_ABOVE: usize = 10_000;

#[derive(Default)]
pub struct Lockout {
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl Lockout {
    /// `Err(seconds)` while the username is locked out.
    pub fn check(&self, username: &str) -> Result<(), u64> {
        self.check_at(username, Instant::now())
    }

    fn check_at(&self, username: &str, now: Instant) -> Result<(), u64> {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let Some(recent) = failures.get_mut(username) else {
            return Ok(());
        };
        while recent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= WINDOW)
        {
            recent.pop_front();
        }
        if recent.len() < MAX_FAILURES {
            return Ok(());
        }
        let oldest = recent[recent.len() - MAX_FAILURES];
        let wait = WINDOW.saturating_sub(now.duration_since(oldest));
        Err(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
    }

    pub fn record_failure(&self, username: &str) {
        let now = Instant::now();
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures.len() > SWEEP_ABOVE {
            failures.retain(|_, times| {
                times
                    .back()
                    .is_some_and(|t| now.duration_since(*t) < WINDOW)
            });
        }
        let recent = failures.entry(username.to_string()).or_default();
        recent.push_back(now);
        while recent.len() > MAX_FAILURES {
            recent.pop_front();
        }
    }

    pub fn clear(&self, username: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(username);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_after_five_failures_and_reports_the_wait() {
        let lockout = Lockout::default();
        for _ in 0..4 {
            lockout.record_failure("ann");
        }
        assert!(lockout.check("ann").is_ok());
        lockout.record_failure("ann");
        let wait = lockout.check("ann").unwrap_err();
        assert!((299..=300).contains(&wait), "{wait}");
        assert!(lockout.check("bob").is_ok());
        let later = Instant::now() + WINDOW + Duration::from_secs(1);
        assert!(lockout.check_at("ann", later).is_ok());
    }

    #[test]
    fn success_clears_the_count() {
        let lockout = Lockout::default();
        for _ in 0..5 {
            lockout.record_failure("ann");
        }
        lockout.clear("ann");
        assert!(lockout.check("ann").is_ok());
    }
}
