//! Knowing, without a query, whether anything was committed to the file since a
//! given moment: the basis of the in-memory caches (sessions, location reads).
//!
//! In WAL mode every connection, in this process or another one (the CLI, an
//! import), publishes each commit by rewriting the WAL-index header at the
//! start of the `-shm` file: its change counter, frame count and salts move on
//! every commit and every WAL restart. That layout is SQLite's documented file
//! format (<https://www.sqlite.org/walformat.html>, "The WAL-Index Header"),
//! shared by all processes and versions that open the file. Reading those 48
//! bytes costs no system call: the `-shm` file's first page is mapped into
//! memory (shared, read-only), as SQLite maps it itself, so a stamp is a copy
//! from memory (a `pread` per request was 5% of a cached GET's cost). Where
//! the mapping cannot be made, a `pread` of the page-cache page does the same.
//!
//! A mapped file that shrank under the mapping would fault on a read. SQLite
//! truncates the `-shm` file only when a connection opens it with no other
//! connection of any process open on the database; this process keeps its
//! connections (the writer's, the readers') open for as long as the store
//! is, so no other process can do so while a stamp is read.
//!
//! The answer is only ever used conservatively: a cache entry is trusted when
//! the header is byte-for-byte what it was before the entry was read from the
//! store. Any difference, a torn read during a concurrent commit, or a missing
//! `-shm` file means "changed" or "unknown", and the caller goes to the store.
//!
//! One exception, made by the writer alone: a commit of bookkeeping only (the
//! planner's statistics, a session's sliding expiry, an incremental vacuum
//! step; `Db::write_bookkeeping`) changes no data any cache holds. The writer
//! reads the header before such a transaction and after its commit, and when
//! no other connection of any process committed in between (SQLite's
//! `PRAGMA data_version` on its own connection did not move), it records the
//! two headers as equivalent ([`CommitWatch::same_data`]): the caches keep
//! their entries across it instead of starting over. Without that, the
//! statistics refresh and every session's expiry refresh emptied the read
//! cache of a server that only reads.
//!
//! And one the header itself shows: a WAL restart. Once a checkpoint has
//! copied every frame back into the file, the next writer starts the WAL over
//! when it writes its first frame: it publishes a header with no frames and
//! the next salt, the change counter unchanged, and only then writes its
//! frames, flushes and publishes its commit. Readers can see that header in
//! between (for as long as the flush takes), and it holds the very data of the
//! header before it, all of it in the file now ([`restarted`]). Taken for a
//! change, it emptied the read cache of a server that only reads whenever a
//! session's expiry refresh restarted the WAL: the bookkeeping commit was
//! recorded, but the restart header a request had read in between was not.

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Bytes of the first copy of the WAL-index header.
const HEADER_LEN: usize = 48;

/// The store's commit position at one moment, comparable for equality only:
/// a SQLite file's WAL-index header, or a PostgreSQL database's commit
/// counters (`db::pg::position`): every writing transaction's, and for each
/// group of tables that has one ([`Tables::COUNTED`]) the count of those that
/// changed a row of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    Wal([u8; HEADER_LEN]),
    Commits {
        all: i64,
        groups: [i64; Tables::COUNTED.len()],
    },
}

/// Groups of tables that in-memory copies are made of, each of which
/// outlives the commits that leave its group alone ([`CommitWatch::holds`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tables(u8);

impl Tables {
    /// No table.
    pub const NONE: Tables = Tables(0);
    /// The location records: what the read cache's answers are made of
    /// (`db::cache`).
    pub const LOCATIONS: Tables = Tables(1);
    /// The workspaces and the organizations they name: what a workspace's
    /// scope is made of (`workspaces::scope`).
    pub const WORKSPACES: Tables = Tables(2);
    /// The documents: a kept answer is one document's, ended by a change of
    /// that document alone, so the writer records which documents each of
    /// its batches changed ([`Changed::Data`]).
    pub const DOCUMENTS: Tables = Tables(4);
    /// The sessions and the accounts they belong to: what a cached session
    /// is made of (`auth::cache`).
    pub const SESSIONS: Tables = Tables(8);

    /// The tables of each group: the one list, read by the writer's row hook
    /// on a file (`db::preupdate`, through [`Tables::of`]) and held against the
    /// counting triggers on PostgreSQL (`tests/it/pg/schema.rs`).
    pub const WATCHED: [(&'static str, Tables); 6] = [
        ("locations", Tables::LOCATIONS),
        ("workspaces", Tables::WORKSPACES),
        ("organizations", Tables::WORKSPACES),
        ("documents", Tables::DOCUMENTS),
        ("sessions", Tables::SESSIONS),
        ("accounts", Tables::SESSIONS),
    ];

    /// The groups that PostgreSQL counts apart, each with its column of
    /// `change_log`, moved once by every transaction that changes a row of
    /// the group (`pg/group_commits.sql`): a copy of the group's rows holds
    /// while its count holds, whatever else was committed ([`Db::same`]).
    /// The documents have none: a kept document is ended by the change of
    /// that document alone, which only a file's writer knows.
    ///
    /// [`Db::same`]: crate::db::Db::same
    pub const COUNTED: [(Tables, &'static str); 3] = [
        (Tables::LOCATIONS, "location_commits"),
        (Tables::WORKSPACES, "workspace_commits"),
        (Tables::SESSIONS, "session_commits"),
    ];

    /// The group a table of the main database belongs to (`NONE`: no
    /// cache is made of it), from [`Tables::WATCHED`].
    pub fn of(table: &[u8]) -> Tables {
        Tables::WATCHED
            .iter()
            .find(|(name, _)| name.as_bytes() == table)
            .map_or(Tables::NONE, |(_, group)| *group)
    }

    /// This group's place in [`Tables::COUNTED`] (and in a PostgreSQL
    /// position's counts), if PostgreSQL counts it apart.
    pub fn counted(self) -> Option<usize> {
        Tables::COUNTED.iter().position(|(group, _)| *group == self)
    }

    /// Both groups.
    pub const fn with(self, other: Tables) -> Tables {
        Tables(self.0 | other.0)
    }

    /// Whether the two share a group.
    pub const fn meets(self, other: Tables) -> bool {
        self.0 & other.0 != 0
    }

    /// From [`Tables::bits`].
    pub const fn from_bits(bits: u8) -> Tables {
        Tables(bits)
    }

    /// The groups as bits (a thread-local's cell).
    pub const fn bits(self) -> u8 {
        self.0
    }
}

/// What a commit the writer recorded ([`CommitWatch::recorded`]) changed,
/// of what the caches hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Changed {
    /// Bookkeeping only: nothing any cache holds ([`CommitWatch::same_data`]).
    Nothing,
    /// Data, of these groups of tables and no other the caches watch: the
    /// copies of the others hold across it ([`CommitWatch::holds`]); the
    /// cached sessions' do not. With [`Tables::DOCUMENTS`], the ids of the
    /// documents it changed, when they were few enough to note
    /// ([`CommitWatch::changed_documents`]).
    Data {
        tables: Tables,
        documents: Option<std::sync::Arc<[String]>>,
    },
}

/// Reads the WAL-index header of one database file.
pub struct CommitWatch {
    shm_path: PathBuf,
    /// Opened on first use: the `-shm` file exists once a connection is open.
    shm: OnceLock<Option<Shm>>,
    /// The latest commits the writer recorded, oldest first: headers before
    /// and after, and what changed between them.
    recorded: Mutex<VecDeque<(Stamp, Stamp, Changed)>>,
}

/// The open `-shm` file, and its first page mapped when that worked.
struct Shm {
    file: File,
    mapped: Option<Mapped>,
}

/// One page of a file mapped shared and read-only.
struct Mapped(*const u8);

// SAFETY: the mapping is read-only and lives as long as the value; reading it
// from several threads at once is what shared memory is for.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

/// The length mapped: one page, which holds the header.
const MAPPED_LEN: usize = 4096;

unsafe extern "C" {
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, offset: i64) -> *mut u8;
    fn munmap(addr: *mut u8, len: usize) -> i32;
}

impl Mapped {
    /// Maps the first page of `file`, if it is at least a header long.
    fn new(file: &File) -> Option<Mapped> {
        use std::os::fd::AsRawFd;
        const PROT_READ: i32 = 1;
        const MAP_SHARED: i32 = 1;
        if file.metadata().ok()?.len() < HEADER_LEN as u64 {
            return None;
        }
        // SAFETY: a fresh read-only shared mapping of an open file; the result
        // is checked against MAP_FAILED ((void *) -1) before any use.
        let ptr = unsafe {
            mmap(
                std::ptr::null_mut(),
                MAPPED_LEN,
                PROT_READ,
                MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        (ptr as isize != -1 && !ptr.is_null()).then_some(Mapped(ptr))
    }

    fn header(&self) -> [u8; HEADER_LEN] {
        // SAFETY: the first HEADER_LEN bytes of a live mapping of a file at
        // least that long (see the module's note on truncation). Volatile:
        // other processes write this memory.
        unsafe { std::ptr::read_volatile(self.0.cast::<[u8; HEADER_LEN]>()) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, once.
        unsafe {
            munmap(self.0.cast_mut(), MAPPED_LEN);
        }
    }
}

impl Stamp {
    /// A stamp from raw header bytes (tests of the caches).
    #[cfg(test)]
    pub fn from_header(header: [u8; HEADER_LEN]) -> Stamp {
        Stamp::Wal(header)
    }

    /// The same header, or one the other's WAL restart: the same data.
    fn same_position(self, other: Stamp) -> bool {
        match (self, other) {
            (Stamp::Wal(a), Stamp::Wal(b)) => a == b || restarted(&a, &b) || restarted(&b, &a),
            (a, b) => a == b,
        }
    }
}

/// Whether WAL-index header `to` is `from` with the WAL started over and
/// nothing committed since (SQLite's `walRestartHdr`): the same version,
/// change counter, page size and database size, no frames, and the first
/// salt one more (big-endian, as the WAL file's header stores it). Every
/// commit moves the change counter, so the data is `from`'s.
fn restarted(from: &[u8; HEADER_LEN], to: &[u8; HEADER_LEN]) -> bool {
    // iVersion, unused, iChange, isInit, bigEndCksum, szPage.
    const SAME_PREFIX: std::ops::Range<usize> = 0..16;
    const MX_FRAME: usize = 16;
    const N_PAGE: usize = 20;
    const SALT_0: usize = 32;
    let word = |h: &[u8; HEADER_LEN], at: usize| [h[at], h[at + 1], h[at + 2], h[at + 3]];
    from[SAME_PREFIX] == to[SAME_PREFIX]
        && u32::from_ne_bytes(word(to, MX_FRAME)) == 0
        && u32::from_ne_bytes(word(from, MX_FRAME)) != 0
        && word(from, N_PAGE) == word(to, N_PAGE)
        && u32::from_be_bytes(word(to, SALT_0))
            == u32::from_be_bytes(word(from, SALT_0)).wrapping_add(1)
}

/// Commits the writer recorded, remembered: a cache that fell further
/// behind than this many of them starts over. A cache is brought forward
/// at its first use after a commit, so under a steady stream of writes this
/// is how many commits may pass between two uses of the read cache.
const RECORDED_KEPT: usize = 64;

impl CommitWatch {
    pub fn new(database: &Path) -> CommitWatch {
        let mut shm_path = database.as_os_str().to_owned();
        shm_path.push("-shm");
        CommitWatch {
            shm_path: PathBuf::from(shm_path),
            shm: OnceLock::new(),
            recorded: Mutex::new(VecDeque::new()),
        }
    }

    /// The writer committed, changing `changed` of what the caches hold, and
    /// no other connection committed since it read `before` (the writer
    /// makes sure, see `writer::Thread::run`); `after` was read after its
    /// commit.
    pub fn recorded(&self, before: Option<Stamp>, after: Option<Stamp>, changed: Changed) {
        let (Some(before), Some(after)) = (before, after) else {
            return;
        };
        if before == after {
            return;
        }
        let mut kept = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() == RECORDED_KEPT {
            kept.pop_front();
        }
        kept.push_back((before, after, changed));
    }

    /// [`CommitWatch::recorded`] for a commit of bookkeeping only.
    #[cfg(test)]
    pub fn bookkept(&self, before: Option<Stamp>, after: Option<Stamp>) {
        self.recorded(before, after, Changed::Nothing);
    }

    /// Whether the store holds the same data at `now` as it did at `then`:
    /// the same header, or only bookkeeping commits in between.
    /// A header and its WAL restart count as one position.
    pub fn same_data(&self, then: Stamp, now: Stamp) -> bool {
        self.chained(then, now, |changed| *changed == Changed::Nothing)
    }

    /// Whether the store holds the same rows of `tables` at `now` as it did
    /// at `then`: [`CommitWatch::same_data`], or only commits of the
    /// writer's in between that changed none of them.
    pub fn holds(&self, tables: Tables, then: Stamp, now: Stamp) -> bool {
        self.chained(then, now, |changed| match changed {
            Changed::Nothing => true,
            Changed::Data {
                tables: changed, ..
            } => !changed.meets(tables),
        })
    }

    /// The documents the recorded commits from `then` to `now` changed
    /// (each id once or more); `None` when they are not all known: a
    /// commit not recorded between the two, or one that changed too many
    /// to note.
    pub fn changed_documents(&self, then: Stamp, now: Stamp) -> Option<Vec<String>> {
        let mut ids = Vec::new();
        let mut known = true;
        let reached = self.chained(then, now, |changed| match changed {
            Changed::Data { tables, documents } if tables.meets(Tables::DOCUMENTS) => {
                match documents {
                    Some(changed) => ids.extend(changed.iter().cloned()),
                    None => known = false,
                }
                known
            }
            _ => true,
        });
        (reached && known).then_some(ids)
    }

    /// Whether the recorded commits lead from `then` to `now`, each one
    /// `allowed`.
    fn chained(&self, then: Stamp, now: Stamp, mut allowed: impl FnMut(&Changed) -> bool) -> bool {
        if then.same_position(now) {
            return true;
        }
        let kept = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
        let mut at = then;
        // Each step moves to a later header; the chain is at most the list.
        for _ in 0..kept.len() {
            match kept.iter().find(|(before, _, _)| before.same_position(at)) {
                Some((_, after, changed)) if allowed(changed) => {
                    if after.same_position(now) {
                        return true;
                    }
                    at = *after;
                }
                _ => return false,
            }
        }
        false
    }

    /// The current commit position, or `None` when it cannot be known (then
    /// nothing may be served from a cache).
    pub fn stamp(&self) -> Option<Stamp> {
        let shm = self
            .shm
            .get_or_init(|| {
                let file = File::open(&self.shm_path).ok()?;
                let mapped = Mapped::new(&file);
                Some(Shm { file, mapped })
            })
            .as_ref()?;
        let header = match &shm.mapped {
            Some(mapped) => mapped.header(),
            None => {
                let mut header = [0u8; HEADER_LEN];
                shm.file.read_exact_at(&mut header, 0).ok()?;
                header
            }
        };
        // An all-zero header is a WAL index not yet initialised: no position.
        if header.iter().all(|&b| b == 0) {
            return None;
        }
        Some(Stamp::Wal(header))
    }
}

#[cfg(test)]
mod tests {
    use super::CommitWatch;

    #[test]
    fn every_commit_moves_the_stamp_and_reads_do_not() {
        let dir = std::env::temp_dir().join(format!("quayside-stamp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("stamp.db");
        let writer = crate::db::open_connection(&path).unwrap();
        writer
            .execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
            .unwrap();
        // A second process would be a second connection; another connection in
        // this process exercises the same shared-memory path.
        let other = crate::db::open_connection(&path).unwrap();
        let watch = CommitWatch::new(&path);
        let before = watch.stamp().expect("a WAL index exists");
        let _: i64 = other
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(watch.stamp(), Some(before), "a read is not a commit");
        other.execute("INSERT INTO t VALUES (2)", []).unwrap();
        let after_other = watch.stamp().unwrap();
        assert_ne!(after_other, before, "another connection's commit is seen");
        writer.execute("UPDATE t SET x = x + 1", []).unwrap();
        let after_writer = watch.stamp().unwrap();
        assert_ne!(after_writer, after_other, "each commit moves the stamp");
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        writer.execute("INSERT INTO t VALUES (3)", []).unwrap();
        assert_ne!(
            watch.stamp().unwrap(),
            after_writer,
            "a commit after a WAL restart is seen"
        );
        drop((writer, other));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A writer restarts the WAL when it writes its first frame after a
    /// checkpoint copied every frame back, and readers see that header before
    /// its commit: the same data as the header before it.
    #[test]
    fn a_wal_restart_holds_the_data_of_the_header_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("restart.db");
        let writer = crate::db::open_connection(&path).unwrap();
        writer
            .execute_batch("CREATE TABLE t (x BLOB); INSERT INTO t VALUES (zeroblob(1000));")
            .unwrap();
        writer
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .unwrap();
        let watch = CommitWatch::new(&path);
        let before = watch.stamp().expect("a WAL index exists");
        // A transaction larger than the page cache writes frames before its
        // commit: the restart is published while it is still open.
        writer
            .execute_batch(
                "PRAGMA cache_size = 10; BEGIN;
                 INSERT INTO t WITH RECURSIVE n(i) AS
                     (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400)
                 SELECT zeroblob(1000) FROM n;",
            )
            .unwrap();
        let restarted = watch.stamp().unwrap();
        assert_ne!(restarted, before, "the restart published a header");
        assert!(
            watch.same_data(before, restarted) && watch.same_data(restarted, before),
            "a restart is the same data"
        );
        writer.execute_batch("COMMIT").unwrap();
        let after = watch.stamp().unwrap();
        assert!(!watch.same_data(before, after), "a commit of data");
        assert!(!watch.same_data(restarted, after), "a commit of data");
        // Had it been bookkeeping, both headers before it would hold after it.
        watch.bookkept(Some(before), Some(after));
        assert!(watch.same_data(before, after));
        assert!(watch.same_data(restarted, after));
    }

    /// The documents changed between two positions are those the recorded
    /// commits between them noted; not known past a commit that noted too
    /// many, or one not recorded. The other groups hold across a commit that
    /// changed documents only.
    #[test]
    fn the_documents_changed_between_two_positions_are_the_recorded_commits_ones() {
        use super::{Changed, Tables};
        let at = |n: u8| {
            let mut h = [0u8; super::HEADER_LEN];
            h[8] = n;
            h[16] = n;
            super::Stamp::Wal(h)
        };
        let docs = |ids: &[&str]| Changed::Data {
            tables: Tables::DOCUMENTS,
            documents: Some(ids.iter().map(|id| id.to_string()).collect()),
        };
        let watch = CommitWatch::new(std::path::Path::new("/nonexistent/none.db"));
        watch.recorded(Some(at(1)), Some(at(2)), docs(&["a", "b"]));
        watch.recorded(Some(at(2)), Some(at(3)), Changed::Nothing);
        watch.recorded(Some(at(3)), Some(at(4)), docs(&["c"]));
        let changed = |then, now| watch.changed_documents(at(then), at(now));
        assert_eq!(changed(1, 1), Some(vec![]));
        assert_eq!(changed(1, 2), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(changed(2, 4), Some(vec!["c".to_string()]));
        assert_eq!(changed(1, 4).map(|ids| ids.len()), Some(3));
        assert_eq!(changed(4, 1), None, "never backwards");
        assert_eq!(changed(1, 5), None, "a commit not recorded");
        for tables in [Tables::SESSIONS, Tables::WORKSPACES, Tables::LOCATIONS] {
            assert!(watch.holds(tables, at(1), at(4)));
        }
        assert!(!watch.holds(Tables::DOCUMENTS, at(1), at(2)));
        assert!(!watch.same_data(at(1), at(2)));
        watch.recorded(
            Some(at(4)),
            Some(at(5)),
            Changed::Data {
                tables: Tables::DOCUMENTS.with(Tables::SESSIONS),
                documents: None,
            },
        );
        assert_eq!(changed(1, 5), None, "too many to note");
        assert_eq!(changed(5, 5), Some(vec![]));
        assert!(!watch.holds(Tables::SESSIONS, at(4), at(5)));
        assert!(watch.holds(Tables::WORKSPACES, at(1), at(5)));
    }

    #[test]
    fn only_a_restart_s_pattern_is_the_same_position() {
        let header = |change: u32, frames: u32, pages: u32, salt: u32| {
            let mut h = [0u8; super::HEADER_LEN];
            h[0..4].copy_from_slice(&3_007_000u32.to_ne_bytes());
            h[8..12].copy_from_slice(&change.to_ne_bytes());
            h[12] = 1;
            h[14..16].copy_from_slice(&4096u16.to_ne_bytes());
            h[16..20].copy_from_slice(&frames.to_ne_bytes());
            h[20..24].copy_from_slice(&pages.to_ne_bytes());
            h[32..36].copy_from_slice(&salt.to_be_bytes());
            super::Stamp::Wal(h)
        };
        let watch = CommitWatch::new(std::path::Path::new("/nonexistent/none.db"));
        let at = header(5, 4, 100, 7);
        assert!(watch.same_data(at, header(5, 0, 100, 8)), "a restart");
        assert!(
            !watch.same_data(at, header(6, 0, 100, 8)),
            "a commit moved the counter"
        );
        assert!(!watch.same_data(at, header(5, 1, 100, 8)), "frames written");
        assert!(!watch.same_data(at, header(5, 0, 101, 8)), "another size");
        assert!(
            !watch.same_data(at, header(5, 0, 100, 9)),
            "not the next salt"
        );
        assert!(!watch.same_data(at, header(5, 4, 100, 8)), "not a restart");
    }
}
