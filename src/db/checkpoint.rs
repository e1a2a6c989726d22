//! Checkpoints off the writer's path: a thread with its own connection copies
//! committed WAL pages back into the database file every few milliseconds
//! (`PRAGMA wal_checkpoint(PASSIVE)`, which never blocks readers or the
//! writer). Left to SQLite's automatic checkpoint, that copy and the fsync of
//! the database file would run inside a writer's COMMIT every 1,000 pages and
//! stall every write queued behind it. The writer keeps a larger automatic
//! checkpoint as a backstop ([`WRITER_AUTOCHECKPOINT_PAGES`]): by then almost
//! every page is already copied, and its checkpoint lets the WAL start over
//! from the beginning instead of growing.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The writer's own automatic checkpoint threshold, in pages.
pub const WRITER_AUTOCHECKPOINT_PAGES: u32 = 4000;

/// How often the background checkpoint runs. A tenth as often (500 ms) made
/// no difference to the PUT's throughput (eight interleaved rounds, median
/// ratio 1.007): what a checkpoint copies is not what the writer waits on.
const INTERVAL: Duration = Duration::from_millis(50);

pub struct Checkpointer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
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
    pub fn start(path: &Path) -> Result<Checkpointer, CheckpointError> {
        let conn = super::open_connection(path).map_err(CheckpointError::Open)?;
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
                    // Busy (another checkpoint running) or failed: the next
                    // round, or the writer's backstop, catches up.
                    if let Err(err) =
                        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                    {
                        log::debug!("background checkpoint: {err}");
                    }
                }
            })
            .map_err(CheckpointError::Thread)?;
        Ok(Checkpointer {
            stop,
            thread: Mutex::new(Some(thread)),
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
