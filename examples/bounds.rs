//! The resource bounds of issue 15 (items 1 and 5) in full, for `bench/bounds`:
//! runs the release binary on a fresh file on 127.0.0.1 and
//!
//! 1. opens STALLED uploads that each send their part header and 1.9 MiB,
//!    then stop; measures the server's RSS before, while they are held, and
//!    after they are closed (it must come back within 10% of its baseline);
//! 2. opens HALF_OPEN connections that never finish a request (half send
//!    nothing, half a request line and a header without the blank line),
//!    from child processes of this program (a process may hold 20,000
//!    descriptors here), and times `GET /healthz` meanwhile, on a keep-alive
//!    connection opened before and on new connections.
//!
//! Prints its figures and one verdict per claim. Bounded in time: every
//! socket has a timeout, every wait a deadline.
//!
//! Usage: bounds QUAYSIDE_BIN [STALLED=1000] [HALF_OPEN=25000]
//!        bounds hold ADDRESS COUNT   (a child: holds COUNT connections until stdin closes)

#[path = "support/http1.rs"]
mod http1;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PASSWORD: &str = "bench-password-1";
const BOUNDARY: &str = "benchBoundsBoundary";
/// What each stalled upload sends of its file before it stops.
const STALLED_BYTES: usize = 1_900 * 1024;
/// Connections one child process holds at most.
const PER_CHILD: usize = 9_000;
/// The claims' bounds.
const STALLED_RSS_BOUND_MIB: f64 = 128.0;
/// How long after a wave of uploads closed its memory is read (the baseline's
/// wave and the measured one alike): past the server's two trims, 1 s and
/// 13 s after the last connection ended (`memory::SECOND_TRIM_AFTER`).
const SETTLE: Duration = Duration::from_secs(16);
const HEALTHZ_BOUND_MS: f64 = 100.0;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("hold") {
        hold(&args[2], args[3].parse().expect("COUNT"));
        return;
    }
    let binary = args
        .get(1)
        .expect("usage: bounds QUAYSIDE_BIN [STALLED] [HALF_OPEN]");
    let stalled: usize = args.get(2).map_or(1000, |n| n.parse().expect("STALLED"));
    let half_open: usize = args
        .get(3)
        .map_or(25_000, |n| n.parse().expect("HALF_OPEN"));
    let dir = std::env::temp_dir().join(format!("quayside-bounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut server = Server::start(binary, &dir);
    let mut verdicts = Vec::new();
    stalled_uploads(&server, stalled, &mut verdicts);
    half_open_connections(&server, half_open, &mut verdicts);
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
    println!("== verdicts");
    for (claim, met) in &verdicts {
        println!("{} {claim}", if *met { "MET    " } else { "NOT MET" });
    }
    if verdicts.iter().any(|(_, met)| !met) {
        std::process::exit(1);
    }
}

struct Server {
    child: Child,
    base: String,
    address: SocketAddr,
    log: std::path::PathBuf,
    key: String,
    files: String,
}

impl Server {
    fn start(binary: &str, dir: &std::path::Path) -> Server {
        let log = dir.join("server.log");
        let mut child = Command::new(binary)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--log-level",
                "warn",
                "--data",
            ])
            .arg(dir.join("bench.db"))
            .env("QUAYSIDE_ADMIN_PASSWORD", PASSWORD)
            .env("QUAYSIDE_PBKDF2_ITERATIONS", "1000")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("start the server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the listening line");
        let base = line
            .trim()
            .strip_prefix("quayside listening on ")
            .expect("listening line")
            .to_string();
        let address = base.trim_start_matches("http://").parse().expect("address");
        let key = http1::login(&base, "admin", PASSWORD).expect("login");
        let post = |path: &str, body: &str| -> String {
            let mut conn = http1::Conn::connect(&base).expect("connect");
            let mut answer = Vec::new();
            let auth = format!("Bearer {key}");
            let status = conn
                .call(
                    "POST",
                    path,
                    &[
                        ("Authorization", &auth),
                        ("Content-Type", "application/json"),
                    ],
                    body.as_bytes(),
                    &mut answer,
                )
                .expect("setup request");
            assert_eq!(status, 201, "{}", String::from_utf8_lossy(&answer));
            let value: serde_json::Value = serde_json::from_slice(&answer).expect("JSON");
            value["id"].as_str().expect("id").to_string()
        };
        let org = post("/v2/organizations", r#"{"body":{"name":"Bench"}}"#);
        let workspace = post(
            "/workspaces",
            &format!(r#"{{"parties":{{"client":{{"id":"{org}"}}}}}}"#),
        );
        let job = post(&format!("/workspaces/{workspace}/jobs"), "{}");
        Server {
            child,
            address,
            log,
            key,
            files: format!("/workspaces/{workspace}/jobs/{job}/files"),
            base,
        }
    }

    fn status(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }

    /// Resident memory now, in MiB.
    fn rss(&self) -> f64 {
        self.status("VmRSS:")
    }

    fn descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).map_or(0, |d| d.count())
    }

    /// The head of a multipart upload declaring `declared` bytes, with the
    /// file part's headers.
    fn upload_head(&self, declared: usize) -> String {
        format!(
            "POST {} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {}\r\n\
             Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\
             Content-Length: {declared}\r\n\r\n\
             --{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; \
             filename=\"stalled.bin\"\r\n\r\n",
            self.files, self.key
        )
    }

    /// A complete upload of `size` bytes; its status.
    fn upload(&self, size: usize) -> u16 {
        let tail = format!("\r\n--{BOUNDARY}--\r\n");
        let head = self.upload_head(0);
        let part_head = &head[head.find("\r\n\r\n").unwrap() + 4..];
        let declared = part_head.len() + size + tail.len();
        let mut socket = TcpStream::connect(self.address).expect("connect");
        socket.set_read_timeout(Some(Duration::from_secs(60))).ok();
        socket
            .write_all(self.upload_head(declared).as_bytes())
            .expect("head");
        socket.write_all(&vec![b'u'; size]).expect("bytes");
        socket.write_all(tail.as_bytes()).expect("tail");
        status_of(&mut socket).unwrap_or(0)
    }

    fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
    }
}

/// The status of the answer on `socket`, if one comes.
fn status_of(socket: &mut TcpStream) -> Option<u16> {
    let mut head = [0u8; 12];
    socket.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// What a stalled upload's socket shows without waiting: an answer (its
/// first bytes), closed, or nothing yet.
fn peek(socket: &mut TcpStream) -> Result<Option<String>, ()> {
    socket.set_nonblocking(true).ok();
    let mut buffer = [0u8; 512];
    let seen = match socket.read(&mut buffer) {
        Ok(0) => Err(()),
        Ok(n) => Ok(Some(String::from_utf8_lossy(&buffer[..n]).into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
        Err(_) => Err(()),
    };
    socket.set_nonblocking(false).ok();
    seen
}

/// Opens `count` uploads that stall after [`STALLED_BYTES`]; the sockets, and
/// the highest RSS seen while they were sent.
fn stall(server: &Server, count: usize) -> (Vec<TcpStream>, f64) {
    let head = server.upload_head(64 * 1024 * 1024);
    let bytes = vec![b's'; STALLED_BYTES];
    let mut sockets = Vec::with_capacity(count);
    let mut peak = server.rss();
    for n in 0..count {
        let Ok(mut socket) = TcpStream::connect_timeout(&server.address, Duration::from_secs(5))
        else {
            continue;
        };
        socket.set_write_timeout(Some(Duration::from_secs(10))).ok();
        // A refused upload is answered and closed: the writes may then fail.
        let _ = socket
            .write_all(head.as_bytes())
            .and_then(|()| socket.write_all(&bytes));
        sockets.push(socket);
        if n % 50 == 0 {
            peak = peak.max(server.rss());
        }
    }
    (sockets, peak)
}

fn stalled_uploads(server: &Server, count: usize, verdicts: &mut Vec<(String, bool)>) {
    println!(
        "== {count} stalled uploads ({} KiB each, then silence)",
        STALLED_BYTES / 1024
    );
    // The baseline is a server that has worked: a few whole uploads, and a
    // first, smaller wave of the same, so that the caches that stay (SQLite's
    // page cache, the runtime's) are at their size before it is read.
    for _ in 0..3 {
        assert_eq!(server.upload(4 * 1024 * 1024), 201, "warm-up upload");
    }
    let (warm_up, _) = stall(server, count / 10);
    std::thread::sleep(Duration::from_secs(3));
    drop(warm_up);
    std::thread::sleep(SETTLE);
    let baseline = server.rss();
    println!(
        "baseline RSS {baseline:.1} MiB ({} s after a wave of {} closed, following 3 uploads)",
        SETTLE.as_secs(),
        count / 10
    );
    let started = Instant::now();
    let (mut sockets, mut peak) = stall(server, count);
    // Held for a few seconds: the stalled uploads' partial chunks are
    // written out after a second's pause, the refused uploads' connections
    // close (after at most 2 s of lingering), and the server trims once
    // nothing has ended for a second.
    for _ in 0..24 {
        std::thread::sleep(Duration::from_millis(250));
        peak = peak.max(server.rss());
    }
    let holding = server.rss();
    let (mut busy, mut retry_after, mut held, mut closed) = (0, 0, 0, 0);
    for socket in &mut sockets {
        match peek(socket) {
            Ok(Some(answer)) if answer.starts_with("HTTP/1.1 503") => {
                busy += 1;
                if answer.to_ascii_lowercase().contains("retry-after:") {
                    retry_after += 1;
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => held += 1,
            Err(()) => closed += 1,
        }
    }
    println!(
        "after {:.1} s: {held} uploads held by the server, {busy} answered 503 \
         ({retry_after} with Retry-After), {closed} closed",
        started.elapsed().as_secs_f64()
    );

    println!(
        "RSS while held: {holding:.1} MiB, {:.0} KiB per held upload (peak seen {peak:.1} MiB, \
         +{:.1} MiB over the baseline)",
        (holding - baseline).max(0.0) * 1024.0 / held.max(1) as f64,
        peak - baseline
    );
    drop(sockets);
    let closed_at = Instant::now();
    // Read as the baseline was: the same time after the wave closed.
    let mut seen = Vec::new();
    while closed_at.elapsed() < SETTLE {
        std::thread::sleep(Duration::from_secs(2));
        seen.push(format!("{:.1}", server.rss()));
    }
    let after = server.rss();
    println!("RSS every 2 s after closing: {}", seen.join(", "));
    println!(
        "RSS after closing them: {after:.1} MiB after {:.1} s ({:+.1}% of the baseline)",
        closed_at.elapsed().as_secs_f64(),
        (after / baseline - 1.0) * 100.0
    );
    verdicts.push((
        format!(
            "{count} stalled uploads keep RSS under the baseline + {STALLED_RSS_BOUND_MIB} MiB \
             (peak +{:.1} MiB)",
            peak - baseline
        ),
        peak - baseline <= STALLED_RSS_BOUND_MIB,
    ));
    verdicts.push((
        format!(
            "RSS returns within 10% of its baseline after they close ({after:.1} vs \
             {baseline:.1} MiB)"
        ),
        after <= baseline * 1.10,
    ));
    verdicts.push((
        format!("stalled uploads beyond the limit are answered 503 with Retry-After ({busy})"),
        busy > 0 && busy == retry_after,
    ));
}

/// `GET /healthz` on `conn`; milliseconds, or None when it failed.
fn healthz(conn: &mut http1::Conn) -> Option<f64> {
    let started = Instant::now();
    let mut body = Vec::new();
    let status = conn.call("GET", "/healthz", &[], &[], &mut body).ok()?;
    (status == 200).then(|| started.elapsed().as_secs_f64() * 1000.0)
}

/// `GET /healthz` on a new connection; milliseconds, or None.
fn healthz_fresh(base: &str) -> Option<f64> {
    let started = Instant::now();
    let mut conn = http1::Conn::connect(base).ok()?;
    healthz(&mut conn).map(|_| started.elapsed().as_secs_f64() * 1000.0)
}

fn half_open_connections(server: &Server, count: usize, verdicts: &mut Vec<(String, bool)>) {
    println!("== {count} half-open connections");
    let mut established = http1::Conn::connect(&server.base).expect("connect");
    let before = healthz(&mut established).expect("healthz");
    println!("healthz before: {before:.2} ms");
    let started = Instant::now();
    let me = std::env::current_exe().expect("own path");
    let mut children: Vec<Child> = (0..count.div_ceil(PER_CHILD))
        .map(|n| {
            let share = PER_CHILD.min(count - n * PER_CHILD);
            Command::new(&me)
                .args(["hold", &server.address.to_string(), &share.to_string()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("a holding child")
        })
        .collect();
    let mut on_established = Vec::new();
    let mut on_new = Vec::new();
    let mut failures = 0;
    let mut peak_rss = server.rss();
    let mut peak_fds = server.descriptors();
    let mut probe =
        |established: &mut http1::Conn, on_established: &mut Vec<f64>, on_new: &mut Vec<f64>| {
            match healthz(established) {
                Some(ms) => on_established.push(ms),
                None => failures += 1,
            }
            match healthz_fresh(&server.base) {
                Some(ms) => on_new.push(ms),
                None => failures += 1,
            }
            peak_rss = peak_rss.max(server.rss());
            peak_fds = peak_fds.max(server.descriptors());
        };
    // While the children connect, and once they hold all theirs.
    let mut held = 0;
    let mut reports = Vec::new();
    for child in &mut children {
        let stdout = child.stdout.take().expect("child stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        reports.push(rx);
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut pending = reports.len();
    while pending > 0 && Instant::now() < deadline {
        probe(&mut established, &mut on_established, &mut on_new);
        std::thread::sleep(Duration::from_millis(50));
        for rx in &reports {
            if let Ok(line) = rx.try_recv() {
                pending -= 1;
                held += line
                    .split_whitespace()
                    .nth(1)
                    .and_then(|n| n.parse::<usize>().ok())
                    .unwrap_or(0);
            }
        }
    }
    let opened_in = started.elapsed().as_secs_f64();
    let ramp = (on_established.len(), on_new.len());
    for _ in 0..100 {
        probe(&mut established, &mut on_established, &mut on_new);
        std::thread::sleep(Duration::from_millis(50));
    }
    let warnings = std::fs::read_to_string(&server.log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("accept failed"))
        .count();
    for mut child in children {
        drop(child.stdin.take());
        let _ = child.wait();
    }
    let max = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        v.get(v.len() / 2).cloned().unwrap_or(0.0)
    };
    println!(
        "{held} of {count} connections opened by the clients in {opened_in:.1} s; \
         server descriptors at most {peak_fds}, RSS at most {peak_rss:.1} MiB; \
         {warnings} accept warnings logged"
    );
    let report = |when: &str, established: &[f64], new: &[f64]| {
        println!(
            "healthz {when}: established connection {} answers, median {:.2} ms, max {:.2} ms; \
             new connections {} answers, median {:.2} ms, max {:.2} ms",
            established.len(),
            median(established),
            max(established),
            new.len(),
            median(new),
            max(new)
        );
    };
    report(
        "while they connect",
        &on_established[..ramp.0],
        &on_new[..ramp.1],
    );
    let (held_established, held_new) = (&on_established[ramp.0..], &on_new[ramp.1..]);
    report("while they are held", held_established, held_new);
    println!("healthz failures: {failures}");
    let worst = max(held_established).max(max(held_new));
    verdicts.push((
        format!(
            "{count} half-open connections held leave /healthz answering within \
             {HEALTHZ_BOUND_MS} ms, on an established and on new connections (max {worst:.1} ms, \
             {failures} failed)"
        ),
        failures == 0 && worst <= HEALTHZ_BOUND_MS && !held_new.is_empty(),
    ));
}

/// A child: opens `count` connections to `address` (half send an unfinished
/// request), prints `held N`, and keeps them until its stdin closes.
fn hold(address: &str, count: usize) {
    let address: SocketAddr = address.parse().expect("address");
    let mut sockets = Vec::with_capacity(count);
    for n in 0..count {
        match TcpStream::connect_timeout(&address, Duration::from_secs(3)) {
            Ok(mut socket) => {
                if n % 2 == 1 {
                    let _ = socket.write_all(b"GET /healthz HTTP/1.1\r\nHost: bench\r\n");
                }
                sockets.push(socket);
            }
            Err(_) => continue,
        }
    }
    println!("held {}", sockets.len());
    let _ = std::io::stdout().flush();
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
}
