//! Sessions remembered in memory, each with the store position ([`Stamp`]) it
//! was read at. An entry is trusted outright only while no commit since
//! changed a session or an account (`Db::same` of `Tables::SESSIONS`: on a
//! data file, by the writer's recorded commits, any commit of another
//! connection counting as one; on PostgreSQL, by the count of the
//! transactions that changed one, `change_log.session_commits`); after
//! that it still names the caller, but the request's first store call
//! confirms the session in the store (see [`super::SessionGuard`]). So a
//! logout, a password change or a `quayside user remove` run by another
//! process ends a key at once, while the common case, a key used again while
//! results are written all day, costs no store call at all. Commits of
//! bookkeeping only (a session's sliding expiry, statistics) do not count as
//! changes.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::sessions::Found;
use crate::db::stamp::Stamp;

/// More live keys than this and the cache starts over (bounded memory).
const MAX_ENTRIES: usize = 10_000;

/// Key hash -> the session and the store position it was read at.
type Entries = HashMap<Vec<u8>, (Option<Stamp>, Found)>;

#[derive(Default)]
pub struct SessionCache {
    entries: Mutex<Entries>,
    /// Key hashes whose sliding expiry is being refreshed in the store.
    touching: Mutex<HashSet<Vec<u8>>>,
}

impl SessionCache {
    /// The session of a key hash and the position it was read at.
    pub fn get(&self, hash: &[u8]) -> Option<(Option<Stamp>, Found)> {
        self.lock().get(hash).cloned()
    }

    /// Remembers a session read from the store at `read_at` (`None`: read
    /// where no position applies, so never trusted without a store call).
    pub fn insert(&self, read_at: Option<Stamp>, hash: &[u8], found: Found) {
        let mut entries = self.lock();
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(hash) {
            entries.clear();
        }
        entries.insert(hash.to_vec(), (read_at, found));
    }

    /// The session of a key hash, read at `then`, holds at `now` too (only
    /// bookkeeping was committed in between).
    pub fn restamp(&self, hash: &[u8], then: Option<Stamp>, now: Option<Stamp>) {
        if let Some((read_at, _)) = self.lock().get_mut(hash) {
            if *read_at == then {
                *read_at = now;
            }
        }
    }

    /// Claims the refresh of a key's sliding expiry: false while another
    /// request's refresh of it is under way (one write, not one per request
    /// until the first is committed).
    pub fn claim_touch(&self, hash: &[u8]) -> bool {
        let mut touching = self.touching.lock().unwrap_or_else(|p| p.into_inner());
        touching.insert(hash.to_vec())
    }

    /// The refresh claimed by [`SessionCache::claim_touch`] ended.
    pub fn touch_ended(&self, hash: &[u8]) {
        let mut touching = self.touching.lock().unwrap_or_else(|p| p.into_inner());
        touching.remove(hash);
    }

    /// The sliding expiry of a key was refreshed in the store.
    pub fn touched(&self, hash: &[u8], at: i64) {
        if let Some((_, found)) = self.lock().get_mut(hash) {
            found.last_used_at = found.last_used_at.max(at);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}
