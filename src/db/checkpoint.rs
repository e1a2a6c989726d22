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

use std::ffi::c_int;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

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
/// of a WAL past [`RESTART_AT`].
fn round(conn: &rusqlite::Connection, caught_up: &CaughtUp) {
    // Busy (another checkpoint running) or failed: the next round, or the
    // writer's backstop, catches up.
    match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((row.get::<_, c_int>(1)?, row.get::<_, c_int>(2)?))
    }) {
        Ok((frames, copied)) if frames >= RESTART_AT && copied == frames => {
            caught_up.0.store(true, Ordering::Relaxed);
        }
        Ok(_) => {}
        Err(err) => log::debug!("background checkpoint: {err}"),
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
                while !*done {
                    done = wake
                        .wait_timeout(done, INTERVAL)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    round(&conn, &tell_writer);
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
        super::round(&own, &background.caught_up);
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
}
