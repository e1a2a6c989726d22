//! Read-through caches that are exact, not eventually consistent: every
//! entry carries the commit position ([`Stamp`]) read before the store was
//! asked, and is served only while the store holds, at the request's
//! position, what the entry was made of. A commit by another connection
//! (another process, the CLI) ends every entry, so a cache never answers with
//! data a client could know to be old. What the writer's own commits changed
//! is the caller's to say:
//! - [`ReadCache`]: entries that all end together, at a commit that changed
//!   their group of tables (`Db::same`): the location records' answers, the
//!   workspaces reads found (`workspaces::scope`). A commit of bookkeeping
//!   only (statistics, a session's expiry) changes none.
//! - [`RowCache`]: answers each made of one row, a job's, each ended by a
//!   change of its own row (`Db::changed_documents`).
//!
//! The values of a [`ReadCache`] are whatever the caller keeps ([`Weight`]):
//! rendered answers (`Bytes`), or records shared by reference.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;

use super::stamp::Stamp;

/// Entries beyond this many bytes are not kept (until the next commit empties
/// the cache): bounded memory instead of an eviction policy.
pub const DEFAULT_BUDGET_BYTES: usize = 16 * 1024 * 1024;

/// The bytes the documents' answers may take ([`RowCache`]): about 10,000
/// jobs.
pub const DOCUMENTS_BUDGET_BYTES: usize = 8 * 1024 * 1024;

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

/// The rows changed from the first position to the second (each once or
/// more), when all are known (`Db::changed_documents`); `None` otherwise.
pub type Between<'a> = &'a dyn Fn(Stamp, Stamp) -> Option<Vec<String>>;

/// A cache of answers each made of one row (a document), kept at the
/// position they were read at and ended by a change of that row alone: as
/// it moves to a later position it drops the entries of the rows changed in
/// between (`Between`), and starts over only when those are not known.
/// Unlike [`ReadCache`], whose entries all end together, it keeps what a
/// workspace at work did not touch.
pub struct RowCache {
    budget: usize,
    state: Mutex<RowState>,
}

struct RowState {
    stamp: Option<Stamp>,
    /// By row: the answer's form (what kind of answer it is) and the scope it
    /// was found in (a workspace), and the answer.
    entries: HashMap<String, (&'static str, String, Bytes)>,
    bytes: usize,
}

impl RowState {
    fn reset(&mut self, stamp: Stamp) {
        self.stamp = Some(stamp);
        self.entries.clear();
        self.bytes = 0;
    }

    fn drop_rows(&mut self, rows: &[String]) {
        for row in rows {
            if let Some((_, scope, answer)) = self.entries.remove(row) {
                self.bytes -= row_cost(row, &scope, &answer);
            }
        }
    }

    /// Brings the entries to `now` if the rows changed in between are known
    /// (true), else leaves them (false).
    fn forward(&mut self, now: Stamp, between: Between<'_>) -> bool {
        match self.stamp {
            Some(then) if then == now => true,
            Some(then) => match between(then, now) {
                Some(changed) => {
                    self.drop_rows(&changed);
                    self.stamp = Some(now);
                    true
                }
                None => false,
            },
            None => false,
        }
    }

    /// For a position `at` behind the entries': whether `row` is the same
    /// at both (`Some`), when the rows changed in between are known.
    fn same_behind(&self, at: Stamp, row: &str, between: Between<'_>) -> Option<bool> {
        let changed = between(at, self.stamp?)?;
        Some(!changed.iter().any(|c| c == row))
    }

    /// Makes the entries hold at `at` for `row`: brought forward to it, or,
    /// for a request behind them, left where they are when `row` did not
    /// change since. False when it did (the entry does not hold at `at`);
    /// when what changed is not known, the entries start over at `at`.
    fn hold_at(&mut self, at: Stamp, row: &str, between: Between<'_>) -> bool {
        if self.forward(at, between) {
            return true;
        }
        match self.same_behind(at, row, between) {
            Some(same) => same,
            None => {
                self.reset(at);
                true
            }
        }
    }
}

fn row_cost(row: &str, scope: &str, answer: &Bytes) -> usize {
    row.len() + scope.len() + answer.len() + ENTRY_OVERHEAD
}

impl RowCache {
    pub fn new(budget: usize) -> RowCache {
        RowCache {
            budget,
            state: Mutex::new(RowState {
                stamp: None,
                entries: HashMap::new(),
                bytes: 0,
            }),
        }
    }

    /// The answer of `form` for `row` in `scope`, if that row is the same at
    /// `now` as when it was read.
    pub fn get(
        &self,
        now: Option<Stamp>,
        row: &str,
        (form, scope): (&str, &str),
        between: Between<'_>,
    ) -> Option<Bytes> {
        let now = now?;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if !state.hold_at(now, row, between) {
            return None;
        }
        match state.entries.get(row) {
            Some((kept_form, kept_scope, answer)) if *kept_form == form && kept_scope == scope => {
                Some(answer.clone())
            }
            _ => None,
        }
    }

    /// Keeps `answer`, of `form` for `row` in `scope`, read at `read_at`.
    pub fn insert(
        &self,
        read_at: Option<Stamp>,
        row: &str,
        (form, scope): (&'static str, &str),
        answer: Bytes,
        between: Between<'_>,
    ) {
        let Some(read_at) = read_at else { return };
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // Read behind the entries, it holds at their position too when its
        // row did not change since, and is not kept when it did.
        if !state.hold_at(read_at, row, between) {
            return;
        }
        let cost = row_cost(row, scope, &answer);
        let replaced = state
            .entries
            .get(row)
            .map_or(0, |(_, s, a)| row_cost(row, s, a));
        if state.bytes - replaced + cost > self.budget {
            return;
        }
        state.bytes = state.bytes - replaced + cost;
        state
            .entries
            .insert(row.to_string(), (form, scope.to_string(), answer));
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

    /// A row's answer outlives the changes of other rows and ends with its
    /// own; it is served only in its own form and scope; an unknown change
    /// ends every answer; a request behind the entries is served when its
    /// row did not change since.
    #[test]
    fn a_row_s_answer_ends_with_a_change_of_that_row_alone() {
        use super::{Between, RowCache};
        let changed: Vec<(u8, u8, Option<Vec<String>>)> = vec![
            (1, 2, Some(vec!["other".into()])),
            (2, 3, Some(vec!["row".into()])),
            (3, 4, None),
        ];
        let between = move |then: Stamp, now: Stamp| -> Option<Vec<String>> {
            let n = |s: Stamp| match s {
                Stamp::Wal(h) => h[8],
                Stamp::Commits { all, .. } => all as u8,
            };
            let (from, to) = (n(then), n(now));
            if from > to {
                return None;
            }
            let mut ids = Vec::new();
            for step in from..to {
                let (_, _, ids_of) = changed.iter().find(|(a, _, _)| *a == step)?;
                ids.extend(ids_of.clone()?);
            }
            Some(ids)
        };
        let between: Between<'_> = &between;
        let cache = RowCache::new(4096);
        let answer = Bytes::from_static(b"{}");
        // Whether `row` is answered at position `at` in `(form, scope)`.
        let served = |at: u8, row: &str, form_scope: (&str, &str), kept: bool, why: &str| {
            let want = kept.then(|| answer.clone());
            assert_eq!(
                cache.get(stamp(at), row, form_scope, between),
                want,
                "{why}"
            );
        };
        cache.insert(stamp(1), "row", ("job", "w"), answer.clone(), between);
        served(1, "row", ("job", "w"), true, "kept");
        served(1, "row", ("job", "v"), false, "another scope");
        served(1, "row", ("lpi", "w"), false, "another form");
        served(2, "row", ("job", "w"), true, "another row changed");
        served(
            1,
            "row",
            ("job", "w"),
            true,
            "a request behind, the row unchanged since",
        );
        served(3, "row", ("job", "w"), false, "its row changed");
        cache.insert(stamp(3), "row", ("job", "w"), answer.clone(), between);
        cache.insert(stamp(2), "other", ("job", "w"), answer.clone(), between);
        served(
            3,
            "other",
            ("job", "w"),
            true,
            "read behind, unchanged since: kept",
        );
        served(2, "row", ("job", "w"), false, "changed since");
        served(3, "row", ("job", "w"), true, "kept again");
        served(4, "row", ("job", "w"), false, "unknown changes");
        served(3, "other", ("job", "w"), false, "all ended");
    }
}
