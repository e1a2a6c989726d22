//! Crash safety: concurrent writes (ports, jobs, quality results, uploads),
//! SIGKILL at a random moment, restart on the same file, and every write that
//! was acknowledged (2xx) must be there exactly as acknowledged, with
//! `quayside check` passing. Repeated over many kill points.
//!
//! The change log is checked too: every acknowledged write has its entry, and
//! every entry its committed record; and a webhook created at the start
//! receives every change of the log at least once.
//!
//! `QUAYSIDE_CRASH_POINTS` sets the number of kill points (default 20);
//! `bench/crash` runs this against the release binary with more.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{Server, multipart, run_cli, workspace_with_job};
use crate::webhooks::{FAST, Receiver, create};
use serde_json::{Value, json};

const BOUNDARY: &str = "crashBoundary";

/// Everything the server acknowledged, to be found again after each crash.
#[derive(Default)]
struct Acknowledged {
    ports: HashMap<String, Value>,
    jobs: HashMap<String, Value>,
    quality: HashMap<String, Value>,
    files: HashMap<String, Vec<u8>>,
}

/// A small deterministic generator, so a failing run can be replayed by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Ids {
    workspace: String,
    job: String,
}

fn setup(server: &Server, key: &str) -> Ids {
    let (workspace, job) = workspace_with_job(server, key, "Crash Co", None);
    Ids { workspace, job }
}

/// One writer: keeps writing until told to stop or until the server is gone.
fn writer(
    server: Arc<Server>,
    key: String,
    ids: Arc<Ids>,
    round: usize,
    lane: usize,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Acknowledged>>,
) {
    let mut rng = Rng(0x5EED ^ ((round as u64) << 8) ^ lane as u64);
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let tag = format!("R{round}L{lane}N{n}");
        let outcome = match rng.below(4) {
            0 => {
                let body = json!({"name": format!("Port {tag}"), "generalComments": format!("{}", rng.next())});
                let reply = server.try_request(
                    "PUT",
                    &format!("/api/rest/1.0/ports/{tag}"),
                    Some(&key),
                    &[("Content-Type", "application/json")],
                    Some(body.to_string().as_bytes()),
                );
                reply.map(|r| {
                    if r.status == 201 {
                        acked.lock().unwrap().ports.insert(tag.clone(), body);
                    }
                    r.status
                })
            }
            1 => {
                let body = json!({"xref": tag, "notes": format!("{}", rng.next()), "cargo": {"quantity": n}});
                server
                    .try_request(
                        "POST",
                        &format!("/workspaces/{}/jobs", ids.workspace),
                        Some(&key),
                        &[("Content-Type", "application/json")],
                        Some(body.to_string().as_bytes()),
                    )
                    .map(|r| {
                        if r.status == 201 {
                            acked.lock().unwrap().jobs.insert(
                                r.json()["id"].as_str().unwrap().to_string(),
                                r.json()["body"].clone(),
                            );
                        }
                        r.status
                    })
            }
            2 => {
                let body = json!({"status": "preliminary", "setNumber": n, "sample": {"location": tag},
                    "test": {"xref": "DEN", "name": "Density"}, "method": {"name": "D4052"},
                    "uom": {"name": "kg/m3"}, "result": format!("{}", rng.below(1000))});
                server
                    .try_request(
                        "POST",
                        &format!("/workspaces/{}/jobs/{}/quality", ids.workspace, ids.job),
                        Some(&key),
                        &[("Content-Type", "application/json")],
                        Some(body.to_string().as_bytes()),
                    )
                    .map(|r| {
                        if r.status == 201 {
                            acked.lock().unwrap().quality.insert(
                                r.json()["id"].as_str().unwrap().to_string(),
                                r.json()["body"].clone(),
                            );
                        }
                        r.status
                    })
            }
            _ => {
                let size = 1024 + rng.below(1_500_000) as usize;
                let bytes: Vec<u8> = (0..size).map(|_| rng.next() as u8).collect();
                let name = format!("{tag}.bin");
                let body = multipart(BOUNDARY, &[("file", Some(&name), None, &bytes)]);
                server
                    .try_request(
                        "POST",
                        &format!("/workspaces/{}/jobs/{}/files", ids.workspace, ids.job),
                        Some(&key),
                        &[(
                            "Content-Type",
                            &format!("multipart/form-data; boundary={BOUNDARY}"),
                        )],
                        Some(&body),
                    )
                    .map(|r| {
                        if r.status == 201 {
                            acked
                                .lock()
                                .unwrap()
                                .files
                                .insert(r.json()["id"].as_str().unwrap().to_string(), bytes);
                        }
                        r.status
                    })
            }
        };
        match outcome {
            Ok(status) if status < 300 => {}
            Ok(status) => panic!("a write answered {status} before the crash"),
            // The server was killed under us: this write was not acknowledged.
            Err(_) => return,
        }
    }
}

/// Checks every acknowledged write and the change log; returns the number of
/// acknowledged writes and the event ids of every change in the log.
fn verify(server: &Server, key: &str, ids: &Ids, acked: &Acknowledged) -> (usize, HashSet<String>) {
    for (code, body) in &acked.ports {
        let got = server.get(&format!("/api/rest/1.0/ports/{code}"), key);
        assert_eq!(got.status, 200, "acknowledged port {code} is missing");
        assert_eq!(got.json()["name"], body["name"], "{code}");
        assert_eq!(
            got.json()["generalComments"],
            body["generalComments"],
            "{code}"
        );
    }
    for (id, body) in &acked.jobs {
        let got = server.get(&format!("/workspaces/{}/jobs/{id}", ids.workspace), key);
        assert_eq!(got.status, 200, "acknowledged job {id} is missing");
        assert_eq!(&got.json(), body, "job {id}");
    }
    for (id, body) in &acked.quality {
        let got = server.get(
            &format!(
                "/workspaces/{}/jobs/{}/quality/{id}",
                ids.workspace, ids.job
            ),
            key,
        );
        assert_eq!(
            got.status, 200,
            "acknowledged quality result {id} is missing"
        );
        assert_eq!(&got.json()[0]["body"], body, "quality {id}");
    }
    for (id, bytes) in &acked.files {
        let got = server.get(
            &format!(
                "/workspaces/{}/jobs/{}/files/{id}/content",
                ids.workspace, ids.job
            ),
            key,
        );
        assert_eq!(got.status, 200, "acknowledged file {id} is missing");
        assert!(got.body == *bytes, "file {id} differs after the crash");
    }
    let events = verify_change_log(server, key, ids, acked);
    (
        acked.ports.len() + acked.jobs.len() + acked.quality.len() + acked.files.len(),
        events,
    )
}

/// The change log after a crash: every acknowledged write has its entry,
/// exactly once, and every entry's record was committed (writes that were
/// committed but not acknowledged before the kill may have entries too: their
/// records must then exist).
fn verify_change_log(
    server: &Server,
    key: &str,
    ids: &Ids,
    acked: &Acknowledged,
) -> HashSet<String> {
    let mut created: HashMap<(String, String), usize> = HashMap::new();
    let mut events = HashSet::new();
    let mut cursor = 0;
    let mut last = 0;
    loop {
        let reply = server.get(&format!("/v2/changes?since={cursor}&limit=1000"), key);
        assert_eq!(reply.status, 200, "{}", reply.text());
        let body = reply.json();
        let changes = body["changes"].as_array().unwrap();
        for change in changes {
            let seq = change["seq"].as_u64().unwrap();
            assert!(seq > last, "change {seq} after {last}");
            last = seq;
            events.insert(change["event_id"].as_str().unwrap().to_string());
            let kind = change["type"].as_str().unwrap();
            if let Some(entity) = kind.strip_suffix(".created") {
                let id = change["entity_id"].as_str().unwrap().to_string();
                *created.entry((entity.to_string(), id)).or_default() += 1;
            }
        }
        cursor = body["next"].as_u64().unwrap();
        if changes.is_empty() {
            break;
        }
    }
    let mut expect = |entity: &str, id: &String| {
        let count = created.remove(&(entity.to_string(), id.clone()));
        assert_eq!(
            count,
            Some(1),
            "acknowledged {entity} {id}: {count:?} change entries"
        );
    };
    acked.ports.keys().for_each(|code| expect("port", code));
    acked.jobs.keys().for_each(|id| expect("job", id));
    acked
        .quality
        .keys()
        .for_each(|id| expect("qualityResult", id));
    acked.files.keys().for_each(|id| expect("attachment", id));
    for ((entity, id), count) in created {
        assert_eq!(count, 1, "{entity} {id} created {count} times");
        let path = match entity.as_str() {
            "port" => format!("/api/rest/1.0/ports/{id}"),
            "job" => format!("/workspaces/{}/jobs/{id}", ids.workspace),
            "qualityResult" => format!(
                "/workspaces/{}/jobs/{}/quality/{id}",
                ids.workspace, ids.job
            ),
            "attachment" => format!("/workspaces/{}/jobs/{}/files/{id}", ids.workspace, ids.job),
            _ => continue,
        };
        let got = server.get(&path, key);
        assert_eq!(got.status, 200, "{entity} {id} has a change but no record");
    }
    events
}

#[test]
fn acknowledged_writes_survive_sigkill_at_random_moments() {
    let points: usize = std::env::var("QUAYSIDE_CRASH_POINTS")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("crash.db");
    let acked = Arc::new(Mutex::new(Acknowledged::default()));
    let mut rng = Rng(0xC0FFEE);
    let mut ids = None;
    let mut survived = 0;
    // A webhook receives every change, across every kill and restart.
    let receiver = Receiver::accepting();
    for round in 0..points {
        let server = Arc::new(Server::spawn(&data, FAST));
        let key = server.admin_key();
        if let Some(ids) = &ids {
            verify(&server, &key, ids, &acked.lock().unwrap());
            survived += 1;
        }
        let run_ids = Arc::new(match ids.take() {
            Some(ids) => ids,
            None => {
                create(&server, &key, json!({"url": receiver.url()}));
                setup(&server, &key)
            }
        });
        let stop = Arc::new(AtomicBool::new(false));
        let lanes: Vec<_> = (0..4)
            .map(|lane| {
                let (server, key, ids, stop, acked) = (
                    server.clone(),
                    key.clone(),
                    run_ids.clone(),
                    stop.clone(),
                    acked.clone(),
                );
                std::thread::spawn(move || writer(server, key, ids, round, lane, stop, acked))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50 + rng.below(400)));
        // SIGKILL while the writers are mid-flight.
        server.kill_by_pid();
        stop.store(true, Ordering::Relaxed);
        for lane in lanes {
            lane.join().unwrap();
        }
        drop(server);
        ids = Some(Arc::try_unwrap(run_ids).unwrap_or_else(|_| panic!("ids still shared")));
    }
    let server = Server::spawn(&data, FAST);
    let key = server.admin_key();
    let (total, events) = verify(&server, &key, ids.as_ref().unwrap(), &acked.lock().unwrap());
    survived += 1;
    // Every change of the log reaches the webhook at least once.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let delivered: HashSet<String> = receiver
            .received()
            .iter()
            .map(|r| r.json()["event_id"].as_str().unwrap().to_string())
            .collect();
        let missing = events.difference(&delivered).count();
        if missing == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{missing} of {} changes never reached the webhook",
            events.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(server);
    let check = run_cli(&data, &["check"], None);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    eprintln!(
        "crash safety: {survived} kill points survived, {total} acknowledged writes all present"
    );
}
