//! A read-through cache of rendered answers that is exact, not eventually
//! consistent: every entry carries the commit position ([`Stamp`]) read before
//! the store was asked, and is served only while the store is still at that
//! position. The first commit anywhere (this server or another process) empties
//! it, so it never answers with data a client could know to be old.
//!
//! It pays off where reads dominate, as with the location catalogs on a port
//! site; under a steady stream of writes it simply stays empty.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;

use super::stamp::Stamp;

/// Entries beyond this many bytes are not kept (until the next commit empties
/// the cache): bounded memory instead of an eviction policy.
pub const DEFAULT_BUDGET_BYTES: usize = 16 * 1024 * 1024;

/// What one key and its entry cost besides their bytes (map slot, headers).
const ENTRY_OVERHEAD: usize = 64;

pub struct ReadCache {
    budget: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The position every entry was read at; `None` before the first insert.
    stamp: Option<Stamp>,
    entries: HashMap<String, Bytes>,
    bytes: usize,
}

impl State {
    fn reset(&mut self, stamp: Stamp) {
        self.stamp = Some(stamp);
        self.entries.clear();
        self.bytes = 0;
    }
}

impl ReadCache {
    pub fn new(budget: usize) -> ReadCache {
        ReadCache {
            budget,
            state: Mutex::new(State::default()),
        }
    }

    /// The entry for `key` if the store is still where it was when the entry
    /// was read. `now` is the current position (`None`: unknown, so a miss).
    pub fn get(&self, now: Option<Stamp>, key: &str) -> Option<Bytes> {
        let now = now?;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.stamp != Some(now) {
            state.reset(now);
            return None;
        }
        state.entries.get(key).cloned()
    }

    /// Keeps `value`, read from the store at position `read_at`.
    pub fn insert(&self, read_at: Option<Stamp>, key: String, value: Bytes) {
        let Some(read_at) = read_at else { return };
        let cost = key.len() + value.len() + ENTRY_OVERHEAD;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.stamp != Some(read_at) {
            // Either side may be the newer one; entries are only ever served
            // when their stamp equals the current position, so starting over
            // at `read_at` is safe both ways.
            state.reset(read_at);
        }
        let replaced = state
            .entries
            .get(&key)
            .map_or(0, |old| key.len() + old.len() + ENTRY_OVERHEAD);
        if state.bytes - replaced + cost > self.budget {
            return;
        }
        state.bytes = state.bytes - replaced + cost;
        state.entries.insert(key, value);
    }
}

#[cfg(test)]
mod tests {
    use super::{ReadCache, Stamp};
    use bytes::Bytes;

    fn stamp(n: u8) -> Option<Stamp> {
        let mut header = [0u8; 48];
        header[8] = n;
        Some(Stamp::from_header(header))
    }

    #[test]
    fn an_entry_lives_exactly_until_the_next_commit() {
        let cache = ReadCache::new(1024);
        cache.insert(stamp(1), "ports/NLRTM".into(), Bytes::from_static(b"{}"));
        assert_eq!(
            cache.get(stamp(1), "ports/NLRTM").as_deref(),
            Some(&b"{}"[..])
        );
        assert_eq!(cache.get(stamp(2), "ports/NLRTM"), None, "a commit ends it");
        assert_eq!(
            cache.get(stamp(1), "ports/NLRTM"),
            None,
            "and it does not come back"
        );
        assert_eq!(cache.get(None, "ports/NLRTM"), None);
    }

    #[test]
    fn a_value_read_before_a_commit_is_never_served_after_it() {
        let cache = ReadCache::new(1024);
        // A reader took stamp 1, then a commit happened and another request saw it.
        assert_eq!(cache.get(stamp(2), "k"), None);
        cache.insert(stamp(1), "k".into(), Bytes::from_static(b"old"));
        assert_eq!(cache.get(stamp(2), "k"), None);
    }

    #[test]
    fn the_budget_bounds_what_is_kept() {
        let cache = ReadCache::new(200);
        cache.insert(stamp(1), "a".into(), Bytes::from(vec![b'x'; 100]));
        cache.insert(stamp(1), "b".into(), Bytes::from(vec![b'x'; 100]));
        assert!(cache.get(stamp(1), "a").is_some());
        assert!(cache.get(stamp(1), "b").is_none(), "over budget: not kept");
        cache.insert(stamp(1), "a".into(), Bytes::from(vec![b'y'; 100]));
        assert_eq!(
            cache.get(stamp(1), "a").unwrap()[0],
            b'y',
            "replacing stays in budget"
        );
    }
}
