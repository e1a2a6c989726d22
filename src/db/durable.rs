//! Durability off the writer's path (a data file): the writer's connection
//! commits with `synchronous = NORMAL`, so a COMMIT writes its WAL frames
//! without waiting for the disk, and the writer goes on with its next batch
//! while the [`Syncer`]'s thread makes the WAL durable (`fdatasync`) for every
//! batch committed so far, then answers them. The disk's flush and the next
//! batch's work overlap, as PostgreSQL's WAL writer and InnoDB's group commit
//! do; a flush covers every batch committed while the one before it ran.
//!
//! What stays true:
//! - A write is acknowledged only once its batch is on disk, and the change
//!   log's head moves only then (a feed or a webhook never passes on a change
//!   that a power loss could take back).
//! - Nothing read from the store leaves the server before what it read is on
//!   disk: a commit is visible to readers as soon as its COMMIT returns, so a
//!   read notes the last batch that had begun committing when it ended
//!   ([`Durable::observed`]) and waits until that batch is durable
//!   ([`Durable::settled`]); a session found in the session cache does the
//!   same (`SessionCheck::authenticate`), and the read cache keeps only
//!   answers whose read has waited. `quayside backup` flushes the WAL after
//!   its copy ([`flush_wal_of`]). Without writes in flight this is two
//!   atomic loads.
//! - A flush that fails stops the process: after a failed `fdatasync` the
//!   kernel may have dropped the pages it could not write, and no later
//!   flush would say so (PostgreSQL panics for the same reason). SQLite
//!   recovers the WAL at the next start, up to the last commit that reached
//!   the disk; nothing acknowledged is lost.
//!
//! A process killed outright loses nothing either way: its frames are in the
//! kernel's page cache. What the deferred flush changes is only who waits
//! for the disk: the caller, not the writer.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

use tokio::sync::watch;

/// Which of the writer's batches are committed, and which are on disk.
pub struct Durable {
    /// The last batch whose COMMIT has begun (batches are numbered from 1).
    committing: AtomicU64,
    /// The last batch known to be on disk (mirrors `durable_watch`, for the
    /// fast path).
    durable: AtomicU64,
    durable_watch: watch::Sender<u64>,
    /// Flushes made so far.
    flushes: AtomicU64,
    /// How long the last flush took, in nanoseconds.
    last_flush_ns: AtomicU64,
    /// Tests: while true, the sync thread holds batches before flushing.
    #[cfg(test)]
    held: (Mutex<bool>, std::sync::Condvar),
}

impl Default for Durable {
    fn default() -> Self {
        Durable {
            committing: AtomicU64::new(0),
            durable: AtomicU64::new(0),
            durable_watch: watch::Sender::new(0),
            flushes: AtomicU64::new(0),
            last_flush_ns: AtomicU64::new(0),
            #[cfg(test)]
            held: Default::default(),
        }
    }
}

impl Durable {
    /// The writer, just before a COMMIT: the batch's number.
    pub fn begin_commit(&self) -> u64 {
        self.committing.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The last batch that may be visible to a read that has ended: a
    /// batch's number is taken before its COMMIT makes it visible.
    pub fn observed(&self) -> u64 {
        self.committing.load(Ordering::SeqCst)
    }

    /// Whether every batch up to `batch` is on disk.
    pub fn is_durable(&self, batch: u64) -> bool {
        self.durable.load(Ordering::SeqCst) >= batch
    }

    /// Waits until every batch up to `batch` is on disk.
    pub async fn settled(&self, batch: u64) {
        if self.is_durable(batch) {
            return;
        }
        let mut durable = self.durable_watch.subscribe();
        // The sender lives as long as `self`.
        let _ = durable.wait_for(|done| *done >= batch).await;
    }

    /// Flushes made so far (tests check that batches share them).
    pub fn flushes(&self) -> u64 {
        self.flushes.load(Ordering::Relaxed)
    }

    /// How long the last flush took (zero before the first).
    pub fn last_flush(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.last_flush_ns.load(Ordering::Relaxed))
    }

    /// Tests: holds (or releases) the batches committed from now on before
    /// their flush.
    #[cfg(test)]
    pub fn hold(&self, hold: bool) {
        *self.held.0.lock().unwrap_or_else(|p| p.into_inner()) = hold;
        self.held.1.notify_all();
    }

    #[cfg(test)]
    fn pass(&self) {
        let mut held = self.held.0.lock().unwrap_or_else(|p| p.into_inner());
        while *held {
            held = self.held.1.wait(held).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn mark_durable(&self, batch: u64) {
        self.durable.fetch_max(batch, Ordering::SeqCst);
        self.durable_watch.send_if_modified(|done| {
            let moved = batch > *done;
            *done = (*done).max(batch);
            moved
        });
    }
}

/// What to do once a batch is on disk: publish its changes, answer its
/// callers.
pub type Then = Box<dyn FnOnce() + Send>;

/// The thread that flushes the WAL behind the writer.
pub struct Syncer {
    queue: Option<mpsc::Sender<(u64, Then)>>,
    thread: Option<JoinHandle<()>>,
    wal: Arc<Mutex<Wal>>,
    durable: Arc<Durable>,
}

impl Syncer {
    /// Starts the thread for the data file `path` (its WAL is `path-wal`).
    pub fn start(path: &Path, durable: Arc<Durable>) -> std::io::Result<Syncer> {
        let wal = Arc::new(Mutex::new(Wal::of(path)));
        let (queue, batches) = mpsc::channel::<(u64, Then)>();
        let (thread_wal, thread_durable) = (wal.clone(), durable.clone());
        let thread = std::thread::Builder::new()
            .name("quayside-sync".into())
            .spawn(move || run(&batches, &thread_wal, &thread_durable))?;
        Ok(Syncer {
            queue: Some(queue),
            thread: Some(thread),
            wal,
            durable,
        })
    }

    /// Runs `then` once every batch up to `batch` (committed) is on disk.
    pub fn after_flush(&self, batch: u64, then: Then) {
        let unsent = match &self.queue {
            Some(queue) => queue.send((batch, then)).err().map(|e| e.0),
            None => Some((batch, then)),
        };
        if let Some((batch, then)) = unsent {
            // The thread is gone (it stops only with the writer): flush here.
            flush(&self.wal, &self.durable, batch);
            answer(then);
        }
    }

    /// Flushes and answers what is queued, then ends the thread. Also when
    /// the writer's thread unwinds: every batch that began its COMMIT is
    /// then flushed and marked durable, so that no reader waits for it
    /// forever.
    pub fn finish(&mut self) {
        self.queue.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let begun = self.durable.observed();
        if !self.durable.is_durable(begun) {
            flush(&self.wal, &self.durable, begun);
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The thread: takes every batch committed so far, flushes once for all of
/// them, marks them durable, then runs what waited on each, in order.
fn run(batches: &mpsc::Receiver<(u64, Then)>, wal: &Mutex<Wal>, durable: &Durable) {
    while let Ok(first) = batches.recv() {
        #[cfg(test)]
        durable.pass();
        let mut done = vec![first];
        done.extend(batches.try_iter());
        let last = done.iter().map(|(batch, _)| *batch).max().unwrap_or(0);
        flush(wal, durable, last);
        for (_, then) in done {
            answer(then);
        }
    }
}

/// Runs what waited on a flush; a panic there (answering a caller) is
/// logged and does not stop the thread, which answers the rest.
fn answer(then: Then) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(then)).is_err() {
        log::error!("answering a flushed batch panicked");
    }
}

/// Makes the WAL durable up to batch `batch` (committed before this call),
/// or stops the process (see the module's documentation).
fn flush(wal: &Mutex<Wal>, durable: &Durable, batch: u64) {
    let mut wal = wal.lock().unwrap_or_else(|p| p.into_inner());
    let began = std::time::Instant::now();
    if let Err(err) = wal.flush() {
        log::error!(
            "cannot make the WAL {} durable: {err}; stopping, so that no write is acknowledged \
             that the disk may not hold (the next start recovers what it holds)",
            wal.path.display()
        );
        std::process::exit(70);
    }
    durable.flushes.fetch_add(1, Ordering::Relaxed);
    let took = u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX);
    durable.last_flush_ns.store(took, Ordering::Relaxed);
    durable.mark_durable(batch);
}

/// The data file's WAL, opened on the first flush and again whenever the
/// path names another file (SQLite removes the WAL when the last connection
/// to the file closes, and makes a new one at the next write).
struct Wal {
    path: PathBuf,
    /// The open WAL and its inode.
    file: Option<(File, u64)>,
}

impl Wal {
    /// The WAL of the data file `path` (`path-wal`), not opened yet.
    fn of(path: &Path) -> Wal {
        let mut name = path.as_os_str().to_owned();
        name.push("-wal");
        Wal {
            path: PathBuf::from(name),
            file: None,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let inode = match inode_of(&self.path) {
            Ok(inode) => inode,
            // No WAL: the last connection folded it into the file, which
            // SQLite syncs before removing it.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(err),
        };
        if self.file.as_ref().is_none_or(|(_, open)| *open != inode) {
            let file = File::open(&self.path)?;
            self.sync_directory();
            self.file = Some((file, inode));
        }
        match &self.file {
            Some((file, _)) => file.sync_data(),
            None => Ok(()),
        }
    }

    /// A new WAL's directory entry must reach the disk too: SQLite syncs the
    /// directory after creating a journal it syncs, and, as SQLite does,
    /// takes a file system that cannot sync a directory as it is (a warning,
    /// not a stop).
    fn sync_directory(&self) {
        let dir = match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        if let Err(err) = File::open(dir).and_then(|dir| dir.sync_all()) {
            log::warn!("cannot sync the directory {}: {err}", dir.display());
        }
    }
}

/// One field of a file's status that [`stat_field`] asks for alone.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Field {
    Inode,
    Size,
}

/// The inode number of the file at `path`, asking for nothing else.
fn inode_of(path: &Path) -> std::io::Result<u64> {
    stat_field(path, Field::Inode)
}

/// The inode number or the size of the file at `path`, asking for nothing
/// else.
///
/// Not `std::fs::metadata`: that asks for the timestamps too, and on Linux
/// 6.13 and later (multigrain timestamps, ext4 among others) a file whose
/// change time was read gets a fine-grained one at its next write, so every
/// write after such a read dirties the inode, and the next `fdatasync` then
/// writes the inode's block to the disk, a synchronous write of its own
/// before the cache flush. Asked once per flush, that was most flushes: on
/// this project's 2-core VM under PUT load 79% of the WAL's flushes wrote the
/// inode, and 19% (the coarse clock's ticks) since the question asks for the
/// inode alone. The WAL's size (`wal_writes`) is asked the same way.
#[cfg(target_os = "linux")]
pub(crate) fn stat_field(path: &Path, field: Field) -> std::io::Result<u64> {
    use std::ffi::{CString, c_char, c_int, c_uint};
    use std::os::unix::ffi::OsStrExt;
    unsafe extern "C" {
        fn statx(
            dirfd: c_int,
            path: *const c_char,
            flags: c_int,
            mask: c_uint,
            out: *mut [u64; 32],
        ) -> c_int;
    }
    const AT_FDCWD: c_int = -100;
    const ENOSYS: i32 = 38;
    // `struct statx` is 256 bytes; `stx_mask` is its first field (a u32),
    // `stx_ino` the u64 at byte 32 and `stx_size` the one at byte 40.
    let (mask, at): (c_uint, usize) = match field {
        Field::Inode => (0x100, 4),
        Field::Size => (0x200, 5),
    };
    let name = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let mut out = [0u64; 32];
    // SAFETY: a NUL-terminated path and a buffer the size of `struct statx`.
    let status = unsafe { statx(AT_FDCWD, name.as_ptr(), 0, mask, &mut out) };
    if status != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(ENOSYS) {
            // A kernel before 4.11.
            return metadata_field(path, field);
        }
        return Err(err);
    }
    if out[0] as u32 & mask == 0 {
        return metadata_field(path, field);
    }
    Ok(out[at])
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn stat_field(path: &Path, field: Field) -> std::io::Result<u64> {
    metadata_field(path, field)
}

fn metadata_field(path: &Path, field: Field) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map(|meta| match field {
        Field::Inode => meta.ino(),
        Field::Size => meta.len(),
    })
}

/// Makes the WAL of the data file `path` durable: for a copy of the file
/// taken while a server writes it (`quayside backup`), whose snapshot may
/// hold batches the server has not flushed yet.
pub fn flush_wal_of(path: &Path) -> std::io::Result<()> {
    Wal::of(path).flush()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::db::Db;
    use crate::db::writer::NoCapture;
    use crate::test_support::{hold_writer, queued};

    /// Long enough for a write or a read to have answered if it did not wait.
    const WOULD_HAVE_ANSWERED: Duration = Duration::from_millis(200);

    /// A store on a new file with a table `t`, its durability counts, and
    /// the file's path (for a connection of the test's own).
    struct Store {
        _dir: tempfile::TempDir,
        path: std::path::PathBuf,
        db: Db,
        durable: Arc<super::Durable>,
    }

    async fn store(capture: Arc<dyn crate::db::writer::Capture>) -> Store {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("durable.db");
        let db = Db::open(&path, 2, None, capture).expect("open");
        db.write(|conn| Ok(conn.execute_batch("CREATE TABLE t (x INTEGER)")?))
            .await
            .expect("table");
        let durable = db.durable.clone().expect("a data file counts its flushes");
        Store {
            _dir: dir,
            path,
            db,
            durable,
        }
    }

    /// Waits until a connection of the test's own, which waits for nothing
    /// of the server's, sees `rows` rows in `t`: committed, flushed or not.
    async fn committed(path: &std::path::Path, rows: i64) {
        let own = rusqlite::Connection::open(path).expect("own connection");
        crate::test_support::until("the rows are committed", || {
            own.query_row("SELECT count(*) FROM t", [], |row| row.get::<_, i64>(0))
                .expect("count")
                >= rows
        })
        .await;
    }

    /// A write is answered only once its batch is on disk, and a read that
    /// saw the write waits as long, though the row is visible to any
    /// connection as soon as the writer's COMMIT returned. Batches committed
    /// while a flush waits are answered by the next one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_and_a_read_that_saw_it_answer_once_it_is_flushed() {
        let Store {
            _dir,
            path,
            db,
            durable,
        } = store(Arc::new(NoCapture)).await;
        let flushes = durable.flushes();
        assert!(flushes >= 1, "the table's batch was flushed");
        assert!(durable.is_durable(durable.observed()));

        durable.hold(true);
        let writes: Vec<_> = (1..=3)
            .map(|x| {
                tokio::spawn(
                    db.write(move |conn| Ok(conn.execute("INSERT INTO t VALUES (?1)", [x])?)),
                )
            })
            .collect();
        committed(&path, 3).await;
        let read = tokio::spawn(db.read(|conn, _| {
            Ok(conn.query_row("SELECT count(*) FROM t", [], |row| row.get::<_, i64>(0))?)
        }));
        tokio::time::sleep(WOULD_HAVE_ANSWERED).await;
        assert!(
            writes.iter().all(|w| !w.is_finished()),
            "no write is answered before its flush"
        );
        assert!(!read.is_finished(), "a read that saw them waits too");
        assert!(!durable.is_durable(durable.observed()));

        durable.hold(false);
        for write in writes {
            assert_eq!(write.await.expect("join").expect("write"), 1);
        }
        assert_eq!(read.await.expect("join").expect("read"), 3);
        assert!(durable.is_durable(durable.observed()));
        assert!(durable.flushes() > flushes);
        assert!(
            durable.last_flush() > Duration::ZERO,
            "a flush's time is measured"
        );
        db.close().expect("close");
    }

    /// Records every write's changes but one actor's, which it refuses: the
    /// batch holding that write is rolled back.
    struct RefusingOne;

    impl crate::db::writer::Capture for RefusingOne {
        fn install(&self, _: &crate::db::Conn) -> crate::db::Result<()> {
            Ok(())
        }
        fn record(&self, _: &crate::db::Conn, actor: &str) -> crate::error::ApiResult<Option<u64>> {
            if actor == "refused" {
                Err(crate::error::ApiError::internal("refused"))
            } else {
                Ok(None)
            }
        }
        fn discard(&self) {}
        fn head(&self, _: &crate::db::Conn) -> crate::db::Result<u64> {
            Ok(0)
        }
    }

    /// A write that fails by itself, on what an earlier batch committed,
    /// in a batch that is rolled back (a write of it could not be
    /// recorded): its own answer (a 409) shows that earlier batch, so it
    /// too waits until that batch is flushed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_refused_on_what_it_read_in_a_rolled_back_batch_waits_for_the_flush() {
        let Store {
            _dir,
            path,
            db,
            durable,
        } = store(Arc::new(RefusingOne)).await;
        durable.hold(true);
        let first =
            tokio::spawn(db.write(|conn| Ok(conn.execute("INSERT INTO t VALUES (1)", [])?)));
        committed(&path, 1).await;
        // A write holding the writer until the next two are queued, so
        // that they join its batch.
        let (release, hold) = hold_writer(&db).await;
        let conflict = queued(db.write(|conn| {
            let rows: i64 = conn.query_row("SELECT count(*) FROM t", [], |row| row.get(0))?;
            if rows > 0 {
                return Err(crate::error::ApiError::Conflict {
                    code: "exists",
                    message: "a row is there".into(),
                });
            }
            Ok(())
        }));
        let refused = queued(db.write_as(Arc::from("refused"), |conn| {
            Ok(conn.execute("INSERT INTO t VALUES (2)", [])?)
        }));
        drop(release);
        tokio::time::sleep(WOULD_HAVE_ANSWERED).await;
        assert!(
            !conflict.is_finished(),
            "the refusal shows the first write, not yet flushed"
        );
        durable.hold(false);
        let refusal = conflict.await.expect("join").expect_err("refused");
        assert_eq!(refusal.status(), 409);
        assert!(
            refused.await.expect("join").is_err(),
            "its batch rolled back"
        );
        let _ = hold.await.expect("join");
        assert_eq!(first.await.expect("join").expect("first"), 1);
        db.close().expect("close");
    }

    /// The inode number asked for alone is the one the file's metadata has,
    /// and a missing file is `NotFound`, which the flush takes as "no WAL".
    #[test]
    fn the_inode_and_size_of_a_file_are_its_metadata_s_and_a_missing_file_is_not_found() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("some-wal");
        std::fs::write(&path, b"frames").expect("write");
        let inode = super::inode_of(&path).expect("inode");
        assert_eq!(inode, std::fs::metadata(&path).expect("metadata").ino());
        let size = super::stat_field(&path, super::Field::Size).expect("size");
        assert_eq!(size, 6);
        let missing = super::inode_of(&dir.path().join("none")).expect_err("missing");
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }

    /// Reads wait for nothing while nothing is being written.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn without_writes_a_read_waits_for_no_flush() {
        let Store {
            _dir, db, durable, ..
        } = store(Arc::new(NoCapture)).await;
        // Held from here: a read that waited for a flush would never answer.
        durable.hold(true);
        let rows = tokio::time::timeout(
            Duration::from_secs(30),
            db.read(|conn, _| {
                Ok(conn.query_row("SELECT count(*) FROM t", [], |row| row.get::<_, i64>(0))?)
            }),
        )
        .await
        .expect("a read of durable data does not wait")
        .expect("read");
        assert_eq!(rows, 0);
        durable.hold(false);
        db.close().expect("close");
    }
}
