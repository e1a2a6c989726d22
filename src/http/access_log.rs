//! The access log: one line per request, off the request path.
//!
//! A request formats its own line (no lock) and hands it to a bounded queue
//! without waiting; a dedicated thread drains the queue every
//! [`Options::flush_every`] (100 ms by default, so at most that late) and at
//! shutdown, and writes what it found in a few large writes, each at most
//! `PIPE_BUF` bytes and cut at line ends, so that lines never interleave with
//! the server's other log lines on a shared pipe (journald) or file.
//!
//! A line reads `TIME [INFO] access: CLIENT METHOD TARGET STATUS DURATIONms`, as
//! it did when the general logger wrote it, so what reads the log still works.
//!
//! Requests never wake the writer and never wait for it: when the queue is
//! full, the line is dropped and counted, and the writer reports the count in
//! one warning (`access log: N lines dropped ...`) when it next drains. A
//! server that slows every request down to keep its log complete fails its
//! clients to please its disk; the count keeps the loss visible. The queue
//! holds [`Options::capacity`] lines (32,768 by default: a third of a second
//! at 100,000 requests/s, about 5 MB at most).
//!
//! With a file as target, SIGHUP makes the writer reopen it (for logrotate).

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where access lines go (`--access-log stderr|off|FILE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Stderr,
    File(PathBuf),
    Off,
}

impl FromStr for Target {
    type Err = String;

    fn from_str(text: &str) -> Result<Target, String> {
        match text {
            "stderr" => Ok(Target::Stderr),
            "off" => Ok(Target::Off),
            "" => Err("expected stderr, off or a file path".to_string()),
            path => Ok(Target::File(PathBuf::from(path))),
        }
    }
}

/// How the access log buffers.
#[derive(Clone, Debug)]
pub struct Options {
    /// Lines the queue holds before it drops.
    pub capacity: usize,
    /// How often the writer drains the queue.
    pub flush_every: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            capacity: 32_768,
            flush_every: Duration::from_millis(100),
        }
    }
}

/// The largest write that a pipe keeps whole (POSIX `PIPE_BUF` on Linux).
const PIPE_BUF: usize = 4096;

/// The request side of the access log; cheap to clone.
#[derive(Clone)]
pub struct AccessLog {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    queue: SyncSender<String>,
    dropped: AtomicU64,
    closing: AtomicBool,
    reopen: AtomicBool,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl AccessLog {
    /// An access log that writes nothing.
    pub fn off() -> AccessLog {
        AccessLog { inner: None }
    }

    /// Starts the writer thread. The file, if any, is opened (for appending)
    /// here, so a bad path fails the start.
    pub fn start(target: &Target, options: &Options) -> std::io::Result<AccessLog> {
        let sink = match target {
            Target::Off => return Ok(AccessLog::off()),
            Target::Stderr => Sink::Stderr,
            Target::File(path) => Sink::File {
                file: open_append(path)?,
                path: path.clone(),
            },
        };
        let (queue, lines) = std::sync::mpsc::sync_channel(options.capacity.max(1));
        let inner = Arc::new(Inner {
            queue,
            dropped: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            reopen: AtomicBool::new(false),
            writer: Mutex::new(None),
        });
        let shared = inner.clone();
        let every = options.flush_every;
        let handle = std::thread::Builder::new()
            .name("quayside-access-log".to_string())
            .spawn(move || write_lines(&shared, &lines, sink, every))?;
        *inner.writer.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        Ok(AccessLog { inner: Some(inner) })
    }

    /// Whether lines are written at all (callers skip the clock read if not).
    pub fn enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Queues one request's line: `access: REMOTE METHOD TARGET STATUS ELAPSEDms`. The
    /// target must already be redacted.
    pub fn record(
        &self,
        remote: SocketAddr,
        method: &str,
        target: &str,
        status: u16,
        elapsed: Duration,
    ) {
        let Some(inner) = &self.inner else { return };
        let mut line = String::with_capacity(96 + target.len());
        push_timestamp(&mut line);
        line.push_str(" [INFO] access: ");
        push_remote(&mut line, remote);
        line.push(' ');
        line.push_str(method);
        line.push(' ');
        line.push_str(target);
        line.push(' ');
        push_number(&mut line, u64::from(status));
        // Milliseconds with one decimal, in integers (float formatting cost
        // as much as the rest of the line).
        let tenths = (elapsed.as_micros() + 50) / 100;
        line.push(' ');
        push_number(&mut line, (tenths / 10) as u64);
        line.push('.');
        push_number(&mut line, (tenths % 10) as u64);
        line.push_str("ms\n");
        match inner.queue.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                inner.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Makes the writer reopen its file before its next write (SIGHUP).
    pub fn reopen(&self) {
        if let Some(inner) = &self.inner {
            inner.reopen.store(true, Ordering::Release);
        }
    }

    /// Writes every queued line, reports what was dropped, and stops the
    /// writer. Lines recorded afterwards are dropped.
    pub fn finish(&self) {
        let Some(inner) = &self.inner else { return };
        inner.closing.store(true, Ordering::Release);
        let handle = inner
            .writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handle) = handle {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

enum Sink {
    Stderr,
    File { file: File, path: PathBuf },
}

impl Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Stderr => std::io::stderr().lock().write_all(bytes),
            Sink::File { file, .. } => file.write_all(bytes),
        }
    }

    fn reopen(&mut self) {
        if let Sink::File { file, path } = self {
            match open_append(path) {
                Ok(reopened) => *file = reopened,
                Err(err) => log::error!(
                    "access log: cannot reopen {}: {err}; still writing to the old file",
                    path.display()
                ),
            }
        }
    }
}

fn open_append(path: &std::path::Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// The writer thread: every `every`, or when told to finish, drains the queue
/// into a buffer and writes it in pieces of at most `PIPE_BUF` cut at line
/// ends (a longer line goes alone, whole).
fn write_lines(inner: &Inner, lines: &Receiver<String>, mut sink: Sink, every: Duration) {
    let mut buffer: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut failed_since: Option<Instant> = None;
    loop {
        // park_timeout may return early (spuriously); drain on the clock only.
        let next = Instant::now() + every;
        while !inner.closing.load(Ordering::Acquire) {
            let left = next.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::park_timeout(left);
        }
        let closing = inner.closing.load(Ordering::Acquire);
        if inner.reopen.swap(false, Ordering::AcqRel) {
            sink.reopen();
        }
        while let Ok(line) = lines.try_recv() {
            if buffer.len() + line.len() > PIPE_BUF && !buffer.is_empty() {
                emit(&mut sink, &mut buffer, &mut failed_since);
            }
            buffer.extend_from_slice(line.as_bytes());
        }
        emit(&mut sink, &mut buffer, &mut failed_since);
        let dropped = inner.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            log::warn!(
                "access log: {dropped} lines dropped, the queue of lines was full (the writer falls behind the requests)"
            );
        }
        if closing {
            return;
        }
    }
}

fn emit(sink: &mut Sink, buffer: &mut Vec<u8>, failed_since: &mut Option<Instant>) {
    if buffer.is_empty() {
        return;
    }
    match sink.write(buffer) {
        Ok(()) => *failed_since = None,
        // Say so once a minute at most; the lines are lost either way.
        Err(err) => {
            if failed_since.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
                log::error!("access log: cannot write: {err}");
                *failed_since = Some(Instant::now());
            }
        }
    }
    buffer.clear();
}

/// Decimal digits of `n`.
/// `remote` as `Display` writes it; IPv4 without the formatter (a fifth of
/// the line's cost went there).
fn push_remote(line: &mut String, remote: SocketAddr) {
    match remote {
        SocketAddr::V4(v4) => {
            for (i, octet) in v4.ip().octets().into_iter().enumerate() {
                if i > 0 {
                    line.push('.');
                }
                push_number(line, u64::from(octet));
            }
            line.push(':');
            push_number(line, u64::from(v4.port()));
        }
        SocketAddr::V6(_) => {
            let _ = write!(line, "{remote}");
        }
    }
}

fn push_number(line: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    line.extend(digits[at..].iter().map(|&d| char::from(d)));
}

thread_local! {
    /// The second last formatted on this thread, and its text up to the
    /// seconds: the date is formatted once a second, not once a line.
    static SECOND: std::cell::RefCell<(i64, String)> = const {
        std::cell::RefCell::new((i64::MIN, String::new()))
    };
}

/// `2026-11-24T01:06:19.123Z`, as the server's other log lines start.
fn push_timestamp(line: &mut String) {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let second = since_epoch.as_secs() as i64;
    let ms = since_epoch.subsec_millis();
    SECOND.with(|cached| {
        let mut cached = cached.borrow_mut();
        if cached.0 != second {
            let t = time::OffsetDateTime::from_unix_timestamp(second)
                .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
            let mut text = String::with_capacity(20);
            let _ = write!(
                text,
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            );
            *cached = (second, text);
        }
        line.push_str(&cached.1);
    });
    line.push('.');
    line.push(char::from(b'0' + (ms / 100) as u8));
    line.push(char::from(b'0' + (ms / 10 % 10) as u8));
    line.push(char::from(b'0' + (ms % 10) as u8));
    line.push('Z');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        assert_eq!("stderr".parse::<Target>(), Ok(Target::Stderr));
        assert_eq!("off".parse::<Target>(), Ok(Target::Off));
        assert_eq!(
            "/var/log/q.log".parse::<Target>(),
            Ok(Target::File(PathBuf::from("/var/log/q.log")))
        );
        assert!("".parse::<Target>().is_err());
    }

    #[test]
    fn numbers_are_written_in_decimal() {
        for n in [0u64, 7, 10, 204, 99_999, u64::MAX] {
            let mut line = String::new();
            push_number(&mut line, n);
            assert_eq!(line, n.to_string());
        }
    }

    #[test]
    fn a_line_is_timestamped_and_whole() {
        let mut line = String::new();
        push_timestamp(&mut line);
        assert_eq!(line.len(), "2026-11-24T01:06:19.123Z".len(), "{line}");
        assert!(line.ends_with('Z') && line.as_bytes()[10] == b'T', "{line}");
    }

    #[test]
    fn a_remote_address_reads_as_its_display() {
        for remote in [
            "127.0.0.1:8080",
            "10.200.3.45:65535",
            "0.0.0.0:0",
            "[::1]:443",
            "[2001:db8::7]:9",
        ] {
            let remote: SocketAddr = remote.parse().unwrap();
            let mut line = String::new();
            super::push_remote(&mut line, remote);
            assert_eq!(line, remote.to_string());
        }
    }
}
