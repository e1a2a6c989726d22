//! Logins under a storm of wrong passwords, for `bench/logins` (issue 15,
//! item 4): what 32 wrong-password clients do to signed-in reads and to a
//! real login.
//!
//! Three phases of SECONDS each, against a running server:
//! 1. `quiet`: no attackers;
//! 2. `spray`: CLIENTS attackers, each from its own loopback address
//!    (127.0.1.N), send wrong passwords for ever-new usernames (so no
//!    username's lockout ever stops them: only the per-address budget and the
//!    bound on password checks do);
//! 3. `one-name`: the attackers, from new addresses (127.0.2.N), send wrong
//!    passwords for `admin`, the account the real logins use.
//!
//! Attackers do not honour `Retry-After`: after a 429 or 503 each pauses
//! 50 ms and sends again (a tight loop on the same 2 cores would measure the
//! client, not the server). Meanwhile one client (127.0.0.1) reads
//! `GET /api/rest/1.0/ports?resultsPerPage=1` with a session key every 5 ms,
//! and once a second a real login of `admin` with the right password comes
//! from a clean address (127.0.0.2) on a new connection.
//!
//! Prints a line per phase (read latencies, login latencies, attack answers)
//! and a verdict: reads' p99 under 20 ms and every real login under 300 ms
//! during both storms.
//!
//! Usage: login_storm BASE ADMIN_PASSWORD [SECONDS] [CLIENTS] (defaults 10, 32).

#[path = "support/http1.rs"]
mod http1;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http1::Conn;

const READ: &str = "/api/rest/1.0/ports?resultsPerPage=1";
const READ_EVERY: Duration = Duration::from_millis(5);
const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn login_path(user: &str) -> String {
    format!("/api/rest/1.0/sessions/{user}")
}

/// The `p`-th percentile of sorted milliseconds.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// An attacker: its client address, and the username of its n-th attempt.
type Attacker = (IpAddr, Box<dyn Fn(usize) -> String + Send>);

struct Phase {
    reads: Vec<f64>,
    read_errors: usize,
    logins: Vec<(u16, f64)>,
    attacks: [usize; 4], // 401, 429, 503, other
}

/// One attacker: wrong passwords from `local` until `stop`.
fn attack(
    base: &str,
    local: IpAddr,
    name: impl Fn(usize) -> String,
    stop: &AtomicBool,
) -> [usize; 4] {
    let mut counts = [0; 4];
    let mut conn = None;
    let mut body = Vec::new();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        if conn.is_none() {
            conn = Conn::connect_from(base, local).ok();
        }
        let Some(c) = conn.as_mut() else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        n += 1;
        let status = c.call(
            "POST",
            &login_path(&name(n)),
            &[FORM],
            b"password=not-the-password",
            &mut body,
        );
        let slot = match status {
            Ok(401) => 0,
            Ok(429) => 1,
            Ok(503) => 2,
            _ => 3,
        };
        counts[slot] += 1;
        if status.is_err() {
            conn = None;
        }
        if slot != 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    counts
}

fn run_phase(
    base: &str,
    key: &str,
    password: &str,
    seconds: f64,
    attackers: Vec<Attacker>,
) -> Phase {
    let stop = Arc::new(AtomicBool::new(false));
    let attacks = Arc::new(Mutex::new([0usize; 4]));
    let mut threads = Vec::new();
    for (local, name) in attackers {
        let (base, stop, attacks) = (base.to_string(), stop.clone(), attacks.clone());
        threads.push(std::thread::spawn(move || {
            let counts = attack(&base, local, name, &stop);
            let mut total = attacks.lock().unwrap();
            for (t, c) in total.iter_mut().zip(counts) {
                *t += c;
            }
        }));
    }
    // Let the storm build up before measuring.
    std::thread::sleep(Duration::from_millis(500));
    let reader = {
        let (base, stop) = (base.to_string(), stop.clone());
        let bearer = format!("Bearer {key}");
        std::thread::spawn(move || {
            let mut reads = Vec::new();
            let mut errors = 0;
            let mut conn = Conn::connect(&base).expect("connect");
            let mut body = Vec::new();
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                // A latency probe, not a load: one read every 5 ms.
                next += READ_EVERY;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
                let start = Instant::now();
                match conn.call("GET", READ, &[("Authorization", &bearer)], b"", &mut body) {
                    Ok(200) => reads.push(ms(start)),
                    _ => {
                        errors += 1;
                        conn = Conn::connect(&base).expect("connect");
                    }
                }
            }
            (reads, errors)
        })
    };
    let form = format!("password={}", urlencode(password));
    let clean = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut logins = Vec::new();
    let mut body = Vec::new();
    while Instant::now() < deadline {
        let next = Instant::now() + Duration::from_secs(1);
        let start = Instant::now();
        let status = Conn::connect_from(base, clean)
            .and_then(|mut c| {
                c.call(
                    "POST",
                    &login_path("admin"),
                    &[FORM],
                    form.as_bytes(),
                    &mut body,
                )
            })
            .unwrap_or(0);
        logins.push((status, ms(start)));
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    stop.store(true, Ordering::Relaxed);
    let (mut reads, read_errors) = reader.join().expect("reader");
    for t in threads {
        t.join().expect("attacker");
    }
    reads.sort_by(f64::total_cmp);
    let attacks = *attacks.lock().unwrap();
    Phase {
        reads,
        read_errors,
        logins,
        attacks,
    }
}

fn main() {
    let usage = "usage: login_storm BASE ADMIN_PASSWORD [SECONDS] [CLIENTS]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base, password, rest @ ..] = args.as_slice() else {
        panic!("{usage}");
    };
    let seconds: f64 = rest.first().map_or(10.0, |s| s.parse().expect(usage));
    let clients: u8 = rest.get(1).map_or(32, |s| s.parse().expect(usage));
    let key = {
        let mut conn =
            Conn::connect_from(base, IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))).expect("connect");
        let mut body = Vec::new();
        let form = format!("password={}", urlencode(password));
        let status = conn
            .call(
                "POST",
                &login_path("admin"),
                &[FORM],
                form.as_bytes(),
                &mut body,
            )
            .expect("login");
        let text = String::from_utf8_lossy(&body).into_owned();
        assert_eq!(status, 200, "login: {text}");
        text.split("\"sessionId\":\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("sessionId")
            .to_string()
    };
    let attackers = |third: u8, admin: bool| -> Vec<Attacker> {
        (0..clients)
            .map(|i| {
                let local = IpAddr::V4(Ipv4Addr::new(127, 0, third, i + 1));
                let name: Box<dyn Fn(usize) -> String + Send> = if admin {
                    Box::new(|_| "admin".to_string())
                } else {
                    Box::new(move |n| format!("spray-{third}-{i}-{n}"))
                };
                (local, name)
            })
            .collect()
    };
    let mut pass = true;
    for (label, attackers) in [
        ("quiet", Vec::new()),
        ("spray", attackers(1, false)),
        ("one-name", attackers(2, true)),
    ] {
        let storm = !attackers.is_empty();
        let phase = run_phase(base, &key, password, seconds, attackers);
        let p50 = percentile(&phase.reads, 50.0);
        let p99 = percentile(&phase.reads, 99.0);
        let max = phase.reads.last().copied().unwrap_or(f64::NAN);
        let mut login_ms: Vec<f64> = phase.logins.iter().map(|(_, t)| *t).collect();
        login_ms.sort_by(f64::total_cmp);
        let not_ok: Vec<u16> = phase
            .logins
            .iter()
            .map(|(s, _)| *s)
            .filter(|s| *s != 200)
            .collect();
        let login_failed = not_ok.len();
        let login_max = login_ms.last().copied().unwrap_or(f64::NAN);
        println!(
            "{label:<9} reads {} (errors {}) p50 {p50:.2} ms p99 {p99:.2} ms max {max:.2} ms | \
             real logins {} (not 200: {not_ok:?}) median {:.0} ms max {login_max:.0} ms | \
             attack answers 401 {} 429 {} 503 {} other {}",
            phase.reads.len(),
            phase.read_errors,
            phase.logins.len(),
            percentile(&login_ms, 50.0),
            phase.attacks[0],
            phase.attacks[1],
            phase.attacks[2],
            phase.attacks[3],
        );
        if storm {
            pass &= p99 < 20.0 && login_max < 300.0 && login_failed == 0 && phase.read_errors == 0;
        }
    }
    println!(
        "verdict: {} (under both storms: reads' p99 < 20 ms, every real login 200 in < 300 ms)",
        if pass { "PASS" } else { "FAIL" }
    );
    if !pass {
        std::process::exit(1);
    }
}
