//! Commits of other processes that appended changes, heard as PostgreSQL
//! notifications: what wakes this process's waiting feed readers (long-polls,
//! live streams) and its webhook worker when another process wrote, as its
//! own writer's head wakes them for its own writes.
//!
//! A hint, never a fact: a reader that wakes still reads the commit counter
//! and the log itself, and a notification lost (the connection dropped, the
//! server restarted) costs only promptness; readers also look every 500 ms
//! (`app::Follow`). The writer announces a batch that appended changes in
//! its commit's round trip ([`announce`], `Conn::commit`), with this
//! process's [`token`] as the payload, so the process ignores its own.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use super::{Client, ConnectOptions};

/// The notification channel.
pub const CHANNEL: &str = "quayside_changes";

/// How long the thread waits for a notification before it looks whether it
/// should stop.
const POLL: Duration = Duration::from_millis(500);

/// After a failed connection, the pause before the next attempt.
const RECONNECT_PAUSE: Duration = Duration::from_secs(1);

/// This process's payload: a random token, the same for all its connections.
pub fn token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| uuid::Uuid::new_v4().simple().to_string())
}

/// The statements that announce a commit, sent before `COMMIT` in its round
/// trip (a notification is delivered only if the transaction commits).
pub fn announce() -> String {
    format!("SELECT pg_notify('{CHANNEL}', '{}')", token())
}

/// The listening thread; it stops when this is dropped.
pub struct Listener {
    stop: Arc<AtomicBool>,
    heard: watch::Receiver<u64>,
}

impl Listener {
    /// Starts the thread; its connection is made there (and made again when
    /// lost).
    pub fn start(options: ConnectOptions) -> std::io::Result<Listener> {
        let stop = Arc::new(AtomicBool::new(false));
        let (send, heard) = watch::channel(0);
        let thread_stop = stop.clone();
        std::thread::Builder::new()
            .name("quayside-listen".into())
            .spawn(move || listen(&options, &thread_stop, &send))?;
        Ok(Listener { stop, heard })
    }

    /// Counts the other processes' announced commits heard so far: it
    /// changes when one is heard.
    pub fn heard(&self) -> watch::Receiver<u64> {
        self.heard.clone()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn listen(options: &ConnectOptions, stop: &AtomicBool, send: &watch::Sender<u64>) {
    let mut client: Option<Client> = None;
    while !stop.load(Ordering::SeqCst) {
        let Some(listening) = client.as_ref() else {
            match Client::connect(options)
                .and_then(|c| c.batch_execute(&format!("LISTEN {CHANNEL}")).map(|()| c))
            {
                Ok(made) => {
                    client = Some(made);
                    // Commits made while nobody listened are not heard:
                    // waiting readers look again at once.
                    send.send_modify(|n| *n += 1);
                }
                Err(err) => {
                    log::warn!("cannot listen for other processes' commits (readers poll): {err}");
                    std::thread::sleep(RECONNECT_PAUSE);
                }
            }
            continue;
        };
        match listening.notifications(POLL) {
            Ok(payloads) => {
                if payloads.iter().any(|p| p != token()) {
                    send.send_modify(|n| *n += 1);
                }
            }
            Err(err) => {
                log::warn!("lost the connection listening for other processes' commits: {err}");
                client = None;
            }
        }
    }
}
