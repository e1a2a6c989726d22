//! A read-through cache of rendered answers that is exact, not eventually
//! consistent: every entry carries the commit position ([`Stamp`]) read before
//! the store was asked, and is served only while the store is still at that
//! position. The first commit anywhere (this server or another process) empties
//! it, so it never answers with data a client could know to be old. A commit
//! of bookkeeping only (statistics, a session's expiry) does not: the caller
//! says which positions hold the same data (`Db::same_data`), and the entries
//! move on to the later one.
//!
//! It pays off where reads dominate, as with the location catalogs on a port
//! site. What a commit changed of the entries is the caller's to say: the
//! location records' cache and the workspaces' (`workspaces::scope`) each
//! outlive the commits that changed none of their tables (`Db::same`).
//!
//! The values are whatever the caller keeps ([`Weight`]): rendered answers
//! (`Bytes`), or records shared by reference.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;

use super::stamp::Stamp;

/// Entries beyond this many bytes are not kept (until the next commit empties
/// the cache): bounded memory instead of an eviction policy.
pub const DEFAULT_BUDGET_BYTES: usize = 16 * 1024 * 1024;

/// What one entry costs besides its answer's bytes (map slot with its key,
/// headers).
const ENTRY_OVERHEAD: usize = 64 + KEY_MAX;

/// The longest key: `inland_facilities/` and a client code of its longest,
/// 64 characters.
const KEY_MAX: usize = 82;

/// A key kept inline in the map's slot, not in an allocation of its own: a
/// look-up among tens of thousands of entries then reads one place in memory
/// less (each a likely cache miss: a third of the look-up's cost).
#[derive(Clone, Copy)]
pub struct Key {
    len: u8,
    bytes: [u8; KEY_MAX],
}

impl Key {
    /// The key made of `parts` in a row; `None` when longer than [`KEY_MAX`]
    /// (such an answer is simply not kept).
    pub fn new(parts: &[&str]) -> Option<Key> {
        let mut key = Key {
            len: 0,
            bytes: [0; KEY_MAX],
        };
        for part in parts {
            let start = usize::from(key.len);
            let end = start + part.len();
            key.bytes
                .get_mut(start..end)?
                .copy_from_slice(part.as_bytes());
            key.len = end as u8;
        }
        Some(key)
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Key {}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write(self.as_bytes());
    }
}

/// Whether the store holds the same data at the second position as at the
/// first (`Db::same_data`).
pub type SameData<'a> = &'a dyn Fn(Stamp, Stamp) -> bool;

/// What a value costs against a cache's budget, besides its key and slot.
pub trait Weight {
    fn weight(&self) -> usize;
}

impl Weight for Bytes {
    fn weight(&self) -> usize {
        self.len()
    }
}

pub struct ReadCache<V = Bytes> {
    budget: usize,
    state: Mutex<State<V>>,
}

struct State<V> {
    /// The position every entry was read at; `None` before the first insert.
    stamp: Option<Stamp>,
    entries: HashMap<Key, V>,
    bytes: usize,
}

impl<V> State<V> {
    fn reset(&mut self, stamp: Stamp) {
        self.stamp = Some(stamp);
        self.entries.clear();
        self.bytes = 0;
    }
}

impl<V: Weight + Clone> ReadCache<V> {
    pub fn new(budget: usize) -> ReadCache<V> {
        ReadCache {
            budget,
            state: Mutex::new(State {
                stamp: None,
                entries: HashMap::new(),
                bytes: 0,
            }),
        }
    }

    /// The entry for `key` if the store holds the same data as when the entry
    /// was read. `now` is the current position (`None`: unknown, so a miss);
    /// `same(then, now)` tells whether two positions hold the same data.
    pub fn get(&self, now: Option<Stamp>, key: &Key, same: SameData<'_>) -> Option<V> {
        let now = now?;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match state.stamp {
            Some(then) if then == now => {}
            Some(then) if same(then, now) => state.stamp = Some(now),
            // A request that found its position before another brought the
            // entries forward: they hold at its position too. (Taken for a
            // change, this emptied the cache whenever requests of two
            // positions met, which commits that leave the entries make
            // common.)
            Some(then) if same(now, then) => {}
            _ => {
                state.reset(now);
                return None;
            }
        }
        state.entries.get(key).cloned()
    }

    /// Keeps `value`, read from the store at position `read_at`.
    pub fn insert(&self, read_at: Option<Stamp>, key: Key, value: V, same: SameData<'_>) {
        let Some(read_at) = read_at else { return };
        let cost = value.weight() + ENTRY_OVERHEAD;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match state.stamp {
            Some(then) if then == read_at => {}
            // The entries hold at the later position too.
            Some(then) if same(then, read_at) => state.stamp = Some(read_at),
            // The value holds at the entries' later position too.
            Some(then) if same(read_at, then) => {}
            // Either side may be the newer one; entries are only ever served
            // when their stamp holds the current data, so starting over at
            // `read_at` is safe both ways.
            _ => state.reset(read_at),
        }
        let replaced = state
            .entries
            .get(&key)
            .map_or(0, |old| old.weight() + ENTRY_OVERHEAD);
        if state.bytes - replaced + cost > self.budget {
            return;
        }
        state.bytes = state.bytes - replaced + cost;
        state.entries.insert(key, value);
    }
}

#[cfg(test)]
mod tests {
    use super::{Key, ReadCache, Stamp};

    fn k(text: &str) -> Key {
        Key::new(&[text]).expect("short")
    }
    use bytes::Bytes;

    /// No two positions hold the same data: every commit changed some.
    const NEVER: super::SameData<'static> = &|_, _| false;

    fn stamp(n: u8) -> Option<Stamp> {
        let mut header = [0u8; 48];
        header[8] = n;
        Some(Stamp::from_header(header))
    }

    #[test]
    fn an_entry_lives_exactly_until_the_next_commit() {
        let cache = ReadCache::new(1024);
        cache.insert(stamp(1), k("ports/NLRTM"), Bytes::from_static(b"{}"), NEVER);
        assert_eq!(
            cache.get(stamp(1), &k("ports/NLRTM"), NEVER).as_deref(),
            Some(&b"{}"[..])
        );
        assert_eq!(
            cache.get(stamp(2), &k("ports/NLRTM"), NEVER),
            None,
            "a commit ends it"
        );
        assert_eq!(
            cache.get(stamp(1), &k("ports/NLRTM"), NEVER),
            None,
            "and it does not come back"
        );
        assert_eq!(cache.get(None, &k("ports/NLRTM"), NEVER), None);
    }

    #[test]
    fn a_value_read_before_a_commit_is_never_served_after_it() {
        let cache = ReadCache::new(1024);
        // A reader took stamp 1, then a commit happened and another request saw it.
        assert_eq!(cache.get(stamp(2), &k("k"), NEVER), None);
        cache.insert(stamp(1), k("k"), Bytes::from_static(b"old"), NEVER);
        assert_eq!(cache.get(stamp(2), &k("k"), NEVER), None);
    }

    #[test]
    fn the_budget_bounds_what_is_kept() {
        let cache = ReadCache::new(400);
        cache.insert(stamp(1), k("a"), Bytes::from(vec![b'x'; 100]), NEVER);
        cache.insert(stamp(1), k("b"), Bytes::from(vec![b'x'; 100]), NEVER);
        assert!(cache.get(stamp(1), &k("a"), NEVER).is_some());
        assert!(
            cache.get(stamp(1), &k("b"), NEVER).is_none(),
            "over budget: not kept"
        );
        cache.insert(stamp(1), k("a"), Bytes::from(vec![b'y'; 100]), NEVER);
        assert_eq!(
            cache.get(stamp(1), &k("a"), NEVER).unwrap()[0],
            b'y',
            "replacing stays in budget"
        );
    }

    /// Entries outlive a commit of bookkeeping only, and move on to its
    /// position; a later commit of data still ends them.
    #[test]
    fn entries_outlive_a_bookkeeping_commit_only() {
        let cache = ReadCache::new(1024);
        let bookkept =
            |then: Stamp, now: Stamp| then == stamp(1).unwrap() && now == stamp(2).unwrap();
        cache.insert(stamp(1), k("k"), Bytes::from_static(b"v"), &bookkept);
        assert_eq!(
            cache.get(stamp(2), &k("k"), &bookkept).as_deref(),
            Some(&b"v"[..])
        );
        // A value read at the earlier position joins the entries at the later one.
        cache.insert(stamp(1), k("j"), Bytes::from_static(b"w"), &bookkept);
        assert_eq!(
            cache.get(stamp(2), &k("j"), &bookkept).as_deref(),
            Some(&b"w"[..])
        );
        assert_eq!(
            cache.get(stamp(3), &k("k"), &bookkept),
            None,
            "a commit of data ends them"
        );
        assert_eq!(cache.get(stamp(2), &k("k"), &bookkept), None);
    }

    /// A request whose position is older than the entries', with the same
    /// data in between, is served and leaves them where they are; one whose
    /// position holds other data empties the cache.
    #[test]
    fn a_request_behind_the_entries_is_served_when_the_data_between_is_the_same() {
        let cache = ReadCache::new(1024);
        let same = |then: Stamp, now: Stamp| then == stamp(1).unwrap() && now == stamp(2).unwrap();
        cache.insert(stamp(2), k("k"), Bytes::from_static(b"v"), &same);
        assert_eq!(
            cache.get(stamp(1), &k("k"), &same).as_deref(),
            Some(&b"v"[..])
        );
        assert_eq!(
            cache.get(stamp(2), &k("k"), &same).as_deref(),
            Some(&b"v"[..]),
            "still at the later position"
        );
        assert_eq!(cache.get(stamp(0), &k("k"), &same), None, "other data");
        assert_eq!(cache.get(stamp(2), &k("k"), &same), None, "emptied");
    }

    #[test]
    fn a_key_is_its_parts_in_a_row_and_too_long_a_key_is_none() {
        assert!(Key::new(&["ports", "/", "NLRTM"]) == Key::new(&["ports/NLRTM"]));
        assert!(Key::new(&["ports/", "NLRTM"]) != Key::new(&["ports/", "NLRTMX"]));
        assert!(Key::new(&["inland_facilities/", &"X".repeat(64)]).is_some());
        assert!(Key::new(&["inland_facilities/", &"X".repeat(65)]).is_none());
    }
}
