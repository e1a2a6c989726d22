//! Checkpoints off the writer's path: a thread with its own connection copies
//! committed WAL pages back into the database file every few milliseconds
//! (`PRAGMA wal_checkpoint(PASSIVE)`, which never blocks readers or the
//! writer). Left to SQLite's automatic checkpoint, that copy and the fsync of
//! the database file would run inside a writer's COMMIT every 1,000 pages and
//! stall every write queued behind it.
//!
//! The WAL starts over from its beginning only when a writer begins its
//! transaction with every frame copied back, and under a steady stream of
//! commits the background copy never catches up with the last one. So once
//! the WAL holds [`RESTART_AT`] frames and a background checkpoint copied all
//! of them, it tells the writer ([`CaughtUp`]). Between two batches the writer
//! then checkpoints itself, copying only the frames committed since, and its
//! next batch starts the WAL over. SQLite's own automatic checkpoint in the
//! writer's COMMIT stays as a backstop, at [`WRITER_AUTOCHECKPOINT_PAGES`].
//! That one is costly: it fires at every commit once the WAL is past it,
//! copies whatever the background has not yet, and syncs both files each
//! time, within the COMMIT. When it was the only way to start over, at 4,000
//! frames, the writer copied about a third of all pages under PUT load.
//!
//! SQLite syncs the database file only in a checkpoint that reaches the
//! WAL's end, so the writer's own checkpoint used to sync everything the
//! background had copied since, with every write waiting on it. The
//! background now syncs the file itself, every [`SYNC_AFTER`] frames and
//! before it tells the writer, and the writer's sync finds little left.

use std::ffi::c_int;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::ffi;

/// The writer's own automatic checkpoint threshold, in pages: a backstop
/// for a background checkpoint that falls behind (a WAL of about 256 MiB).
pub const WRITER_AUTOCHECKPOINT_PAGES: u32 = if cfg!(test) { 1_600 } else { 64_000 };

/// The WAL's length, in frames, from which a background checkpoint that
/// copied every frame asks the writer to start the WAL over: about 64 MiB.
/// Every start over costs the writer a checkpoint of its own, with two
/// `fsync`s; at 4,000 frames they came several times a second under PUT
/// load, and the PUT ran 5-10% slower than at 16,000 (interleaved runs).
/// (Smaller in unit tests, which fill it.)
const RESTART_AT: c_int = if cfg!(test) { 400 } else { 16_000 };

/// Frames the background checkpoint copies before it syncs the database file
/// (see [`round`]): a quarter of [`RESTART_AT`].
const SYNC_AFTER: c_int = RESTART_AT / 4;

/// Set by the background checkpoint when it copied every frame of a WAL of
/// [`RESTART_AT`] frames or more; taken by the writer between two batches.
#[derive(Debug, Default)]
pub struct CaughtUp(AtomicBool);

impl CaughtUp {
    /// Whether a background checkpoint caught up since the last call.
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::Relaxed)
    }
}

/// How often the background checkpoint runs. A tenth as often (500 ms) made
/// no difference to the PUT's throughput (eight interleaved rounds, median
/// ratio 1.007): what a checkpoint copies is not what the writer waits on.
const INTERVAL: Duration = Duration::from_millis(50);

pub struct Checkpointer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The flag the thread sets (a test makes the thread's round itself).
    #[cfg_attr(not(test), allow(dead_code))]
    caught_up: Arc<CaughtUp>,
}

/// One background checkpoint, and the writer told when it copied every frame
/// of a WAL past [`RESTART_AT`]. `flushed` is how far into the WAL the
/// database file is known to be on disk (kept from round to round).
fn round(conn: &rusqlite::Connection, caught_up: &CaughtUp, flushed: &mut c_int) {
    // Busy (another checkpoint running) or failed: the next round, or the
    // writer's backstop, catches up.
    match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((row.get::<_, c_int>(1)?, row.get::<_, c_int>(2)?))
    }) {
        Ok((frames, copied)) => {
            // SQLite syncs the database file only in a checkpoint that
            // reaches the WAL's end as it is when the copy ends, which under
            // a steady stream of commits the background never does (and the
            // answer cannot tell: it compares with the WAL as the checkpoint
            // began). The pages it copied stayed dirty until the writer's
            // own checkpoint, whose sync then wrote them all while every
            // write waited: 10 ms on a small file under PUT, 40-130 ms at
            // 100,000 jobs. They go to the disk here, off the writer's path:
            // before the writer is told to start the WAL over, and whenever
            // [`SYNC_AFTER`] frames were copied since the last time (a page
            // copied again before then is written once).
            let catching_up = frames >= RESTART_AT && copied == frames;
            let unsynced = if copied >= *flushed {
                copied - *flushed
            } else {
                copied
            };
            if unsynced > 0 && (catching_up || unsynced >= SYNC_AFTER) {
                match sync_database(conn) {
                    Ok(()) => *flushed = copied,
                    Err(code) => log::debug!("background checkpoint: sync: SQLite error {code}"),
                }
            }
            if catching_up {
                caught_up.0.store(true, Ordering::Relaxed);
            }
        }
        Err(err) => log::debug!("background checkpoint: {err}"),
    }
}

/// Syncs the database file of `conn` through SQLite's own descriptor
/// (`SQLITE_FCNTL_FILE_POINTER`, then the file's `xSync`): a descriptor of our
/// own on the file would, once closed, drop the locks SQLite holds on it.
fn sync_database(conn: &rusqlite::Connection) -> Result<(), c_int> {
    // SAFETY: this thread's open connection, which only this thread uses;
    // its main file is open with its methods until the connection closes.
    unsafe {
        let file = super::wal_writes::main_file(conn.handle())?;
        let sync = (*file)
            .pMethods
            .as_ref()
            .and_then(|methods| methods.xSync)
            .ok_or(ffi::SQLITE_MISUSE)?;
        match sync(file, ffi::SQLITE_SYNC_NORMAL) {
            ffi::SQLITE_OK => Ok(()),
            code => Err(code),
        }
    }
}

/// Why the background checkpoint could not start.
#[derive(Debug)]
pub enum CheckpointError {
    /// Its own connection to the file could not be opened.
    Open(rusqlite::Error),
    /// The thread could not be spawned.
    Thread(std::io::Error),
}

impl std::fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CheckpointError::Open(_) => "cannot open the checkpoint connection",
            CheckpointError::Thread(_) => "cannot start the checkpoint thread",
        })
    }
}

impl std::error::Error for CheckpointError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CheckpointError::Open(e) => Some(e),
            CheckpointError::Thread(e) => Some(e),
        }
    }
}

impl Checkpointer {
    pub fn start(path: &Path, caught_up: Arc<CaughtUp>) -> Result<Checkpointer, CheckpointError> {
        let conn = super::open_connection(path).map_err(CheckpointError::Open)?;
        let tell_writer = caught_up.clone();
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let signal = stop.clone();
        let thread = std::thread::Builder::new()
            .name("quayside-checkpoint".into())
            .spawn(move || {
                let (stopped, wake) = &*signal;
                let mut done = stopped.lock().unwrap_or_else(|p| p.into_inner());
                let mut flushed = 0;
                while !*done {
                    done = wake
                        .wait_timeout(done, INTERVAL)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    round(&conn, &tell_writer, &mut flushed);
                }
            })
            .map_err(CheckpointError::Thread)?;
        Ok(Checkpointer {
            stop,
            thread: Mutex::new(Some(thread)),
            caught_up,
        })
    }

    /// Stops the thread (its connection closes with it).
    pub fn stop(&self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::c_int;
    use std::sync::Arc;

    use crate::db::Db;
    use crate::db::writer::NoCapture;
    use crate::test_support::{hold_writer, queued};

    /// The frames in the WAL: the WAL-index header's `mxFrame`, bytes 16 to
    /// 20 of the `-shm` file, in the machine's byte order.
    fn frames(path: &std::path::Path) -> u32 {
        let mut shm = path.as_os_str().to_owned();
        shm.push("-shm");
        let header = std::fs::read(shm).expect("the WAL index");
        u32::from_ne_bytes(header[16..20].try_into().expect("four bytes"))
    }

    /// A commit lands between a background checkpoint that copied every
    /// frame and the writer's next transaction, as under a steady stream of
    /// commits, so that transaction cannot start the WAL over by itself; the
    /// writer's own checkpoint, once told, lets the one after do it. The
    /// background thread is stopped and its round made by the test.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_writer_starts_the_wal_over_once_a_background_checkpoint_caught_up() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("data.db");
        let db = Db::open(&path, 2, None, Arc::new(NoCapture)).expect("open");
        let background = db.checkpointer.clone().expect("a data file's");
        background.stop();
        db.write(|conn| Ok(conn.execute_batch("CREATE TABLE t (x BLOB)")?))
            .await
            .expect("table");
        let insert =
            || db.write(|conn| Ok(conn.execute("INSERT INTO t VALUES (randomblob(3000))", [])?));
        while frames(&path) < super::RESTART_AT as u32 {
            insert().await.expect("insert");
        }
        let (release, held) = hold_writer(&db).await;
        let joining = queued(insert());
        let own = rusqlite::Connection::open(&path).expect("own connection");
        let mut flushed = 0;
        super::round(&own, &background.caught_up, &mut flushed);
        assert!(
            flushed >= super::RESTART_AT,
            "the round that caught up synced the database file first ({flushed} frames)"
        );
        release.send(()).expect("release");
        held.await.expect("held").expect("the held write");
        joining.await.expect("joined").expect("the insert");
        let before = frames(&path);
        assert!(before > super::RESTART_AT as u32, "{before} frames");
        insert().await.expect("insert");
        let after = frames(&path);
        assert!(
            after < before,
            "the WAL started over: {before} frames, then {after}"
        );
        db.close().expect("close");
    }

    /// The background checkpoint syncs the database file itself once it
    /// copied [`super::SYNC_AFTER`] frames since the last time, not at every
    /// round: SQLite syncs it only in a checkpoint that reaches the WAL's
    /// end. A reader holding an older snapshot keeps the first round short
    /// of the end.
    #[test]
    fn the_background_checkpoint_syncs_the_database_file_past_a_number_of_frames() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("data.db");
        let writer = crate::db::open_connection(&path).expect("writer");
        writer
            .execute_batch("PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x BLOB)")
            .expect("table");
        let insert = |rows: usize| {
            for _ in 0..rows {
                writer
                    .execute("INSERT INTO t VALUES (randomblob(3000))", [])
                    .expect("insert");
            }
        };
        let frames_and_copied = |conn: &rusqlite::Connection| -> (c_int, c_int) {
            conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
                Ok((row.get(1)?, row.get(2)?))
            })
            .expect("frames")
        };
        insert(10);
        let reader = crate::db::open_connection(&path).expect("reader");
        reader
            .execute_batch("BEGIN; SELECT count(*) FROM t;")
            .expect("a read transaction");
        insert(usize::try_from(super::SYNC_AFTER).expect("positive") + 20);
        let own = crate::db::open_connection(&path).expect("checkpoint connection");
        let caught_up = super::CaughtUp::default();
        let mut flushed = 0;
        super::round(&own, &caught_up, &mut flushed);
        let (frames, copied) = frames_and_copied(&own);
        assert!(
            0 < copied && copied < super::SYNC_AFTER && copied < frames,
            "{copied} of {frames} frames copied"
        );
        assert_eq!(flushed, 0, "no sync for {copied} frames");
        reader.execute_batch("COMMIT").expect("the read ends");
        super::round(&own, &caught_up, &mut flushed);
        let (frames, copied) = frames_and_copied(&own);
        assert!(
            copied >= super::SYNC_AFTER,
            "{copied} of {frames} frames copied"
        );
        assert_eq!(flushed, copied, "synced through every frame copied");
        assert!(!caught_up.take(), "a WAL under the restart length");
    }
}
