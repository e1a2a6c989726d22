//! The scale benchmark's client, for `bench/scale` (issue 16): one workspace
//! of a fresh server loaded over HTTP with JOBS jobs and RESULTS quality
//! results each, then the cost of the operations a client makes, measured on
//! that workspace. Plain `std::net` HTTP/1.1 (`support/http1.rs`), threads for
//! concurrency.
//!
//! Loading (8 connections by default): each job by `POST /workspaces/{ws}/jobs`
//! (a unique `xref`, `refNumber`, `tripNumber`, a status spread over the four,
//! an activity, `eta`/`etc` spread over a year, a location from a pool by xref,
//! a vessel, a cargo), then its results by `POST .../jobs/{job}/quality`: as one
//! certificate (a JSON array) when the server takes one (detected on the first
//! job: an array of 2 answered 201 means bulk, 400 means one POST per result),
//! else one by one. Then the extra workspaces of the tenant (1 up to 1,000
//! jobs, then one per 10 jobs: 1k at 10k jobs, 10k at 100k), for the v2 list.
//! The location pool holds 100 items up to 1,000 jobs, then one per 2 jobs.
//!
//! Measuring (`scale measure`, every size's server still up): one
//! connection, sequential, each operation up to SAMPLES times or OP_SECONDS,
//! whichever comes first (p50/p99 in ms); the rates with 16 connections (8
//! for the bulk certificate, one for its comparison with single POSTs). The
//! sizes take turns, operation by operation: a round unrecorded (latencies
//! only), then ROUNDS rounds, each giving every size a 1/ROUNDS share of a
//! latency's samples and seconds, or a run of RATE_SECONDS of a rate, in an
//! order reversed from one round to the next; each latency slice starts
//! with 3 calls unrecorded, each rate run with half a second. So every size
//! is measured in the same moments of the machine, and the ratios between
//! sizes are not the machine's drift between one size's minutes and
//! another's. Reads first, then writes, so the writes do not grow what the
//! reads see.
//!
//! Usage:
//!   scale load BASE USER PASSWORD JOBS --state FILE [--results 30]
//!       [--connections 8] [--load-limit 900] [--pid SERVER_PID] [--data FILE]
//!     loads one size, prints progress on stderr, writes STATE for `measure`.
//!   scale measure STATE... [--rounds 3] [--samples 2000] [--op-seconds 5]
//!       [--rate-seconds 3]
//!     prints one `RESULT {json}` line per size on stdout.
//!   scale report FILE
//!     renders the `RESULT` lines in FILE (one per size) as the Markdown table
//!     of `bench/SCALE.md`, with the issue's targets judged.

#[path = "support/http1.rs"]
mod http1;

use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("load") => load_command(&args[1..]),
        Some("measure") => measure_command(&args[1..]),
        Some("report") => report(args.get(1).expect("usage: scale report FILE")),
        _ => {
            eprintln!(
                "usage: scale load BASE USER PASSWORD JOBS --state FILE [--results N] \
                 [--connections N] [--load-limit S] [--pid PID] [--data FILE]\n       \
                 scale measure STATE... [--rounds N] [--samples N] [--op-seconds S] \
                 [--rate-seconds S]\n       scale report FILE"
            );
            std::process::exit(2);
        }
    }
}

// ---------------------------------------------------------------------------
// Plumbing: a deterministic generator, a client, the request to time
// ---------------------------------------------------------------------------

/// splitmix64: enough randomness for picking records, the same every run.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One keep-alive connection with the session key; reconnects after an error
/// or a `Connection: close`.
struct Client {
    base: String,
    bearer: String,
    conn: Option<http1::Conn>,
    body: Vec<u8>,
}

impl Client {
    fn new(base: &str, key: &str) -> Client {
        Client {
            base: base.to_string(),
            bearer: format!("Bearer {key}"),
            conn: None,
            body: Vec::new(),
        }
    }

    fn request(&mut self, method: &str, path: &str, body: &[u8]) -> io::Result<http1::Head> {
        if self.conn.is_none() {
            self.conn = Some(http1::Conn::connect(&self.base)?);
        }
        let conn = self.conn.as_mut().expect("connected");
        let mut headers = vec![("Authorization", self.bearer.as_str())];
        if !body.is_empty() {
            headers.push(("Content-Type", "application/json"));
        }
        match conn.exchange(method, path, &headers, body, &mut self.body) {
            Ok(head) => {
                if head
                    .header("connection")
                    .is_some_and(|v| v.eq_ignore_ascii_case("close"))
                {
                    self.conn = None;
                }
                Ok(head)
            }
            Err(e) => {
                self.conn = None;
                Err(e)
            }
        }
    }

    /// A request, retried after a connection error or a 503 (five times, with
    /// a growing pause); any other answer is returned.
    fn call(&mut self, method: &str, path: &str, body: &[u8]) -> http1::Head {
        let mut attempt = 0;
        loop {
            let pause = Duration::from_millis(50 << attempt);
            match self.request(method, path, body) {
                Ok(head) if head.status == 503 && attempt < 5 => std::thread::sleep(pause),
                Ok(head) => return head,
                Err(e) if attempt < 5 => {
                    eprintln!("scale: {method} {path}: {e}; retrying");
                    std::thread::sleep(pause);
                }
                Err(e) => panic!("{method} {path}: {e}"),
            }
            attempt += 1;
        }
    }

    /// [`Client::call`], which must answer `want`.
    fn expect(&mut self, method: &str, path: &str, body: &[u8], want: u16) -> http1::Head {
        let head = self.call(method, path, body);
        assert_eq!(
            head.status,
            want,
            "{method} {path} answered {} (wanted {want}): {}",
            head.status,
            self.text()
        );
        head
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body[..self.body.len().min(600)]).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// The first `"id":"..."` of the answer: an envelope's own id, read
    /// without parsing the whole answer.
    fn id(&self) -> String {
        let text = std::str::from_utf8(&self.body).expect("UTF-8 answer");
        text.split("\"id\":\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("no id in {}", self.text()))
            .to_string()
    }
}

/// One request of a measured operation, made before the clock starts.
struct Req {
    method: &'static str,
    path: String,
    body: Vec<u8>,
    want: u16,
}

fn get(path: String) -> Req {
    Req {
        method: "GET",
        path,
        body: Vec::new(),
        want: 200,
    }
}

fn post(path: String, body: &Value, want: u16) -> Req {
    Req {
        method: "POST",
        path,
        body: serde_json::to_vec(body).expect("JSON"),
        want,
    }
}

/// `X-Total-Count` of an answer, as a number.
fn total_count(head: &http1::Head) -> Option<u64> {
    head.header("x-total-count").and_then(|v| v.parse().ok())
}

/// The target of the `rel="next"` link of the answer to a request for
/// `from` (RFC 8288), as a path: an absolute address loses its origin, a
/// relative reference is resolved against `from`.
fn next_link(head: &http1::Head, from: &str) -> Option<String> {
    for (name, value) in &head.headers {
        if !name.eq_ignore_ascii_case("link") {
            continue;
        }
        for link in value.split(',') {
            let Some((target, params)) = link.trim().split_once('>') else {
                continue;
            };
            let is_next = params.split(';').any(|p| {
                let Some((name, rels)) = p.split_once('=') else {
                    return false;
                };
                name.trim().eq_ignore_ascii_case("rel")
                    && rels
                        .trim()
                        .trim_matches('"')
                        .split_whitespace()
                        .any(|r| r.eq_ignore_ascii_case("next"))
            });
            if !is_next {
                continue;
            }
            let target = target.trim().trim_start_matches('<');
            let from_path = from.split('?').next().unwrap_or(from);
            let path = if let Some(rest) = target
                .strip_prefix("http://")
                .or_else(|| target.strip_prefix("https://"))
            {
                rest.find('/')
                    .map_or("/".to_string(), |i| rest[i..].to_string())
            } else if target.starts_with('/') {
                target.to_string()
            } else if target.starts_with('?') {
                format!("{from_path}{target}")
            } else {
                let dir = from_path.rsplit_once('/').map_or("", |(dir, _)| dir);
                format!("{dir}/{target}")
            };
            return Some(path);
        }
    }
    None
}

// ---------------------------------------------------------------------------
// What is loaded
// ---------------------------------------------------------------------------

const STATUSES: [&str; 4] = ["pending", "active", "complete", "cancelled"];
const ACTIVITIES: [&str; 5] = ["load", "discharge", "sts", "transfer", "sample"];
const PRODUCTS: [(&str, &str); 8] = [
    ("CRUDE-BRENT", "Brent crude oil"),
    ("GASOIL-10", "Gasoil 10 ppm"),
    ("FO-380", "Fuel oil 380 cSt"),
    ("NAPHTHA", "Naphtha"),
    ("JET-A1", "Jet A-1"),
    ("GASOLINE-95", "Gasoline 95 RON"),
    ("VGO", "Vacuum gas oil"),
    ("LPG", "Liquefied petroleum gas"),
];
/// The tests of a certificate: (test, name, method, uom, typical value).
const TESTS: [(&str, &str, &str, &str, f64); 15] = [
    ("DENS15", "Density at 15 °C", "ASTM D4052", "kg/m3", 845.2),
    ("API", "API gravity", "ASTM D287", "°API", 35.9),
    ("SULF", "Sulphur", "ASTM D4294", "% m/m", 0.42),
    ("WATER", "Water content", "ASTM D4928", "% v/v", 0.05),
    ("FLASH", "Flash point", "ASTM D93", "°C", 62.0),
    (
        "VISC50",
        "Kinematic viscosity at 50 °C",
        "ASTM D445",
        "cSt",
        11.8,
    ),
    ("POUR", "Pour point", "ASTM D97", "°C", -12.0),
    ("SED", "Total sediment", "ASTM D473", "% m/m", 0.01),
    ("ASH", "Ash", "ASTM D482", "% m/m", 0.02),
    ("V", "Vanadium", "IP 501", "mg/kg", 41.0),
    ("NA", "Sodium", "IP 501", "mg/kg", 12.0),
    ("ALSI", "Aluminium plus silicon", "IP 501", "mg/kg", 18.0),
    ("MCR", "Micro carbon residue", "ASTM D4530", "% m/m", 3.1),
    ("TAN", "Total acid number", "ASTM D664", "mg KOH/g", 0.12),
    ("H2S", "Hydrogen sulphide", "IP 570", "mg/kg", 0.6),
];
/// 2026-01-01T00:00:00Z: the year the `eta` dates spread over.
const YEAR_START: i64 = 1_767_225_600;

fn datetime(seconds: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .expect("a date")
        .format(&time::format_description::well_known::Rfc3339)
        .expect("RFC 3339")
}

/// How the loaded workspace is shaped at a size.
#[derive(Clone, Copy)]
struct Shape {
    jobs: usize,
    results: usize,
    locations: usize,
    workspaces: usize,
}

impl Shape {
    fn new(jobs: usize, results: usize) -> Shape {
        Shape {
            jobs,
            results,
            locations: if jobs <= 1000 { 100 } else { jobs / 2 },
            workspaces: if jobs <= 1000 { 1 } else { jobs / 10 },
        }
    }
}

fn job_xref(i: usize) -> String {
    format!("JOB-{i:07}")
}

fn trip_number(i: usize) -> String {
    format!("V{:06}", i / 10)
}

fn location_ref(n: usize) -> Value {
    json!({"xref": format!("LOC-{n:06}"), "name": format!("Terminal {n}, berth {}", n % 7 + 1)})
}

/// Job `i` of the loaded workspace: every field a client sends, spread.
fn job_body(i: usize, shape: &Shape) -> Value {
    let mut rng = Rng::new(i as u64);
    let status = STATUSES[i % 4];
    let eta = YEAR_START + rng.below(365 * 86_400) as i64;
    let etc = eta + 3_600 * (6 + rng.below(90)) as i64;
    let product = PRODUCTS[rng.below(PRODUCTS.len())];
    // A complete job has what it requested: it asks for nothing up front.
    let requested = if status == "complete" {
        json!({"quality": false, "quantity": false, "timelog": false})
    } else {
        json!({"quality": true, "quantity": i % 3 == 0, "timelog": true})
    };
    let vessel = rng.below(2_000);
    json!({
        "xref": job_xref(i),
        "refNumber": format!("QS-{:04}-{i:07}", 2026 + i % 3),
        "tripNumber": trip_number(i),
        "status": status,
        "activity": ACTIVITIES[rng.below(ACTIVITIES.len())],
        "eta": datetime(eta),
        "etc": datetime(etc),
        "notes": "Draw running samples at the manifold; retain one set for 90 days.",
        "location": location_ref(i % shape.locations),
        "transports": [{"xref": format!("IMO{:07}", 9_100_000 + vessel), "name": format!("MT Bench {vessel}")}],
        "cargo": {
            "product": {"xref": product.0, "name": product.1},
            "quantity": 5_000.0 + rng.below(95_000) as f64,
            "uom": {"xref": "MT", "name": "Metric tonnes"}
        },
        "requested": requested
    })
}

/// Result `k` of job `i`'s certificate, written as JSON text into `out`
/// (`date` is the job's test date): by hand, as this is what the client
/// makes most of, millions of times, on a machine it shares with the server.
fn quality_into(out: &mut String, i: usize, k: usize, date: &str) {
    use std::fmt::Write;
    let (test, name, method, uom, typical) = TESTS[k % TESTS.len()];
    let set = k / TESTS.len() + 1;
    let value = typical * (0.9 + (Rng::new((i * 1_000 + k) as u64).below(200) as f64) / 1_000.0);
    let status = if k % 7 == 0 {
        "preliminary"
    } else {
        "confirmed"
    };
    // No name above holds a quote or a backslash: the texts need no escaping.
    write!(
        out,
        r#"{{"status":"{status}","setNumber":{set},"testNumber":{},"coaId":"COA-{i:07}","#,
        k % TESTS.len() + 1
    )
    .unwrap();
    write!(
        out,
        r#""sample":{{"location":"TANK-{set}","refNumber":"S-{i:07}-{set}","sealNumber":"SEAL-{:08}"}},"#,
        i * 4 + set
    )
    .unwrap();
    write!(
        out,
        r#""test":{{"xref":"{test}","name":"{name}"}},"method":{{"xref":"{method}","name":"{method}"}},"uom":{{"xref":"{uom}","name":"{uom}"}},"#
    )
    .unwrap();
    write!(
        out,
        r#""date":"{date}","resultOperator":"eq","result":"{value:.3}","isPassed":true,"propertyIsNumeric":true,"propertyName":"{name}"}}"#
    )
    .unwrap();
}

fn result_date(i: usize) -> String {
    datetime(YEAR_START + (i as i64 * 313) % (365 * 86_400))
}

/// One result of job `i`, as a request body.
fn quality_body(i: usize, k: usize) -> Vec<u8> {
    let mut out = String::with_capacity(600);
    quality_into(&mut out, i, k, &result_date(i));
    out.into_bytes()
}

/// Results `range` of job `i` as one certificate (a JSON array).
fn certificate(i: usize, range: std::ops::Range<usize>) -> Vec<u8> {
    let date = result_date(i);
    let mut out = String::with_capacity(600 * range.len() + 2);
    out.push('[');
    for k in range {
        if out.len() > 1 {
            out.push(',');
        }
        quality_into(&mut out, i, k, &date);
    }
    out.push(']');
    out.into_bytes()
}

// ---------------------------------------------------------------------------
// run: load, then measure
// ---------------------------------------------------------------------------

struct Settings {
    base: String,
    key: String,
    results: usize,
    connections: usize,
    samples: usize,
    op_seconds: f64,
    rate_seconds: f64,
    load_limit: f64,
}

/// `--name value` pairs after the positional arguments.
fn options(rest: &[String], usage: &str) -> BTreeMap<String, String> {
    let mut options = BTreeMap::new();
    for pair in rest.chunks(2) {
        let [name, value] = pair else {
            panic!("{usage}: an option without a value");
        };
        options.insert(name.trim_start_matches("--").to_string(), value.clone());
    }
    options
}

fn number(options: &BTreeMap<String, String>, name: &str, default: f64) -> f64 {
    options.get(name).map_or(default, |v| {
        v.parse().unwrap_or_else(|_| panic!("--{name} {v}"))
    })
}

/// `scale load`: loads one size's workspace into the server at BASE, then
/// writes what `scale measure` needs to STATE (the server stays up).
fn load_command(args: &[String]) {
    let usage = "usage: scale load BASE USER PASSWORD JOBS --state FILE [options]";
    let [base, user, password, jobs, rest @ ..] = args else {
        panic!("{usage}");
    };
    let jobs: usize = jobs.parse().expect(usage);
    let options = options(rest, usage);
    let state_file = options.get("state").expect(usage).clone();
    let settings = Settings {
        base: base.clone(),
        key: http1::login(base, user, password).expect("login"),
        results: number(&options, "results", 30.0) as usize,
        connections: number(&options, "connections", 8.0) as usize,
        samples: 0,
        op_seconds: 0.0,
        rate_seconds: 0.0,
        load_limit: number(&options, "load-limit", 900.0),
    };
    let pid: Option<u32> = options.get("pid").map(|p| p.parse().expect("--pid"));
    let shape = Shape::new(jobs, settings.results);
    let mut out = serde_json::Map::new();
    out.insert("jobs".into(), json!(jobs));
    out.insert("results_per_job".into(), json!(settings.results));
    out.insert("locations".into(), json!(shape.locations));
    out.insert("workspaces".into(), json!(shape.workspaces));

    let loaded = load(&settings, &shape);
    out.insert("bulk".into(), json!(loaded.bulk));
    out.insert("jobs_loaded".into(), json!(loaded.jobs.len()));
    out.insert("results_loaded".into(), json!(loaded.results));
    out.insert("workspaces_loaded".into(), json!(loaded.workspaces));
    out.insert("load_seconds".into(), json!(loaded.seconds));
    out.insert("load_truncated".into(), json!(loaded.truncated));
    // What the file and the server hold once loaded (the checkpointer given a
    // moment to copy the last pages back).
    std::thread::sleep(Duration::from_millis(500));
    if let Some(data) = options.get("data") {
        let size = |path: String| std::fs::metadata(path).map_or(0, |m| m.len());
        out.insert("data_bytes".into(), json!(size(data.clone())));
        out.insert("wal_bytes".into(), json!(size(format!("{data}-wal"))));
    }
    if let Some(pid) = pid {
        out.insert("rss_kb".into(), json!(proc_status_kb(pid, "VmRSS")));
    }
    let state = json!({
        "base": base,
        "user": user,
        "password": password,
        "pid": pid,
        "ws": loaded.ws,
        "job_ids": loaded.jobs,
        "bulk": loaded.bulk,
        "result": out,
    });
    std::fs::write(&state_file, state.to_string()).unwrap_or_else(|e| panic!("{state_file}: {e}"));
}

/// One loaded size, to measure: its server, its workspace, what loading it
/// found (the start of its `RESULT` line).
struct Target {
    s: Settings,
    shape: Shape,
    loaded: Loaded,
    pid: Option<u32>,
    result: serde_json::Map<String, Value>,
    /// The numbering of the jobs the writes make.
    fresh: AtomicUsize,
    /// The workspace's job list.
    list: String,
}

/// `scale measure`: times every operation on every size given (a `scale
/// load` state each, its server still up), the sizes taking turns, and
/// prints one `RESULT` line per size.
fn measure_command(args: &[String]) {
    let usage = "usage: scale measure STATE... [--rounds 3] [--samples 2000] [--op-seconds 5] \
                 [--rate-seconds 3]";
    let split = args
        .iter()
        .position(|a| a.starts_with("--"))
        .unwrap_or(args.len());
    let (states, rest) = args.split_at(split);
    assert!(!states.is_empty(), "{usage}");
    let options = options(rest, usage);
    let rounds = (number(&options, "rounds", 3.0) as usize).max(1);
    let targets: Vec<Target> = states
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
            let state: Value = serde_json::from_str(&text).expect("a state");
            let text = |key: &str| state[key].as_str().expect(key).to_string();
            let base = text("base");
            let Value::Object(result) = state["result"].clone() else {
                panic!("{file}: no result");
            };
            let jobs = result["jobs"].as_u64().expect("jobs") as usize;
            let results = result["results_per_job"].as_u64().expect("results") as usize;
            let job_ids: Vec<String> = state["job_ids"]
                .as_array()
                .expect("job_ids")
                .iter()
                .map(|id| id.as_str().expect("a job id").to_string())
                .collect();
            Target {
                s: Settings {
                    key: http1::login(&base, &text("user"), &text("password")).expect("login"),
                    base,
                    results,
                    connections: 8,
                    samples: number(&options, "samples", 2000.0) as usize,
                    op_seconds: number(&options, "op-seconds", 5.0),
                    rate_seconds: number(&options, "rate-seconds", 3.0),
                    load_limit: 0.0,
                },
                shape: Shape::new(jobs, results),
                loaded: Loaded {
                    ws: text("ws"),
                    jobs: job_ids,
                    results: result["results_loaded"].as_u64().unwrap_or(0) as usize,
                    workspaces: result["workspaces_loaded"].as_u64().unwrap_or(0) as usize,
                    bulk: state["bulk"].as_bool() == Some(true),
                    seconds: result["load_seconds"].as_f64().unwrap_or(0.0),
                    truncated: result["load_truncated"].as_bool() == Some(true),
                },
                pid: state["pid"].as_u64().map(|p| p as u32),
                result,
                fresh: AtomicUsize::new(10_000_000),
                list: format!("/workspaces/{}/jobs", text("ws")),
            }
        })
        .collect();

    // Loading leaves gigabytes the kernel has yet to write back at the
    // largest size; measured while it does, the first reads' latencies are
    // the disk's, not the store's. So the reads start once the loads' writes
    // are on disk and the servers have had a moment (a checkpoint, a
    // statistics refresh) to finish what loading started.
    let settle = Instant::now();
    let synced = std::process::Command::new("sync")
        .status()
        .is_ok_and(|s| s.success());
    std::thread::sleep(Duration::from_secs(3));
    let settle = settle.elapsed().as_secs_f64();
    eprintln!("scale: settled after loading in {settle:.1} s (sync: {synced})");

    let measured = measure(&targets, rounds);
    for (t, ops) in targets.iter().zip(measured) {
        let mut out = t.result.clone();
        out.insert("settle_seconds".into(), json!(settle));
        out.insert("rounds".into(), json!(rounds));
        out.insert("ops".into(), Value::Object(ops));
        if let Some(pid) = t.pid {
            out.insert("hwm_kb".into(), json!(proc_status_kb(pid, "VmHWM")));
        }
        println!("RESULT {}", Value::Object(out));
    }
}

/// A `kB` line of `/proc/PID/status`.
fn proc_status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

struct Loaded {
    ws: String,
    /// Job `i`'s id (job `i` has the xref `job_xref(i)`).
    jobs: Vec<String>,
    results: usize,
    workspaces: usize,
    bulk: bool,
    seconds: f64,
    truncated: bool,
}

fn load(s: &Settings, shape: &Shape) -> Loaded {
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(s.load_limit);
    let mut c = Client::new(&s.base, &s.key);
    c.expect(
        "POST",
        "/v2/organizations",
        br#"{"body":{"name":"Bench Shipper","category":"shipper"}}"#,
        201,
    );
    let org = c.id();
    let ws_body =
        json!({"description": "Bench: one large workspace", "parties": {"client": {"id": org}}});
    c.expect(
        "POST",
        "/workspaces",
        &serde_json::to_vec(&ws_body).unwrap(),
        201,
    );
    let ws = c.id();
    let jobs_path = format!("/workspaces/{ws}/jobs");

    // Job 0, and whether the server takes a certificate: its first two
    // results as an array.
    c.expect(
        "POST",
        &jobs_path,
        &serde_json::to_vec(&job_body(0, shape)).unwrap(),
        201,
    );
    let first = c.id();
    let quality0 = format!("{jobs_path}/{first}/quality");
    let probe = shape.results.min(2);
    let head = c.call("POST", &quality0, &certificate(0, 0..probe));
    let bulk = match head.status {
        201 => {
            let n = c.json().as_array().map(Vec::len);
            assert_eq!(
                n,
                Some(probe),
                "a certificate of {probe} answered {}",
                c.text()
            );
            if shape.results > probe {
                c.expect(
                    "POST",
                    &quality0,
                    &certificate(0, probe..shape.results),
                    201,
                );
            }
            true
        }
        400 => {
            for k in 0..shape.results {
                c.expect("POST", &quality0, &quality_body(0, k), 201);
            }
            false
        }
        other => panic!(
            "a certificate of two results answered {other}: {}",
            c.text()
        ),
    };
    eprintln!(
        "scale: {} jobs x {} results into workspace {ws}, {} connections, results {}",
        shape.jobs,
        shape.results,
        s.connections,
        if bulk {
            "as one certificate per job"
        } else {
            "one POST each (no bulk certificate)"
        }
    );

    let next = AtomicUsize::new(1);
    let done = AtomicUsize::new(1);
    let results = AtomicUsize::new(shape.results);
    let ids: Mutex<Vec<Option<String>>> = Mutex::new(vec![None; shape.jobs]);
    ids.lock().unwrap()[0] = Some(first);
    let mut truncated = false;
    std::thread::scope(|scope| {
        for _ in 0..s.connections {
            scope.spawn(|| {
                let mut c = Client::new(&s.base, &s.key);
                let mut mine = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= shape.jobs || Instant::now() > deadline {
                        break;
                    }
                    c.expect(
                        "POST",
                        &jobs_path,
                        &serde_json::to_vec(&job_body(i, shape)).unwrap(),
                        201,
                    );
                    let id = c.id();
                    let quality = format!("{jobs_path}/{id}/quality");
                    if bulk {
                        // At most 1,000 results a certificate.
                        let mut k = 0;
                        while k < shape.results {
                            let end = (k + 1000).min(shape.results);
                            c.expect("POST", &quality, &certificate(i, k..end), 201);
                            k = end;
                        }
                    } else {
                        for k in 0..shape.results {
                            c.expect("POST", &quality, &quality_body(i, k), 201);
                        }
                    }
                    results.fetch_add(shape.results, Ordering::Relaxed);
                    mine.push((i, id));
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if n % (shape.jobs / 10).max(1) == 0 {
                        eprintln!(
                            "scale:   {n} jobs, {} results, {:.0} s",
                            results.load(Ordering::Relaxed),
                            started.elapsed().as_secs_f64()
                        );
                    }
                }
                let mut ids = ids.lock().unwrap();
                for (i, id) in mine {
                    ids[i] = Some(id);
                }
            });
        }
    });
    let ids = ids.into_inner().unwrap();
    // What is measured: jobs 0 to the first one not loaded (job `i` is
    // `job_xref(i)`); all of them unless the load limit stopped loading.
    let loaded = ids.iter().take_while(|id| id.is_some()).count();
    if loaded < shape.jobs {
        truncated = true;
        eprintln!(
            "scale: WARNING: the load limit of {} s stopped loading at {} of {} jobs",
            s.load_limit,
            ids.iter().flatten().count(),
            shape.jobs
        );
    }
    let jobs: Vec<String> = ids.into_iter().take(loaded).flatten().collect();
    let job_seconds = started.elapsed().as_secs_f64();

    // The tenant's other workspaces.
    let made = AtomicUsize::new(1);
    std::thread::scope(|scope| {
        for _ in 0..s.connections {
            scope.spawn(|| {
                let mut c = Client::new(&s.base, &s.key);
                loop {
                    let n = made.fetch_add(1, Ordering::Relaxed);
                    if n >= shape.workspaces || Instant::now() > deadline {
                        break;
                    }
                    let body = json!({
                        "description": format!("Bench workspace {n}"),
                        "parties": {"client": {"id": org}}
                    });
                    c.expect(
                        "POST",
                        "/workspaces",
                        &serde_json::to_vec(&body).unwrap(),
                        201,
                    );
                }
            });
        }
    });
    let workspaces = made.into_inner().min(shape.workspaces);
    if workspaces < shape.workspaces {
        truncated = true;
    }
    let seconds = started.elapsed().as_secs_f64();
    let results = results.into_inner();
    eprintln!(
        "scale: loaded {} jobs and {results} results in {job_seconds:.1} s ({:.0} results/s), \
         {workspaces} workspaces by {seconds:.1} s",
        jobs.len(),
        results as f64 / job_seconds
    );
    Loaded {
        ws,
        jobs,
        results,
        workspaces,
        bulk,
        seconds,
        truncated,
    }
}

/// A latency: p50 and p99 in ms over `n` samples; the size of an answer.
fn stat(mut samples: Vec<f64>, bytes: usize) -> Value {
    samples.sort_by(f64::total_cmp);
    let rank = |p: f64| {
        let i = ((p * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[i]
    };
    let micro = |ms: f64| (ms * 1e3).round() / 1e3;
    json!({"p50": micro(rank(0.50)), "p99": micro(rank(0.99)), "n": samples.len(), "bytes": bytes})
}

/// The request an operation makes next, from its random numbers.
type Make<'a> = Box<dyn Fn(&mut Rng) -> Req + Sync + 'a>;

/// What an operation checks of its first answers.
type Check<'a> = Box<dyn Fn(&http1::Head, &Client) + Sync + 'a>;

/// How an operation is measured.
enum How<'a> {
    /// One connection, one request after another: p50/p99. Each slice starts
    /// with 3 calls unrecorded, their answers given to the check.
    Latency { make: Make<'a>, check: Check<'a> },
    /// Requests per second over `connections` connections.
    Rate { connections: usize, make: Make<'a> },
}

/// One operation of the issue's table, on one size.
struct Op<'a> {
    key: &'static str,
    name: &'static str,
    seed: u64,
    how: How<'a>,
}

/// What the slices of one operation on one size add up to.
struct Tally {
    rng: Rng,
    samples: Vec<f64>,
    bytes: usize,
    count: u64,
    errors: u64,
    seconds: f64,
    slices: u64,
}

/// Runs one slice of `op` on `s`'s server: a share of the operation's
/// samples and seconds (a latency), or a whole run of its seconds after half
/// a second unrecorded (a rate), counted into `tally` when `record`.
fn slice(s: &Settings, op: &Op<'_>, tally: &mut Tally, share: f64, record: bool) {
    tally.slices += 1;
    match &op.how {
        How::Latency { make, check } => {
            let mut c = Client::new(&s.base, &s.key);
            for _ in 0..3 {
                let req = make(&mut tally.rng);
                let head = c.expect(req.method, &req.path, &req.body, req.want);
                check(&head, &c);
            }
            let max = ((s.samples as f64 * share).ceil() as usize).max(1);
            let until = Instant::now() + Duration::from_secs_f64(s.op_seconds * share);
            let mut n = 0;
            while n < max && Instant::now() < until {
                let req = make(&mut tally.rng);
                let start = Instant::now();
                let head = c.call(req.method, &req.path, &req.body);
                let ms = start.elapsed().as_secs_f64() * 1e3;
                assert_eq!(
                    head.status,
                    req.want,
                    "{} {}: {}",
                    req.method,
                    req.path,
                    c.text()
                );
                if record {
                    tally.samples.push(ms);
                }
                n += 1;
            }
            if record {
                tally.bytes = c.body.len();
            }
        }
        How::Rate { connections, make } => {
            // A whole run each round, not a share: a write rate measured for
            // a second after a cold start would weigh the start too much.
            let seconds = s.rate_seconds;
            let start = Instant::now();
            let measured_from = start + Duration::from_millis(500);
            let until = measured_from + Duration::from_secs_f64(seconds);
            let count = AtomicU64::new(0);
            let errors = AtomicU64::new(0);
            let first_seed = 1_000 + 100 * tally.slices;
            std::thread::scope(|scope| {
                for t in 0..*connections {
                    let (count, errors) = (&count, &errors);
                    scope.spawn(move || {
                        let mut c = Client::new(&s.base, &s.key);
                        let mut rng = Rng::new(first_seed + t as u64);
                        loop {
                            let req = make(&mut rng);
                            let head = c.call(req.method, &req.path, &req.body);
                            let now = Instant::now();
                            if now >= until {
                                break;
                            }
                            if now < measured_from {
                                continue;
                            }
                            count.fetch_add(1, Ordering::Relaxed);
                            if head.status != req.want
                                && errors.fetch_add(1, Ordering::Relaxed) == 0
                            {
                                eprintln!(
                                    "scale: {} {} answered {}: {}",
                                    req.method,
                                    req.path,
                                    head.status,
                                    c.text()
                                );
                            }
                        }
                    });
                }
            });
            if record {
                tally.count += count.into_inner();
                tally.errors += errors.into_inner();
                tally.seconds += seconds;
            }
        }
    }
}

/// Every operation on every target, the targets taking turns so that each
/// size is measured in the same moments of this machine as the others: for
/// each operation, one round unrecorded (latencies only: it brings back
/// into memory what an idle size's file lost meanwhile), then `rounds`
/// rounds, each giving every size a `1/rounds` share of a latency's samples
/// and seconds or a whole run of a rate, in an order reversed from one round
/// to the next.
/// Reads first, then writes, so that the writes do not grow what the reads
/// see.
fn measure(targets: &[Target], rounds: usize) -> Vec<serde_json::Map<String, Value>> {
    let mut outs = Vec::new();
    let mut plans = Vec::new();
    for t in targets {
        let (ops, extras) = operations(t);
        plans.push(ops);
        outs.push(extras);
    }
    let keys: Vec<(&'static str, &'static str)> = plans
        .iter()
        .max_by_key(|ops| ops.len())
        .map(|ops| ops.iter().map(|op| (op.key, op.name)).collect())
        .unwrap_or_default();
    for (key, name) in keys {
        let mut tallies: Vec<Option<Tally>> = plans
            .iter()
            .map(|ops| {
                ops.iter().find(|op| op.key == key).map(|op| Tally {
                    rng: Rng::new(op.seed),
                    samples: Vec::new(),
                    bytes: 0,
                    count: 0,
                    errors: 0,
                    seconds: 0.0,
                    slices: 0,
                })
            })
            .collect();
        let is_latency = plans
            .iter()
            .flatten()
            .any(|op| op.key == key && matches!(op.how, How::Latency { .. }));
        let first = if is_latency { 0 } else { 1 };
        for round in first..=rounds {
            let mut order: Vec<usize> = (0..targets.len()).collect();
            if round % 2 == 0 {
                order.reverse();
            }
            for i in order {
                let (Some(tally), Some(op)) = (
                    tallies[i].as_mut(),
                    plans[i].iter().find(|op| op.key == key),
                ) else {
                    continue;
                };
                slice(&targets[i].s, op, tally, 1.0 / rounds as f64, round > 0);
            }
        }
        for (i, tally) in tallies.into_iter().enumerate() {
            let Some(tally) = tally else { continue };
            let op = plans[i].iter().find(|op| op.key == key).expect("op");
            let value = match &op.how {
                How::Latency { .. } => stat(tally.samples, tally.bytes),
                How::Rate { connections, .. } => json!({
                    "rps": tally.count as f64 / tally.seconds.max(1e-9),
                    "errors": tally.errors,
                    "connections": connections
                }),
            };
            eprintln!(
                "scale:   {:>6} jobs  {name:<24} {value}",
                targets[i].loaded.jobs.len()
            );
            // An operation's extra figures (found before it was timed) stay.
            match outs[i].get_mut(key) {
                Some(Value::Object(extra)) => {
                    if let Value::Object(value) = value {
                        extra.extend(value);
                    }
                }
                _ => {
                    outs[i].insert(key.into(), value);
                }
            }
        }
    }
    outs
}

/// An operation timed by latency, its first answers not checked.
fn latency_op<'a>(
    key: &'static str,
    name: &'static str,
    seed: u64,
    make: impl Fn(&mut Rng) -> Req + Sync + 'a,
) -> Op<'a> {
    checked_op(key, name, seed, make, |_, _| {})
}

/// An operation timed by latency, each slice's first answers checked.
fn checked_op<'a>(
    key: &'static str,
    name: &'static str,
    seed: u64,
    make: impl Fn(&mut Rng) -> Req + Sync + 'a,
    check: impl Fn(&http1::Head, &Client) + Sync + 'a,
) -> Op<'a> {
    Op {
        key,
        name,
        seed,
        how: How::Latency {
            make: Box::new(make),
            check: Box::new(check),
        },
    }
}

/// An operation measured by its rate over `connections` connections.
fn rate_op<'a>(
    key: &'static str,
    name: &'static str,
    connections: usize,
    make: impl Fn(&mut Rng) -> Req + Sync + 'a,
) -> Op<'a> {
    Op {
        key,
        name,
        seed: 0,
        how: How::Rate {
            connections,
            make: Box::new(make),
        },
    }
}

fn with_total(head: &http1::Head, c: &Client) {
    assert!(
        total_count(head).is_some(),
        "no X-Total-Count: {}",
        c.text()
    );
}

/// The number of items of a JSON array answer.
fn items(c: &Client) -> usize {
    c.json().as_array().map_or(0, Vec::len)
}

/// The operations of the issue's table on `t`'s workspace, in the order
/// they are measured, and what is found about them before: whether the
/// first page links to a next, how many workspaces the default page lists.
fn operations(t: &Target) -> (Vec<Op<'_>>, serde_json::Map<String, Value>) {
    let (s, shape, loaded) = (&t.s, &t.shape, &t.loaded);
    let ws = &loaded.ws;
    let jobs = &loaded.jobs;
    let n = jobs.len();
    let results = shape.results;
    let list = t.list.as_str();
    let mut extras = serde_json::Map::new();
    let deep = n * 9 / 10;
    let mut ops = vec![
        latency_op("get_job", "GET a job", 1, move |r| {
            get(format!("{list}/{}", jobs[r.below(n)]))
        }),
        checked_op(
            "list_25",
            "list limit=25",
            2,
            move |_| get(format!("{list}?limit=25")),
            with_total,
        ),
        latency_op("list_default", "list, no limit", 3, move |_| {
            get(list.to_string())
        }),
        checked_op(
            "xref",
            "?xref=",
            4,
            move |r| get(format!("{list}?xref={}", job_xref(r.below(n)))),
            |head, c| {
                assert_eq!(items(c), 1, "?xref= found: {}", c.text());
                with_total(head, c);
            },
        ),
        checked_op(
            "status_sort",
            "status+sort eta",
            5,
            move |_| get(format!("{list}?status=active&sort=eta:desc&limit=25")),
            with_total,
        ),
        checked_op(
            "unindexed",
            "?tripNumber= (unindexed)",
            6,
            move |r| {
                get(format!(
                    "{list}?tripNumber={}&limit=25",
                    trip_number(r.below(n))
                ))
            },
            with_total,
        ),
        checked_op(
            "offset",
            "offset 90%",
            7,
            move |_| get(format!("{list}?limit=25&offset={deep}")),
            with_total,
        ),
        checked_op(
            "quality_of_job",
            "30 results of a job",
            8,
            move |r| get(format!("{list}/{}/quality", jobs[r.below(n)])),
            move |_, c| assert_eq!(items(c), results.min(100), "a job's results"),
        ),
        // The same answer at every size (one workspace), so that the ratio
        // measures what the tenant's number of workspaces costs; and the
        // default page, which holds one workspace at the smallest size and a
        // full page at the others, shown with the number it listed.
        checked_op(
            "workspaces_v2",
            "v2 workspace list",
            9,
            |_| get("/v2/workspaces?limit=1".to_string()),
            |_, c| assert_eq!(items(c), 1, "a page of one workspace"),
        ),
        latency_op("workspaces_v2_page", "v2 workspaces page", 9, |_| {
            get("/v2/workspaces".to_string())
        }),
    ];
    let mut c = Client::new(&s.base, &s.key);
    c.expect("GET", "/v2/workspaces", b"", 200);
    extras.insert("workspaces_v2_page".into(), json!({"listed": items(&c)}));
    let (first_link, deep_path) = keyset_deep_page(s, list, n);
    extras.insert("keyset_first_page_link".into(), json!(first_link));
    match deep_path {
        Some(path) => ops.push(latency_op(
            "keyset_next",
            "keyset next page",
            10,
            move |_| get(path.clone()),
        )),
        None => {
            eprintln!("scale:   keyset next page      n/a (no rel=\"next\" link)");
            extras.insert("keyset_next".into(), Value::Null);
        }
    }
    let catalog = format!("/workspaces/{ws}/catalogs/locations");
    let pool = shape.locations.min(n);
    ops.push(checked_op(
        "catalog_xref",
        "catalog ?xref=",
        11,
        move |r| get(format!("{catalog}?xref=LOC-{:06}", r.below(pool))),
        |_, c| assert_eq!(items(c), 1, "catalog ?xref= found: {}", c.text()),
    ));

    // The writes.
    let new_job = move |r: &mut Rng| {
        let i = t.fresh.fetch_add(1, Ordering::Relaxed);
        let mut body = job_body(i, shape);
        body["location"] = location_ref(r.below(pool));
        post(list.to_string(), &body, 201)
    };
    let single = move |r: &mut Rng| {
        let i = r.below(n);
        Req {
            method: "POST",
            path: format!("{list}/{}/quality", jobs[i]),
            body: quality_body(i, r.below(results)),
            want: 201,
        }
    };
    let bulk30 = move |r: &mut Rng| {
        let i = r.below(n);
        Req {
            method: "POST",
            path: format!("{list}/{}/quality", jobs[i]),
            body: certificate(i, 0..30),
            want: 201,
        }
    };
    ops.push(latency_op(
        "post_job_location",
        "POST job, known loc",
        12,
        new_job,
    ));
    ops.push(rate_op("post_job_rate", "POST job", 16, new_job));
    ops.push(rate_op("post_quality_rate", "POST quality", 16, single));
    if loaded.bulk {
        ops.push(rate_op("bulk30_1_rate", "bulk 30, 1 conn", 1, bulk30));
        ops.push(rate_op("single_1_rate", "single, 1 conn", 1, single));
        ops.push(rate_op("bulk30_8_rate", "bulk 30, 8 conns", 8, bulk30));
    } else {
        eprintln!("scale:   bulk certificate      n/a (the server takes one result per POST)");
    }
    (ops, extras)
}

/// `path` with its `limit` parameter set to `limit` (any other kept).
fn with_limit(path: &str, limit: usize) -> String {
    let (before, query) = path.split_once('?').unwrap_or((path, ""));
    let mut params: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("limit="))
        .collect();
    let limit = format!("limit={limit}");
    params.push(&limit);
    format!("{before}?{}", params.join("&"))
}

/// Follows `rel="next"` from the first page to 90% of the jobs, at most
/// 1,000 a page, the last page asking for just what is left to reach 90%;
/// the link there, asking for 25, is the deep page to time. Also whether the
/// first page of `?limit=25` has a next link.
fn keyset_deep_page(s: &Settings, list: &str, n: usize) -> (bool, Option<String>) {
    let mut c = Client::new(&s.base, &s.key);
    let first = format!("{list}?limit=25");
    let head = c.expect("GET", &first, b"", 200);
    let first_link = next_link(&head, &first).is_some();
    let target = (n * 9 / 10).max(1);
    let mut path = with_limit(list, target.min(1000));
    let mut seen = 0;
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let head = c.expect("GET", &path, b"", 200);
        seen += c.json().as_array().map_or(0, Vec::len);
        let Some(next) = next_link(&head, &path) else {
            eprintln!("scale:   no rel=\"next\" link after {seen} of {n} jobs");
            return (first_link, None);
        };
        if seen >= target || Instant::now() > until {
            let deep = with_limit(&next, 25);
            eprintln!("scale:   keyset cursor after {seen} of {n} jobs: {deep}");
            return (first_link, Some(deep));
        }
        path = with_limit(&next, (target - seen).min(1000));
    }
}

// ---------------------------------------------------------------------------
// report: the Markdown of bench/SCALE.md
// ---------------------------------------------------------------------------

/// How a row is judged between the largest and the smallest size.
#[derive(Clone, Copy, PartialEq)]
enum Judge {
    /// At most 2x the smallest size's figure.
    Flat,
    /// Shown, not judged: linear by nature.
    Linear,
    /// Shown, not judged: the answer itself differs between the sizes.
    Shown,
}

fn size_label(jobs: u64) -> String {
    if jobs >= 1000 && jobs % 1000 == 0 {
        format!("{}k", jobs / 1000)
    } else if jobs >= 1000 {
        format!("{:.1}k", jobs as f64 / 1000.0)
    } else {
        jobs.to_string()
    }
}

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn megabytes(bytes: f64) -> String {
    if bytes >= 10e6 {
        format!("{:.0} MB", bytes / 1e6)
    } else if bytes >= 1e5 {
        format!("{:.1} MB", bytes / 1e6)
    } else {
        format!("{:.1} KB", bytes / 1e3)
    }
}

fn verdict(met: bool) -> &'static str {
    if met { "MET" } else { "NOT MET" }
}

fn report(file: &str) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut runs: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("RESULT "))
        .map(|l| serde_json::from_str(l).expect("a RESULT line"))
        .collect();
    assert!(!runs.is_empty(), "no RESULT lines in {file}");
    runs.sort_by_key(|r| r["jobs"].as_u64());
    let labels: Vec<String> = runs
        .iter()
        .map(|r| size_label(r["jobs"].as_u64().unwrap_or(0)))
        .collect();
    let (first, last) = (&runs[0], &runs[runs.len() - 1]);
    let (small, large) = (&labels[0], &labels[labels.len() - 1]);
    let mut out = Vec::new();
    let mut targets: Vec<(String, bool)> = Vec::new();

    // The loaded workspaces.
    out.push("## What was loaded\n".to_string());
    out.push(format!(
        "| | {} |\n|---|{}",
        labels.join(" | "),
        "---:|".repeat(runs.len())
    ));
    let row = |name: &str, cell: &dyn Fn(&Value) -> String| {
        let cells: Vec<String> = runs.iter().map(cell).collect();
        format!("| {name} | {} |", cells.join(" | "))
    };
    let num = |v: &Value| v.as_f64().unwrap_or(0.0);
    out.push(row("jobs loaded", &|r| {
        let mut s = format!("{}", r["jobs_loaded"]);
        if r["load_truncated"].as_bool() == Some(true) {
            s.push_str(" (load limit hit)");
        }
        s
    }));
    out.push(row("quality results loaded", &|r| {
        format!("{}", r["results_loaded"])
    }));
    out.push(row("how results were posted", &|r| {
        if r["bulk"].as_bool() == Some(true) {
            "one certificate per job".into()
        } else {
            "one POST per result".into()
        }
    }));
    out.push(row("the tenant's workspaces", &|r| {
        format!("{}", r["workspaces_loaded"])
    }));
    out.push(row("location catalog items", &|r| {
        format!("{}", r["locations"])
    }));
    out.push(row("loading time (8 connections)", &|r| {
        format!("{:.1} s", num(&r["load_seconds"]))
    }));
    out.push(row("results/s while loading", &|r| {
        format!(
            "{:.0}",
            num(&r["results_loaded"]) / num(&r["load_seconds"]).max(1e-9)
        )
    }));
    out.push(row("data file (+ WAL) after loading", &|r| {
        format!(
            "{} (+ {})",
            megabytes(num(&r["data_bytes"])),
            megabytes(num(&r["wal_bytes"]))
        )
    }));
    out.push(row("settling before the reads (`sync`, then 3 s)", &|r| {
        format!("{:.1} s", num(&r["settle_seconds"]))
    }));
    out.push(row("server RSS after loading", &|r| {
        megabytes(num(&r["rss_kb"]) * 1024.0)
    }));
    out.push(row("server peak RSS (end of run)", &|r| {
        megabytes(num(&r["hwm_kb"]) * 1024.0)
    }));

    // The operations.
    out.push(String::new());
    out.push("## The operations\n".to_string());
    out.push(format!(
        "Latencies are `p50/p99` in ms (one connection, sequential); rates in requests/s. \
         The ratio column is {large} over {small}: for a latency p50 and p99 each (a row is \
         MET when both are at most 2x), for a rate {large}'s rate over {small}'s (MET when at \
         least 0.5).\n"
    ));
    out.push(format!(
        "| Operation | {} | {large} vs {small} | Target | Verdict |\n|---|{}---|---|---|",
        labels.join(" | "),
        "---:|".repeat(runs.len())
    ));
    let latency_rows: [(&str, &str, Judge); 12] = [
        ("get_job", "GET a job by id (a random job)", Judge::Flat),
        (
            "list_25",
            "list jobs, `limit=25`, with `X-Total-Count`",
            Judge::Flat,
        ),
        (
            "list_default",
            "list jobs with no limit (the older paths' default page; answer size)",
            Judge::Flat,
        ),
        (
            "xref",
            "`?xref=` a random job's xref (an integrator finds its own job)",
            Judge::Flat,
        ),
        (
            "status_sort",
            "`?status=active&sort=eta:desc&limit=25`",
            Judge::Flat,
        ),
        (
            "unindexed",
            "`?tripNumber=…&limit=25` (a filter on an unindexed field)",
            Judge::Linear,
        ),
        ("offset", "`?limit=25&offset=` at 90%", Judge::Linear),
        (
            "quality_of_job",
            "the 30 quality results of one random job",
            Judge::Flat,
        ),
        (
            "workspaces_v2",
            "v2 workspace list, a page of one `GET /v2/workspaces?limit=1` (the tenant's workspaces)",
            Judge::Flat,
        ),
        (
            "workspaces_v2_page",
            "v2 workspace list, the default page `GET /v2/workspaces` (workspaces listed)",
            Judge::Shown,
        ),
        (
            "post_job_location",
            "POST a job naming an existing location by xref (catalog items)",
            Judge::Flat,
        ),
        (
            "keyset_next",
            "keyset next page: `rel=\"next\"` from ~90% of the jobs, 25 a page",
            Judge::Flat,
        ),
    ];
    let latency_row = |key: &str,
                       name: &str,
                       judge: Judge,
                       out: &mut Vec<String>,
                       targets: &mut Vec<(String, bool)>| {
        let cells: Vec<String> = runs
            .iter()
            .map(|r| {
                let op = &r["ops"][key];
                if op.is_null() {
                    return "n/a".to_string();
                }
                let mut cell = format!("{}/{}", ms(num(&op["p50"])), ms(num(&op["p99"])));
                match key {
                    "list_default" => {
                        cell.push_str(&format!(" ({})", megabytes(num(&op["bytes"]))))
                    }
                    "workspaces_v2" => cell.push_str(&format!(" ({} ws)", r["workspaces_loaded"])),
                    "workspaces_v2_page" => cell.push_str(&format!(
                        " ({} of {} ws)",
                        op["listed"], r["workspaces_loaded"]
                    )),
                    "post_job_location" => cell.push_str(&format!(" ({} items)", r["locations"])),
                    _ => {}
                }
                cell
            })
            .collect();
        let (a, b) = (&first["ops"][key], &last["ops"][key]);
        let (ratio, target, result) = if a.is_null() || b.is_null() {
            let why = if key == "keyset_next" {
                "no `Link: rel=\"next\"` on the lists"
            } else {
                "not measured"
            };
            (
                "n/a".to_string(),
                "at most 2x".to_string(),
                format!("NOT MET (n/a: {why})"),
            )
        } else {
            let r50 = num(&b["p50"]) / num(&a["p50"]).max(1e-9);
            let r99 = num(&b["p99"]) / num(&a["p99"]).max(1e-9);
            let ratio = format!("x{r50:.2} / x{r99:.2}");
            match judge {
                Judge::Flat => {
                    let met = r50 <= 2.0 && r99 <= 2.0;
                    targets.push((format!("{name}: at most 2x"), met));
                    (ratio, "at most 2x".to_string(), verdict(met).to_string())
                }
                Judge::Linear => (ratio, "none".to_string(), "linear by nature".to_string()),
                Judge::Shown => (
                    ratio,
                    "none".to_string(),
                    "shown: the answer's size differs".to_string(),
                ),
            }
        };
        if (a.is_null() || b.is_null()) && judge == Judge::Flat {
            targets.push((format!("{name}: at most 2x"), false));
        }
        out.push(format!(
            "| {name} | {} | {ratio} | {target} | {result} |",
            cells.join(" | ")
        ));
    };
    for (key, name, judge) in &latency_rows[..11] {
        latency_row(key, name, *judge, &mut out, &mut targets);
    }
    let rates: [(&str, &str); 2] = [
        (
            "post_job_rate",
            "POST job throughput (req/s, 16 connections)",
        ),
        (
            "post_quality_rate",
            "POST one quality result throughput (req/s, 16 connections)",
        ),
    ];
    for (key, name) in rates {
        let cells: Vec<String> = runs
            .iter()
            .map(|r| {
                let op = &r["ops"][key];
                let mut cell = format!("{:.0}", num(&op["rps"]));
                if num(&op["errors"]) > 0.0 {
                    cell.push_str(&format!(" ({} errors)", op["errors"]));
                }
                cell
            })
            .collect();
        let ratio = num(&last["ops"][key]["rps"]) / num(&first["ops"][key]["rps"]).max(1e-9);
        let met = ratio >= 0.5;
        targets.push((format!("{name}: at least half of {small}'s"), met));
        out.push(format!(
            "| {name} | {} | x{ratio:.2} | at least 0.5x | {} |",
            cells.join(" | "),
            verdict(met)
        ));
    }
    let (key, name, judge) = latency_rows[11];
    latency_row(key, name, judge, &mut out, &mut targets);

    // The bulk certificate.
    let bulk_cells = |key: &str| -> Vec<String> {
        runs.iter()
            .map(|r| {
                let op = &r["ops"][key];
                if op.is_null() {
                    "n/a".to_string()
                } else {
                    format!("{:.0}", num(&op["rps"]) * 30.0)
                }
            })
            .collect()
    };
    let ratio_of = |r: &Value| -> Option<f64> {
        let bulk = &r["ops"]["bulk30_1_rate"];
        let single = &r["ops"]["single_1_rate"];
        (!bulk.is_null() && !single.is_null())
            .then(|| num(&bulk["rps"]) * 30.0 / num(&single["rps"]).max(1e-9))
    };
    let cells: Vec<String> = runs
        .iter()
        .map(|r| match ratio_of(r) {
            Some(ratio) => format!(
                "{:.0} vs {:.0} (x{ratio:.1})",
                num(&r["ops"]["bulk30_1_rate"]["rps"]) * 30.0,
                num(&r["ops"]["single_1_rate"]["rps"])
            ),
            None => "n/a".to_string(),
        })
        .collect();
    let large_ratio = ratio_of(last);
    let met = large_ratio.is_some_and(|r| r >= 3.0);
    out.push(format!(
        "| bulk certificate of 30 vs single POSTs, one connection each (results/s: bulk vs single) | {} | {} | at least 3x at {large} | {} |",
        cells.join(" | "),
        large_ratio.map_or("n/a".to_string(), |r| format!("x{r:.1} at {large}")),
        if large_ratio.is_none() { "NOT MET (n/a: no bulk certificate)" } else { verdict(met) }
    ));
    targets.push((
        "a bulk certificate of 30: at least 3x the results/s of 30 single POSTs".into(),
        met,
    ));
    let bulk8 = &last["ops"]["bulk30_8_rate"];
    let bulk8_rate = (!bulk8.is_null()).then(|| num(&bulk8["rps"]) * 30.0);
    let met = bulk8_rate.is_some_and(|r| r >= 50_000.0);
    out.push(format!(
        "| bulk certificate of 30, 8 connections (results/s) | {} | | at least 50,000 at {large} | {} |",
        bulk_cells("bulk30_8_rate").join(" | "),
        if bulk8_rate.is_none() { "NOT MET (n/a: no bulk certificate)" } else { verdict(met) }
    ));
    targets.push((
        "a bulk certificate of 30 with 8 connections: at least 50,000 results/s".into(),
        met,
    ));
    // Catalog reuse by xref.
    let cells: Vec<String> = runs
        .iter()
        .map(|r| {
            let op = &r["ops"]["catalog_xref"];
            format!(
                "{}/{} ({} items)",
                ms(num(&op["p50"])),
                ms(num(&op["p99"])),
                r["locations"]
            )
        })
        .collect();
    let (a, b) = (&first["ops"]["catalog_xref"], &last["ops"]["catalog_xref"]);
    let r50 = num(&b["p50"]) / num(&a["p50"]).max(1e-9);
    let r99 = num(&b["p99"]) / num(&a["p99"]).max(1e-9);
    let met = r50 <= 2.0 && r99 <= 2.0;
    out.push(format!(
        "| catalog reuse: `GET …/catalogs/locations?xref=` an existing item | {} | x{r50:.2} / x{r99:.2} | at most 2x | {} |",
        cells.join(" | "),
        verdict(met)
    ));
    targets.push(("catalog lookup by xref: at most 2x".into(), met));

    // The first page's own target.
    let p99 = num(&last["ops"]["list_25"]["p99"]);
    let met = p99 < 5.0;
    targets.insert(
        0,
        (
            format!(
                "the first page with its total (`limit=25`) at {large}: p99 under 5 ms ({} ms)",
                ms(p99)
            ),
            met,
        ),
    );
    let first_link = runs
        .iter()
        .map(|r| r["ops"]["keyset_first_page_link"].as_bool() == Some(true))
        .collect::<Vec<_>>();

    out.push(String::new());
    out.push(format!("## Targets ({large} against {small}, this run)\n"));
    let met_count = targets.iter().filter(|(_, met)| *met).count();
    out.push(format!("{met_count} of {} met.\n", targets.len()));
    if first["jobs"].as_u64() != Some(1000) || last["jobs"].as_u64() != Some(100_000) {
        out.push(format!(
            "**Not the issue's sizes**: its targets are stated for 100k jobs against 1k; this run \
             judges {large} against {small}, so these verdicts are a smoke test's, not the issue's.\n"
        ));
    }
    out.push("| Target | Verdict |\n|---|---|".to_string());
    for (name, met) in &targets {
        out.push(format!("| {name} | {} |", verdict(*met)));
    }
    out.push(String::new());
    out.push(format!(
        "The first page of `?limit=25` carried a `rel=\"next\"` link: {}.",
        labels
            .iter()
            .zip(&first_link)
            .map(|(l, has)| format!("{l} {}", if *has { "yes" } else { "no" }))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    println!("{}", out.join("\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(links: &[&str]) -> http1::Head {
        http1::Head {
            status: 200,
            content_length: None,
            chunked: false,
            headers: links
                .iter()
                .map(|l| ("Link".to_string(), l.to_string()))
                .collect(),
        }
    }

    #[test]
    fn finds_the_next_link_as_a_path() {
        let from = "/workspaces/w/jobs?limit=25";
        let path = "/workspaces/w/jobs?limit=25&after=abc";
        let next = |links: &[&str]| next_link(&head(links), from);
        assert_eq!(
            next(&[&format!("<{path}>; rel=\"next\"")]),
            Some(path.to_string())
        );
        assert_eq!(
            next(&[&format!(
                "<http://127.0.0.1:9/p?a=1>; rel=\"prev\", <http://127.0.0.1:9{path}>; rel=next"
            )]),
            Some(path.to_string())
        );
        assert_eq!(
            next(&["<?limit=25&after=abc>; rel=\"next last\""]),
            Some(path.to_string())
        );
        assert_eq!(
            next(&["<jobs?limit=25&after=abc>; title=\"x\"; REL=\"next\""]),
            Some(path.to_string())
        );
        assert_eq!(next(&["</p>; rel=\"prev\""]), None);
        assert_eq!(next(&[]), None);
    }

    #[test]
    fn sets_the_limit_of_a_path() {
        assert_eq!(with_limit("/j", 25), "/j?limit=25");
        assert_eq!(
            with_limit("/j?limit=1000&after=x&sort=eta:desc", 25),
            "/j?after=x&sort=eta:desc&limit=25"
        );
    }

    /// A server of `n` records that pages them by `after` (an index) with at
    /// most `cap` a page, and links the next page as RFC 8288 says if `links`.
    fn paging_server(
        n: usize,
        cap: usize,
        links: bool,
    ) -> (String, std::thread::JoinHandle<Vec<String>>) {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let mut asked = Vec::new();
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut writer = stream;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap() == 0 {
                    return asked;
                }
                let target = line.split_whitespace().nth(1).unwrap().to_string();
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).unwrap();
                    if header.trim().is_empty() {
                        break;
                    }
                }
                let (path, query) = target.split_once('?').unwrap();
                let param = |name: &str| {
                    query
                        .split('&')
                        .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
                        .map(|v| v.parse::<usize>().unwrap())
                };
                let limit = param("limit").unwrap_or(cap).min(cap);
                let from = param("after").map_or(0, |a| a + 1);
                let to = (from + limit).min(n);
                let items: Vec<String> =
                    (from..to).map(|i| format!("{{\"id\":\"{i}\"}}")).collect();
                let body = format!("[{}]", items.join(","));
                let link = if links && to < n {
                    format!(
                        "Link: <{path}?limit={limit}&after={}>; rel=\"next\"\r\n",
                        to - 1
                    )
                } else {
                    String::new()
                };
                write!(
                    writer,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{link}\r\n{body}",
                    body.len()
                )
                .unwrap();
                asked.push(target);
            }
        });
        (base, server)
    }

    fn settings(base: &str) -> Settings {
        Settings {
            base: base.to_string(),
            key: "k".into(),
            results: 30,
            connections: 1,
            samples: 1,
            op_seconds: 1.0,
            rate_seconds: 1.0,
            load_limit: 1.0,
        }
    }

    #[test]
    fn walks_to_a_cursor_at_90_percent() {
        let (base, server) = paging_server(2_500, 1_000, true);
        let (first_link, deep) = keyset_deep_page(&settings(&base), "/jobs", 2_500);
        assert!(first_link);
        assert_eq!(deep.as_deref(), Some("/jobs?after=2249&limit=25"));
        let asked = server.join().unwrap();
        assert_eq!(
            asked,
            [
                "/jobs?limit=25",
                "/jobs?limit=1000",
                "/jobs?after=999&limit=1000",
                "/jobs?after=1999&limit=250"
            ]
        );
        // A server that pages by less than asked, or not at all.
        let (base, server) = paging_server(100, 7, true);
        let (_, deep) = keyset_deep_page(&settings(&base), "/jobs", 100);
        assert_eq!(deep.as_deref(), Some("/jobs?after=89&limit=25"));
        drop(server);
        let (base, server) = paging_server(100, 1_000, false);
        assert_eq!(
            keyset_deep_page(&settings(&base), "/jobs", 100),
            (false, None)
        );
        drop(server);
    }

    #[test]
    fn result_bodies_are_the_json_they_mean() {
        let one: Value = serde_json::from_slice(&quality_body(12, 16)).unwrap();
        assert_eq!(one["setNumber"], 2);
        assert_eq!(one["testNumber"], 2);
        assert_eq!(one["sample"]["location"], "TANK-2");
        assert_eq!(one["uom"]["name"], "°API");
        assert_eq!(one["coaId"], "COA-0000012");
        let all: Value = serde_json::from_slice(&certificate(12, 0..30)).unwrap();
        assert_eq!(all.as_array().map(Vec::len), Some(30));
        assert_eq!(all[16], one);
        let empty: Value = serde_json::from_slice(&certificate(1, 0..0)).unwrap();
        assert_eq!(empty, json!([]));
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v = stat((1..=100).map(f64::from).collect(), 0);
        assert_eq!(v["p50"], 50.0);
        assert_eq!(v["p99"], 99.0);
    }
}
