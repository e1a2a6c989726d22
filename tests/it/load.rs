//! Load: many concurrent connections of mixed reads and writes against one
//! file. No 5xx, no "database is locked", and afterwards every acknowledged
//! write is present.
//!
//! The suite runs a short version; `bench/load` runs 200 connections for 60 s
//! against the release binary (`QUAYSIDE_LOAD_CONNECTIONS`, `QUAYSIDE_LOAD_SECS`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{Server, workspace_with_job};
use serde_json::json;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Default)]
struct Tally {
    statuses: BTreeMap<u16, u64>,
    transport_errors: u64,
    ports: Vec<(String, String)>,
    timelogs: Vec<String>,
}

#[test]
fn mixed_load_has_no_server_errors_and_loses_nothing() {
    let connections = env_or("QUAYSIDE_LOAD_CONNECTIONS", 32) as usize;
    let seconds = env_or("QUAYSIDE_LOAD_SECS", 3);
    let server = Arc::new(Server::start());
    let key = server.admin_key();
    let (ws, job) = workspace_with_job(&server, &key, "Load Co", None);
    for i in 0..50 {
        let reply = server.put(
            &format!("/api/rest/1.0/ports/SEED{i}"),
            &key,
            &json!({"name": format!("Seed {i}"), "countryCode": "NL"}),
        );
        assert_eq!(reply.status, 201);
    }

    let tally = Arc::new(Mutex::new(Tally::default()));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let workers: Vec<_> = (0..connections)
        .map(|lane| {
            let (server, key, ws, job, tally) = (server.clone(), key.clone(), ws.clone(), job.clone(), tally.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                let mut local = Tally::default();
                while Instant::now() < deadline {
                    n += 1;
                    let result = match (lane as u64 + n) % 6 {
                        0 => server.try_request("GET", &format!("/api/rest/1.0/ports/SEED{}", n % 50), Some(&key), &[], None),
                        1 => server.try_request("GET", "/api/rest/1.0/ports?countryCode=NL&resultsPerPage=50", Some(&key), &[], None),
                        2 => server.try_request("GET", &format!("/workspaces/{ws}/jobs/{job}/timelog?limit=20"), Some(&key), &[], None),
                        3 | 4 => {
                            let code = format!("L{lane}N{n}");
                            let comment = format!("load {lane} {n}");
                            let body = json!({"name": code, "generalComments": comment});
                            let reply = server.try_request(
                                "PUT",
                                &format!("/api/rest/1.0/ports/{code}"),
                                Some(&key),
                                &[("Content-Type", "application/json")],
                                Some(body.to_string().as_bytes()),
                            );
                            if reply.as_ref().is_ok_and(|r| r.status == 201) {
                                local.ports.push((code, comment));
                            }
                            reply
                        }
                        _ => {
                            let body = json!({"type": {"xref": "EV", "name": "Event"}, "category": "event",
                                "start": "2026-11-21T08:00:00Z", "notes": format!("{lane}-{n}")});
                            let reply = server.try_request(
                                "POST",
                                &format!("/workspaces/{ws}/jobs/{job}/timelog"),
                                Some(&key),
                                &[("Content-Type", "application/json")],
                                Some(body.to_string().as_bytes()),
                            );
                            if let Ok(r) = &reply {
                                if r.status == 201 {
                                    local.timelogs.push(r.json()["id"].as_str().unwrap().to_string());
                                }
                            }
                            reply
                        }
                    };
                    match result {
                        Ok(reply) => *local.statuses.entry(reply.status).or_default() += 1,
                        Err(_) => local.transport_errors += 1,
                    }
                }
                let mut tally = tally.lock().unwrap();
                for (status, count) in local.statuses {
                    *tally.statuses.entry(status).or_default() += count;
                }
                tally.transport_errors += local.transport_errors;
                tally.ports.extend(local.ports);
                tally.timelogs.extend(local.timelogs);
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let tally = tally.lock().unwrap();
    let served: u64 = tally.statuses.values().sum();
    let server_errors: u64 = tally
        .statuses
        .iter()
        .filter(|(s, _)| **s >= 500)
        .map(|(_, c)| c)
        .sum();
    let client_errors: u64 = tally
        .statuses
        .iter()
        .filter(|(s, _)| (400..500).contains(*s))
        .map(|(_, c)| c)
        .sum();
    assert_eq!(server_errors, 0, "5xx under load: {:?}", tally.statuses);
    assert_eq!(client_errors, 0, "4xx under load: {:?}", tally.statuses);
    assert_eq!(tally.transport_errors, 0, "connections failed under load");
    let log = server.log_text();
    assert!(
        !log.contains("database is locked"),
        "SQLite reported a locked database"
    );

    // Every acknowledged write is there, as acknowledged.
    for (code, comment) in &tally.ports {
        let reply = server.get(&format!("/api/rest/1.0/ports/{code}"), &key);
        assert_eq!(reply.status, 200, "acknowledged port {code} missing");
        assert_eq!(reply.json()["generalComments"], comment.as_str());
    }
    let listed = server.get(
        &format!("/workspaces/{ws}/jobs/{job}/timelog?limit=1"),
        &key,
    );
    // Totals are exact up to 1,000 (a fast machine writes more than that).
    let written = tally.timelogs.len();
    assert_eq!(
        listed.header("x-total-count"),
        Some(written.min(1000).to_string().as_str())
    );
    assert_eq!(
        listed.header("x-total-count-capped"),
        (written > 1000).then_some("true")
    );
    eprintln!(
        "load: {connections} connections for {seconds}s, {served} requests served ({:.0}/s), \
         {} writes acknowledged and found again, 0 server errors, 0 locked",
        served as f64 / seconds as f64,
        tally.ports.len() + tally.timelogs.len()
    );
}
