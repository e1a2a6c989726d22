//! The access log: one line per request, off the request path.
//!
//! A request formats its line straight into a buffer of its own thread's (no
//! allocation, no lock shared with other requests: the buffer's lock is taken
//! by the writer only, once a drain) and never waits; a dedicated thread
//! drains every thread's buffer every [`Options::flush_every`] (100 ms by
//! default, so at most that late) and at shutdown, puts the lines back in the
//! order they were recorded (each carries a sequence number), and writes them
//! in a few large writes, each at most `PIPE_BUF` bytes and cut at line ends,
//! so that lines never interleave with the server's other log lines on a
//! shared pipe (journald) or file. The buffers go back and forth between the
//! requests' threads and the writer and are never freed: a line costs no
//! allocation, and no memory is freed on a thread other than the one that
//! took it (which made glibc's allocator take its arena locks across threads
//! when each line was a `String` sent to the writer).
//!
//! A line reads `TIME [INFO] access: CLIENT METHOD TARGET STATUS DURATIONms`, as
//! it did when the general logger wrote it, so what reads the log still works.
//!
//! Requests never wake the writer and never wait for it: when the lines not
//! yet written reach [`Options::capacity`] (32,768 by default: a third of a
//! second at 100,000 requests/s, about 5 MB at most), a new line is dropped
//! and counted, and the writer reports the count in one warning
//! (`access log: N lines dropped ...`) when it next drains. A server that
//! slows every request down to keep its log complete fails its clients to
//! please its disk; the count keeps the loss visible.
//!
//! With a file as target, SIGHUP makes the writer reopen it (for logrotate).

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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
    /// Lines not yet taken by the writer, in all, before new ones are dropped.
    pub capacity: usize,
    /// How often the writer takes the lines.
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
    /// Tells this log's buffers apart from another's in a thread's list.
    id: u64,
    /// Every thread's buffer, for the writer; a thread adds its own with its
    /// first line.
    buffers: Mutex<Vec<Arc<Mutex<Lines>>>>,
    /// The next line's sequence number: the order of the lines in the log.
    sequence: AtomicU64,
    /// Lines recorded and not yet taken by the writer.
    queued: AtomicUsize,
    capacity: usize,
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
        static IDS: AtomicU64 = AtomicU64::new(0);
        let inner = Arc::new(Inner {
            id: IDS.fetch_add(1, Ordering::Relaxed),
            buffers: Mutex::new(Vec::new()),
            sequence: AtomicU64::new(0),
            queued: AtomicUsize::new(0),
            capacity: options.capacity.max(1),
            dropped: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            reopen: AtomicBool::new(false),
            writer: Mutex::new(None),
        });
        let shared = inner.clone();
        let every = options.flush_every;
        let handle = std::thread::Builder::new()
            .name("quayside-access-log".to_string())
            .spawn(move || write_lines(&shared, sink, every))?;
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
        remote: &Peer,
        method: &str,
        target: &str,
        status: u16,
        elapsed: Duration,
    ) {
        let Some(inner) = &self.inner else { return };
        if inner.queued.fetch_add(1, Ordering::Relaxed) >= inner.capacity
            || inner.closing.load(Ordering::Relaxed)
        {
            inner.queued.fetch_sub(1, Ordering::Relaxed);
            inner.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let buffer = own_buffer(inner);
        let mut lines = buffer.lock().unwrap_or_else(|e| e.into_inner());
        let sequence = inner.sequence.fetch_add(1, Ordering::Relaxed);
        let line = &mut lines.text;
        push_timestamp(line);
        line.push_str(" [INFO] access: ");
        line.push_str(&remote.text);
        line.push(' ');
        line.push_str(method);
        line.push(' ');
        line.push_str(target);
        line.push(' ');
        push_number(line, u64::from(status));
        // Milliseconds with one decimal, in integers (float formatting cost
        // as much as the rest of the line).
        let tenths = (elapsed.as_micros() + 50) / 100;
        line.push(' ');
        push_number(line, (tenths / 10) as u64);
        line.push('.');
        push_number(line, (tenths % 10) as u64);
        line.push_str("ms\n");
        let end = line.len();
        lines.ends.push((sequence, end));
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

/// Lines recorded on one thread and not yet taken by the writer.
#[derive(Default)]
struct Lines {
    /// The lines, one after the other, each ending in a newline.
    text: String,
    /// For each line, its sequence number and where it ends in `text`.
    ends: Vec<(u64, usize)>,
}

impl Lines {
    fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    /// The `i`th line, with its newline.
    fn line(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1].1 };
        &self.text.as_bytes()[start..self.ends[i].1]
    }
}

thread_local! {
    /// This thread's buffer in each access log it has written to, by the
    /// log's id (tests run several logs in one process).
    static OWN: std::cell::RefCell<Vec<(u64, Arc<Mutex<Lines>>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// This thread's buffer in `inner`, made and handed to the writer with the
/// thread's first line.
fn own_buffer(inner: &Inner) -> Arc<Mutex<Lines>> {
    OWN.with(|own| {
        let mut own = own.borrow_mut();
        if let Some((_, buffer)) = own.iter().find(|(id, _)| *id == inner.id) {
            return buffer.clone();
        }
        // The buffers of logs that have stopped (the writer let go of them).
        own.retain(|(_, buffer)| Arc::strong_count(buffer) > 1);
        let buffer = Arc::new(Mutex::new(Lines {
            text: String::with_capacity(64 * 1024),
            ends: Vec::with_capacity(512),
        }));
        inner
            .buffers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(buffer.clone());
        own.push((inner.id, buffer.clone()));
        buffer
    })
}

/// The writer thread: every `every`, or when told to finish, takes every
/// thread's lines (an empty buffer in exchange), puts them in the order they
/// were recorded, and writes them in pieces of at most `PIPE_BUF` cut at line
/// ends (a longer line goes alone, whole).
fn write_lines(inner: &Inner, mut sink: Sink, every: Duration) {
    let mut taken: Vec<Lines> = Vec::new();
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
        take_lines(inner, &mut taken);
        let mut next_of = vec![0usize; taken.len()];
        // A merge by sequence number; a handful of threads, so a scan.
        loop {
            let mut first: Option<(u64, usize)> = None;
            for (t, lines) in taken.iter().enumerate() {
                if let Some(&(sequence, _)) = lines.ends.get(next_of[t]) {
                    if first.is_none_or(|(s, _)| sequence < s) {
                        first = Some((sequence, t));
                    }
                }
            }
            let Some((_, t)) = first else { break };
            let line = taken[t].line(next_of[t]);
            next_of[t] += 1;
            if buffer.len() + line.len() > PIPE_BUF && !buffer.is_empty() {
                emit(&mut sink, &mut buffer, &mut failed_since);
            }
            buffer.extend_from_slice(line);
        }
        emit(&mut sink, &mut buffer, &mut failed_since);
        let dropped = inner.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            log::warn!(
                "access log: {dropped} lines dropped, the queue of lines was full (the writer falls behind the requests)"
            );
        }
        if closing {
            // Let go of the buffers: their threads then drop them from their lists.
            inner
                .buffers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            return;
        }
    }
}

/// Exchanges each thread's buffer for one of `taken`'s, emptied: afterwards
/// `taken` holds the lines recorded since the last time, one entry a thread.
/// Every buffer is locked before any is taken, and the list of them stays
/// locked (no thread can add its own) until all are: no line gets its
/// sequence number meanwhile, so every line with a number below one taken is
/// taken too, and the log's order holds from one drain to the next.
fn take_lines(inner: &Inner, taken: &mut Vec<Lines>) {
    let buffers = inner.buffers.lock().unwrap_or_else(|e| e.into_inner());
    taken.resize_with(buffers.len(), Lines::default);
    let mut held: Vec<_> = buffers
        .iter()
        .map(|buffer| buffer.lock().unwrap_or_else(|e| e.into_inner()))
        .collect();
    let mut lines = 0;
    for (theirs, mine) in held.iter_mut().zip(taken.iter_mut()) {
        mine.clear();
        std::mem::swap(&mut **theirs, mine);
        lines += mine.ends.len();
    }
    drop(held);
    drop(buffers);
    inner.queued.fetch_sub(lines, Ordering::Relaxed);
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

/// A client's address, with its text as access lines show it: made once a
/// connection, not once a line.
pub struct Peer {
    pub addr: SocketAddr,
    text: String,
}

impl Peer {
    pub fn new(addr: SocketAddr) -> Peer {
        let mut text = String::new();
        push_remote(&mut text, addr);
        Peer { addr, text }
    }
}

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

/// Decimal digits of `n`.
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
    line.reserve(digits.len() - at);
    for &digit in &digits[at..] {
        line.push(char::from(digit));
    }
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

    /// An access log writing to a file of a fresh directory (kept with it).
    fn file_log(capacity: usize, flush_every: Duration) -> (tempfile::TempDir, PathBuf, AccessLog) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let options = Options {
            capacity,
            flush_every,
        };
        let log = AccessLog::start(&Target::File(path.clone()), &options).unwrap();
        (dir, path, log)
    }

    #[test]
    fn lines_from_many_threads_are_written_in_the_order_they_were_recorded() {
        // Many drains while the threads record: the order must hold across
        // them too.
        let (_dir, path, log) = file_log(1_000_000, Duration::from_millis(1));
        let remote: SocketAddr = "127.0.0.1:9".parse().unwrap();
        // Each line is recorded while holding `order`, whose count it
        // carries: the count is the order of the records.
        let order = Arc::new(Mutex::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (log, order) = (log.clone(), order.clone());
                std::thread::spawn(move || {
                    for _ in 0..5_000 {
                        let mut n = order.lock().unwrap();
                        log.record(
                            &Peer::new(remote),
                            "GET",
                            &format!("/n/{n}"),
                            200,
                            Duration::ZERO,
                        );
                        *n += 1;
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        log.finish();
        let text = std::fs::read_to_string(&path).unwrap();
        let numbers: Vec<u64> = text
            .lines()
            .map(|line| {
                let target = line.split(' ').nth(5).unwrap();
                target.trim_start_matches("/n/").parse().unwrap()
            })
            .collect();
        assert_eq!(numbers, (0..20_000).collect::<Vec<u64>>());
    }

    #[test]
    fn the_capacity_counts_the_lines_of_every_thread_until_the_writer_takes_them() {
        let (_dir, path, log) = file_log(10, Duration::from_secs(3600));
        let remote: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let threads: Vec<_> = (0..3)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for i in 0..6 {
                        log.record(
                            &Peer::new(remote),
                            "GET",
                            &format!("/{t}/{i}"),
                            200,
                            Duration::ZERO,
                        );
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let inner = log.inner.clone().unwrap();
        assert_eq!(inner.dropped.load(Ordering::Relaxed), 8);
        log.finish();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 10, "{text}");
        // After the writer has stopped, a line is dropped, not held.
        log.record(&Peer::new(remote), "GET", "/late", 200, Duration::ZERO);
        assert_eq!(inner.queued.load(Ordering::Relaxed), 0);
    }
}
