//! Commit-to-delivery latency of the live change stream, for `bench/run`.
//!
//! One Server-Sent Events client follows a workspace's feed
//! (`GET /v2/workspaces/{id}/changes?since=now`, `Accept: text/event-stream`)
//! while a probe writer POSTs a quality result under a job of that workspace at
//! a steady rate, each marked `"sample":{"location":"qs-probe-N"}`. The probe
//! notes the monotonic clock when it sends a write and when its answer (sent
//! after COMMIT) has arrived; the stream's reader notes when the event carrying
//! `qs-probe-N` arrives. Latency is event arrival minus write acknowledged
//! (negative when the event beats the answer), and event arrival minus send as
//! an upper bound. Both clients are threads of this one process, so both times
//! are of one clock. The write load itself comes from outside (`bench/run`
//! runs wrk's POST quality result scenario on the same workspace meanwhile), so
//! the stream also carries every change of that load.
//!
//! Usage: sse_latency BASE KEY WORKSPACE JOB SECONDS [PROBES_PER_SECOND]
//! (default 50). Prints one `probes ...` line of figures.

#[path = "support/http1.rs"]
mod http1;

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

fn main() {
    let usage = "usage: sse_latency BASE KEY WORKSPACE JOB SECONDS [PROBES_PER_SECOND]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base, key, workspace, job, seconds, rest @ ..] = args.as_slice() else {
        panic!("{usage}");
    };
    let seconds: f64 = seconds.parse().expect(usage);
    let rate: f64 = rest.first().map_or(50.0, |r| r.parse().expect(usage));
    let bearer = format!("Bearer {key}");

    // The stream's reader: the arrival time of every probe's event.
    let arrivals: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();
    let events = Arc::new(AtomicU64::new(0));
    let (ready_tx, ready_rx) = mpsc::channel();
    {
        let (arrivals, events) = (arrivals.clone(), events.clone());
        let mut conn = http1::Conn::connect(base).expect("connect the stream");
        conn.send(
            "GET",
            &format!("/v2/workspaces/{workspace}/changes?since=now"),
            &[
                ("Authorization", bearer.as_str()),
                ("Accept", "text/event-stream"),
            ],
            b"",
        )
        .expect("ask for the stream");
        let head = conn.read_head().expect("the stream's head");
        assert_eq!(head.status, 200, "the stream answered {}", head.status);
        assert!(head.chunked, "the stream is not chunked");
        std::thread::spawn(move || {
            let mut lines = conn.into_lines();
            let mut line = String::new();
            let mut ready = Some(ready_tx);
            loop {
                line.clear();
                match lines.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let now = Instant::now();
                if line.starts_with(": connected") {
                    if let Some(ready) = ready.take() {
                        let _ = ready.send(());
                    }
                } else if let Some(data) = line.strip_prefix("data:") {
                    events.fetch_add(1, Ordering::Relaxed);
                    if let Some(at) = data.find("qs-probe-") {
                        let digits: String = data[at + 9..]
                            .chars()
                            .take_while(char::is_ascii_digit)
                            .collect();
                        if let Ok(n) = digits.parse() {
                            arrivals.lock().unwrap().entry(n).or_insert(now);
                        }
                    }
                }
            }
        });
    }
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the stream did not start");

    // The probe writer: one keep-alive connection, one write per tick.
    let path = format!("/workspaces/{workspace}/jobs/{job}/quality");
    let headers = [
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];
    let mut conn = http1::Conn::connect(base).expect("connect the probe");
    let mut body = Vec::new();
    let interval = Duration::from_secs_f64(1.0 / rate);
    let count = (seconds * rate).round().max(1.0) as u64;
    let started = Instant::now();
    let events_before = events.load(Ordering::Relaxed);
    let mut probes = Vec::with_capacity(count as usize); // (n, sent, acknowledged)
    for n in 1..=count {
        let tick = started + interval * (n as u32 - 1);
        if let Some(wait) = tick.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let request = format!(
            r#"{{"status":"preliminary","setNumber":{},"testNumber":1,"sample":{{"location":"qs-probe-{n}"}},"test":{{"xref":"DEN","name":"Density"}},"method":{{"xref":"D4052","name":"ASTM D4052"}},"uom":{{"xref":"KGM3","name":"kg/m3"}},"result":"845.{}","resultOperator":"eq"}}"#,
            900_000 + n,
            n % 10
        );
        let sent = Instant::now();
        let status = conn
            .call("POST", &path, &headers, request.as_bytes(), &mut body)
            .expect("probe write");
        let acknowledged = Instant::now();
        assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
        probes.push((n, sent, acknowledged));
    }
    let elapsed = started.elapsed().as_secs_f64();
    let events_during = events.load(Ordering::Relaxed) - events_before;
    // Stragglers: up to 5 s for the last events.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && arrivals.lock().unwrap().len() < probes.len() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let arrivals = arrivals.lock().unwrap().clone();
    let ms = |later: Instant, earlier: Instant| -> f64 {
        match later.checked_duration_since(earlier) {
            Some(d) => d.as_secs_f64() * 1e3,
            None => -(earlier.duration_since(later).as_secs_f64() * 1e3),
        }
    };
    let mut after_ack = Vec::new();
    let mut after_send = Vec::new();
    let mut ack = Vec::new();
    for (n, sent, acknowledged) in &probes {
        ack.push(ms(*acknowledged, *sent));
        if let Some(arrived) = arrivals.get(n) {
            after_ack.push(ms(*arrived, *acknowledged));
            after_send.push(ms(*arrived, *sent));
        }
    }
    let pct = |v: &mut Vec<f64>, p: f64| -> f64 {
        if v.is_empty() {
            return f64::NAN;
        }
        v.sort_by(f64::total_cmp);
        let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
        v[rank.clamp(1, v.len()) - 1]
    };
    println!(
        "probes {} delivered {} seconds {elapsed:.2} stream_events {events_during} \
         ack_p50_ms {:.3} ack_p99_ms {:.3} after_ack_p50_ms {:.3} after_ack_p99_ms {:.3} \
         after_ack_max_ms {:.3} after_send_p50_ms {:.3} after_send_p99_ms {:.3}",
        probes.len(),
        after_ack.len(),
        pct(&mut ack, 50.0),
        pct(&mut ack, 99.0),
        pct(&mut after_ack, 50.0),
        pct(&mut after_ack, 99.0),
        pct(&mut after_ack, 100.0),
        pct(&mut after_send, 50.0),
        pct(&mut after_send, 99.0),
    );
    std::process::exit(0);
}
