//! The change log and its feeds: completeness and order under concurrent
//! writers, long-poll, Server-Sent Events with resume, retention's 410, what
//! each tenant may see, and what an entry holds.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Server, UNLOCODE_SAMPLE, id, workspace_with_job};

fn page(server: &Server, path: &str, key: &str) -> Value {
    let reply = server.get(path, key);
    assert_eq!(reply.status, 200, "{path}: {}", reply.text());
    reply.json()
}

fn with_query(path: &str, query: &str) -> String {
    let joiner = if path.contains('?') { '&' } else { '?' };
    format!("{path}{joiner}{query}")
}

/// Every change of a feed after `since`, page by page, until a page is empty.
fn read_all(server: &Server, feed: &str, key: &str, since: u64) -> (Vec<Value>, u64) {
    let mut cursor = since;
    let mut out = Vec::new();
    loop {
        let body = page(
            server,
            &with_query(feed, &format!("since={cursor}&limit=1000")),
            key,
        );
        let changes = body["changes"].as_array().unwrap().clone();
        let next = body["next"].as_u64().unwrap();
        assert!(
            next >= cursor,
            "the cursor went back from {cursor} to {next}"
        );
        cursor = next;
        if changes.is_empty() {
            return (out, cursor);
        }
        out.extend(changes);
    }
}

fn quality_body(n: usize) -> Value {
    json!({"status": "preliminary", "setNumber": n, "sample": {"location": format!("S{n}")},
        "test": {"xref": "DEN", "name": "Density"}, "method": {"name": "D4052"},
        "uom": {"name": "kg/m3"}, "result": format!("{}", 800 + n)})
}

#[test]
fn under_eight_concurrent_writers_every_acknowledged_write_appears_once_in_commit_order() {
    let server = Arc::new(Server::start());
    let key = server.admin_key();
    let (ws, job) = workspace_with_job(&server, &key, "Feed Co", None);
    let start = page(&server, "/v2/changes?since=now", &key)["next"]
        .as_u64()
        .unwrap();

    // A reader follows the feed while the writers write: once it has seen a
    // sequence, it never finds a lower one.
    let done = Arc::new(AtomicBool::new(false));
    let followed = {
        let (server, key, done) = (server.clone(), key.clone(), done.clone());
        std::thread::spawn(move || {
            let mut cursor = start;
            let mut last_seen = start;
            let mut seen = Vec::new();
            loop {
                let finished = done.load(Ordering::SeqCst);
                let body = page(
                    &server,
                    &format!("/v2/changes?since={cursor}&limit=50"),
                    &key,
                );
                let changes = body["changes"].as_array().unwrap();
                for change in changes {
                    let seq = change["seq"].as_u64().unwrap();
                    assert!(seq > last_seen, "saw {seq} after {last_seen}");
                    last_seen = seq;
                    seen.push(change.clone());
                }
                cursor = body["next"].as_u64().unwrap();
                assert!(cursor >= last_seen);
                if finished && changes.is_empty() {
                    return seen;
                }
            }
        })
    };

    // Eight writers: ports on even lanes, quality results on odd ones. Each
    // lane's writes are sequential, so each is committed before the next.
    let acked: Arc<Mutex<Vec<(usize, usize, String)>>> = Arc::default();
    let writers: Vec<_> = (0..8)
        .map(|lane| {
            let (server, key, ws, job, acked) = (
                server.clone(),
                key.clone(),
                ws.clone(),
                job.clone(),
                acked.clone(),
            );
            std::thread::spawn(move || {
                for n in 0..25 {
                    let entity = if lane % 2 == 0 {
                        let code = format!("W{lane}N{n}");
                        let reply = server.put(
                            &format!("/api/rest/1.0/ports/{code}"),
                            &key,
                            &json!({"name": format!("Port {code}")}),
                        );
                        assert_eq!(reply.status, 201, "{}", reply.text());
                        code
                    } else {
                        id(&server.post(
                            &format!("/workspaces/{ws}/jobs/{job}/quality"),
                            &key,
                            &quality_body(lane * 100 + n),
                        ))
                    };
                    acked.lock().unwrap().push((lane, n, entity));
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let followed = followed.join().unwrap();

    let (all, _) = read_all(&server, "/v2/changes", &key, start);
    let seqs: Vec<u64> = all.iter().map(|c| c["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "not in sequence order"
    );
    assert_eq!(
        followed
            .iter()
            .map(|c| c["seq"].clone())
            .collect::<Vec<_>>(),
        all.iter().map(|c| c["seq"].clone()).collect::<Vec<_>>(),
        "the reader that followed the writes saw the same log"
    );
    let mut created: HashMap<String, Vec<u64>> = HashMap::new();
    for change in &all {
        let kind = change["type"].as_str().unwrap();
        if kind == "port.created" || kind == "qualityResult.created" {
            created
                .entry(change["entity_id"].as_str().unwrap().to_string())
                .or_default()
                .push(change["seq"].as_u64().unwrap());
        }
    }
    let acked = acked.lock().unwrap();
    assert_eq!(acked.len(), 200);
    let mut lanes: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for (lane, _, entity) in acked.iter() {
        let found = created
            .get(entity)
            .unwrap_or_else(|| panic!("acknowledged write {entity} has no change"));
        assert_eq!(found.len(), 1, "{entity} appears {} times", found.len());
        lanes.entry(*lane).or_default().push(found[0]);
    }
    assert_eq!(created.len(), 200, "a change without an acknowledged write");
    for (lane, seqs) in lanes {
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "lane {lane}: a later write got an earlier sequence: {seqs:?}"
        );
    }
    // The workspace feed holds exactly the workspace's share, in order.
    let (mine, _) = read_all(
        &server,
        &format!("/v2/workspaces/{ws}/changes"),
        &key,
        start,
    );
    assert!(mine.iter().all(|c| c["workspace_id"] == ws.as_str()));
    assert_eq!(
        mine.iter()
            .filter(|c| c["type"] == "qualityResult.created")
            .count(),
        100
    );
    // On PostgreSQL these writes' notes are checked after later writes ran
    // (`changes::capture::defer`): an everyday write must pass the check,
    // or every batch would run twice. The log, complete once the server
    // has stopped, says so when one does.
    let mut server = Arc::try_unwrap(server)
        .ok()
        .expect("the threads are done with the server");
    server.stop();
    let log = server.log_text();
    assert!(
        !log.contains("running a batch again"),
        "a batch of everyday writes ran again: {}",
        log.lines()
            .find(|line| line.contains("running a batch again"))
            .unwrap_or_default()
    );
}

#[test]
fn a_long_poll_answers_within_100_ms_of_the_commit() {
    let server = Server::start();
    let key = server.admin_key();
    crate::common::assert_long_poll_answers_within_100_ms(&server, &server, &key);
}

#[test]
fn a_long_poll_with_nothing_new_answers_an_empty_page_at_its_deadline() {
    let server = Server::start();
    let key = server.admin_key();
    let started = Instant::now();
    let body = page(&server, "/api/rest/1.0/changes?since=now&wait=1", &key);
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_eq!(body["changes"], json!([]));
    assert_eq!(body["next"], 0);
    server
        .get("/api/rest/1.0/changes?wait=61", &key)
        .assert_error(400, "invalid_query");
}

#[test]
fn a_live_stream_resumed_from_last_event_id_loses_and_repeats_nothing() {
    let server = Server::start();
    let key = server.admin_key();
    let put = |code: &str| {
        let reply = server.put(
            &format!("/api/rest/1.0/ports/{code}"),
            &key,
            &json!({"name": format!("Port {code}")}),
        );
        assert_eq!(reply.status, 201);
    };
    for n in 0..10 {
        put(&format!("SA{n}"));
    }
    let (status, mut events) = server.events("/api/rest/1.0/changes?since=0", &key, None);
    assert_eq!(status, 200);
    let mut seen: Vec<(u64, String)> = Vec::new();
    for _ in 0..6 {
        let event = events.next_event().expect("an event");
        let change = event.json();
        assert_eq!(
            event.id.as_deref(),
            Some(change["seq"].to_string().as_str())
        );
        assert_eq!(event.event.as_deref(), change["type"].as_str());
        seen.push((
            change["seq"].as_u64().unwrap(),
            change["entity_id"].as_str().unwrap().to_string(),
        ));
    }
    // The client goes away mid-stream; changes go on.
    drop(events);
    for n in 10..15 {
        put(&format!("SA{n}"));
    }
    let last = seen.last().unwrap().0;
    let (status, mut events) = server.events("/api/rest/1.0/changes", &key, Some(last));
    assert_eq!(status, 200);
    // Live: a change committed while the stream is open arrives too.
    let mut live_put = false;
    while seen.len() < 16 {
        if seen.len() == 15 && !live_put {
            put("SA15");
            live_put = true;
        }
        let event = events.next_event().expect("an event");
        let change = event.json();
        seen.push((
            change["seq"].as_u64().unwrap(),
            change["entity_id"].as_str().unwrap().to_string(),
        ));
    }
    let codes: Vec<String> = seen.iter().map(|(_, code)| code.clone()).collect();
    let expected: Vec<String> = (0..16).map(|n| format!("SA{n}")).collect();
    assert_eq!(codes, expected, "lost or repeated events");
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn a_live_stream_ends_cleanly_when_the_server_shuts_down() {
    let mut server = Server::start();
    let key = server.admin_key();
    let (status, mut events) = server.events("/api/rest/1.0/changes?since=now", &key, None);
    assert_eq!(status, 200);
    assert!(events.read_until_line(|line| line == ": connected"));
    let stopping = std::thread::spawn(move || {
        let status = server.stop();
        (server, status)
    });
    // The stream says goodbye and ends, well before the shutdown grace ends.
    assert!(events.read_until_line(|line| line.contains("shutting down")));
    assert!(
        !events.read_until_line(|line| !line.is_empty()),
        "the stream ended"
    );
    let (_server, status) = stopping.join().unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_cursor_trimmed_by_retention_answers_410_and_next_continues() {
    let server = Server::start_with(&[
        "--changes-retention-secs",
        "1",
        "--changes-trim-every-ms",
        "100",
    ]);
    let key = server.admin_key();
    for n in 0..3 {
        let reply = server.put(
            &format!("/api/rest/1.0/ports/RT{n}"),
            &key,
            &json!({"name": "Retained"}),
        );
        assert_eq!(reply.status, 201);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let expired = loop {
        let reply = server.get("/api/rest/1.0/changes?since=0", &key);
        if reply.status == 410 {
            break reply;
        }
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert!(Instant::now() < deadline, "retention never trimmed the log");
        std::thread::sleep(Duration::from_millis(50));
    };
    expired.assert_error(410, "cursor_expired");
    let error = &expired.json()["error"];
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("list the records again"),
        "{error}"
    );
    let next = error["next"].as_u64().expect("next");
    assert!(next >= 3, "{error}");
    // Listing again, then continuing from `next`, misses nothing.
    let reply = server.put("/api/rest/1.0/ports/RT9", &key, &json!({"name": "After"}));
    assert_eq!(reply.status, 201);
    let body = page(
        &server,
        &format!("/api/rest/1.0/changes?since={next}"),
        &key,
    );
    assert_eq!(body["changes"][0]["entity_id"], "RT9");
    // A cursor ahead of the log (a restored copy of the file) is refused too.
    server
        .get("/api/rest/1.0/changes?since=999999", &key)
        .assert_error(410, "cursor_expired");
}

#[test]
fn a_tenant_sees_its_own_changes_and_never_another_tenant_s() {
    let server = Server::start();
    let owner = server.add_user("owner", &[]);
    let stranger = server.add_user("stranger", &[]);
    let (ws, job) = workspace_with_job(&server, &owner, "Owner Co", None);
    let quality = id(&server.post(
        &format!("/workspaces/{ws}/jobs/{job}/quality"),
        &owner,
        &quality_body(1),
    ));
    let (theirs, _) = workspace_with_job(&server, &stranger, "Stranger Co", None);

    // The workspace feed of a foreign workspace is a 404, polled or streamed.
    server
        .get(&format!("/v2/workspaces/{ws}/changes"), &stranger)
        .assert_error(404, "not_found");
    let (status, _) = server.events(&format!("/v2/workspaces/{ws}/changes"), &stranger, None);
    assert_eq!(status, 404);

    // The global feed shows each tenant its own workspaces' records only.
    let (mine, _) = read_all(&server, "/v2/changes", &owner, 0);
    let (foreign, _) = read_all(&server, "/v2/changes", &stranger, 0);
    assert!(mine.iter().any(|c| c["entity_id"] == quality.as_str()));
    assert!(mine.iter().all(|c| c["workspace_id"] != theirs.as_str()));
    assert!(
        foreign.iter().all(|c| c["workspace_id"] != ws.as_str()),
        "a foreign change reached the stranger"
    );
    assert!(foreign.iter().any(|c| c["workspace_id"] == theirs.as_str()));
    // Organizations are readable by everyone signed in, and so are their changes.
    assert!(
        foreign
            .iter()
            .any(|c| c["type"] == "organization.created" && c["actor"] == "owner")
    );
    // An admin sees everything.
    let (all, _) = read_all(&server, "/v2/changes", &server.admin_key(), 0);
    assert!(all.iter().any(|c| c["workspace_id"] == ws.as_str()));
    assert!(all.iter().any(|c| c["workspace_id"] == theirs.as_str()));
}

#[test]
fn each_change_says_what_happened_to_which_record_by_whom() {
    let server = Server::start();
    let key = server.add_user("inspector", &[]);
    let (ws, job) = workspace_with_job(&server, &key, "Says Co", None);
    let feed = format!("/v2/workspaces/{ws}/changes");
    let (_, start) = read_all(&server, &feed, &key, 0);

    let quality = id(&server.post(
        &format!("/workspaces/{ws}/jobs/{job}/quality"),
        &key,
        &quality_body(7),
    ));
    let patched = server.patch(
        &format!("/workspaces/{ws}/jobs/{job}/quality/{quality}"),
        &key,
        &json!({"result": "999"}),
    );
    assert!(patched.status < 300, "{}", patched.text());
    let deleted = server.delete(
        &format!("/workspaces/{ws}/jobs/{job}/quality/{quality}"),
        &key,
    );
    assert!(deleted.status < 300, "{}", deleted.text());
    // A refused write leaves no change behind.
    let refused = server.post(
        &format!("/workspaces/{ws}/jobs/{job}/quality"),
        &key,
        &json!({"status": "not-a-status"}),
    );
    assert_eq!(refused.status, 400);

    let (changes, _) = read_all(&server, &feed, &key, start);
    let of_quality: Vec<&Value> = changes
        .iter()
        .filter(|c| c["entity_id"] == quality.as_str())
        .collect();
    let types: Vec<&str> = of_quality
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "qualityResult.created",
            "qualityResult.updated",
            "qualityResult.deleted"
        ]
    );
    for change in &of_quality {
        assert_eq!(change["actor"], "inspector");
        assert_eq!(change["workspace_id"], ws.as_str());
        assert_eq!(change["entity_type"], "svc.inspection.qualityResult");
        assert_eq!(change["record"]["type"], "svc.inspection.qualityResult");
        assert_eq!(change["record"]["id"], quality.as_str());
        assert!(change["event_id"].as_str().unwrap().len() == 36);
        assert!(change["occurred_at"].as_str().unwrap().ends_with('Z'));
    }
    assert_eq!(of_quality[1]["record"]["body"]["result"], "999");
    // References are shown expanded, as GET shows them.
    assert_eq!(of_quality[0]["record"]["body"]["test"]["name"], "Density");
    // A delete carries the record as it last was.
    assert_eq!(of_quality[2]["record"]["body"]["result"], "999");
    // A change has exactly the fields the OpenAPI document's `Change` names.
    let schema = page(&server, "/openapi.json", &key)["components"]["schemas"]["Change"].clone();
    let mut documented: Vec<&str> = schema["properties"]
        .as_object()
        .expect("Change properties")
        .keys()
        .map(String::as_str)
        .collect();
    let mut sent: Vec<&str> = of_quality[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    documented.sort();
    sent.sort();
    assert_eq!(sent, documented);
    let event_ids: HashSet<&str> = changes
        .iter()
        .map(|c| c["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(event_ids.len(), changes.len(), "event ids are unique");

    // `types` filters; a status change of a location is its own event.
    let admin = server.admin_key();
    let put = server.put(
        "/api/rest/1.0/ports/NLRTM",
        &admin,
        &json!({"name": "Rotterdam"}),
    );
    assert_eq!(put.status, 201);
    assert!(server.delete("/api/rest/1.0/ports/NLRTM", &admin).status < 300);
    assert!(server.delete("/api/rest/1.0/ports/NLRTM", &admin).status < 300);
    let body = page(
        &server,
        "/api/rest/1.0/changes?types=port.deactivated,port.deleted",
        &admin,
    );
    let types: Vec<&str> = body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["port.deactivated", "port.deleted"]);
    assert_eq!(
        body["changes"][1]["record"]["body"]["statusCode"],
        "INACTIVE"
    );
    let only_jobs = page(&server, &with_query(&feed, "types=job.*"), &key);
    assert!(
        only_jobs["changes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["type"].as_str().unwrap().starts_with("job."))
    );
    server
        .get(&with_query(&feed, "types=job.exploded"), &key)
        .assert_error(400, "invalid_query");
    server
        .get(&with_query(&feed, "since=-1"), &key)
        .assert_error(400, "invalid_query");
    server
        .get(&with_query(&feed, "limit=1001"), &key)
        .assert_error(400, "invalid_query");
    server
        .get(&with_query(&feed, "colour=red"), &key)
        .assert_error(400, "invalid_query");
}

#[test]
fn an_import_by_the_cli_appears_in_the_feed_and_wakes_a_long_poll() {
    let server = Arc::new(Server::start());
    let key = server.admin_key();
    let cursor = page(&server, "/api/rest/1.0/changes?since=now", &key)["next"]
        .as_u64()
        .unwrap();
    let waiting = {
        let (server, key) = (server.clone(), key.clone());
        std::thread::spawn(move || {
            server.get(
                &format!("/api/rest/1.0/changes?since={cursor}&wait=30&types=port.created"),
                &key,
            )
        })
    };
    let out = server.cli(&["import-unlocode", UNLOCODE_SAMPLE], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply = waiting.join().unwrap();
    assert_eq!(reply.status, 200);
    let body = reply.json();
    let first = &body["changes"][0];
    assert_eq!(first["type"], "port.created");
    assert_eq!(first["actor"], "unlocode-import");
    let (all, _) = read_all(&server, "/api/rest/1.0/changes", &key, cursor);
    let total = page(&server, "/api/rest/1.0/ports", &key)["totalResultsAvailable"]
        .as_u64()
        .unwrap() as usize;
    assert!(total > 0);
    assert_eq!(
        all.iter().filter(|c| c["type"] == "port.created").count(),
        total,
        "one port.created per imported port"
    );
}

/// A live stream opened behind more changes than its first page holds (here
/// written by the CLI, which wakes no watch of the server) sends them all at
/// once, not a first page and then nothing until the next commit.
#[test]
fn a_stream_behind_more_than_a_page_sends_everything_at_once() {
    let server = Server::start_with(&["--changes-heartbeat-ms", "300"]);
    let key = server.admin_key();
    let cursor = page(&server, "/api/rest/1.0/changes?since=now", &key)["next"]
        .as_u64()
        .unwrap();
    let out = server.cli(&["import-unlocode", UNLOCODE_SAMPLE], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (all, _) = read_all(&server, "/api/rest/1.0/changes", &key, cursor);
    assert!(all.len() > 100, "more than a first page: {}", all.len());
    let (status, mut events) = server.events(
        &format!("/api/rest/1.0/changes?since={cursor}&limit=100"),
        &key,
        None,
    );
    assert_eq!(status, 200);
    // Every event, or five heartbeats (1.5 s) of nothing else.
    let (ids, beats) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    events.read_until_line(|line| {
        if line.starts_with("id: ") {
            ids.set(ids.get() + 1);
        } else if line == ": heartbeat" {
            beats.set(beats.get() + 1);
        }
        ids.get() == all.len() || beats.get() >= 5
    });
    assert_eq!(ids.get(), all.len(), "{} heartbeats first", beats.get());
}

#[test]
fn an_idle_stream_beats_and_ends_when_its_session_ends() {
    let server = Server::start_with(&["--changes-heartbeat-ms", "200"]);
    let key = server.admin_key();
    let (status, mut events) = server.events("/api/rest/1.0/changes?since=now", &key, None);
    assert_eq!(status, 200);
    assert!(events.read_until_line(|line| line == ": heartbeat"));
    let logout = server.delete("/api/rest/1.0/sessions/admin", &key);
    assert!(logout.status < 300, "{}", logout.text());
    assert!(events.read_until_line(|line| line == ": session ended"));
    assert!(
        !events.read_until_line(|line| !line.is_empty()),
        "the stream ended"
    );
}

#[test]
fn a_renamed_catalog_item_shows_its_new_name_in_the_next_change_of_a_document() {
    let server = Server::start();
    let key = server.admin_key();
    let (ws, job) = workspace_with_job(&server, &key, "Rename Co", None);
    let path = format!("/workspaces/{ws}/jobs/{job}/quality");
    let quality = id(&server.post(&path, &key, &quality_body(1)));
    let feed = format!("/v2/workspaces/{ws}/changes?types=qualityResult.*,catalogItem.*");
    let (before, start) = read_all(&server, &feed, &key, 0);
    let created = before
        .iter()
        .find(|c| c["type"] == "qualityResult.created")
        .unwrap();
    let test = created["record"]["body"]["test"]["id"].as_str().unwrap();
    assert_eq!(created["record"]["body"]["test"]["name"], "Density");
    let renamed = server.patch(
        &format!("/workspaces/{ws}/catalogs/tests/{test}"),
        &key,
        &json!({"name": "Density at 15 C"}),
    );
    assert!(renamed.status < 300, "{}", renamed.text());
    let patched = server.patch(
        &format!("{path}/{quality}"),
        &key,
        &json!({"result": "999"}),
    );
    assert!(patched.status < 300, "{}", patched.text());
    let (after, _) = read_all(&server, &feed, &key, start);
    let types: Vec<&str> = after.iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["catalogItem.updated", "qualityResult.updated"]);
    assert_eq!(after[0]["record"]["body"]["name"], "Density at 15 C");
    assert_eq!(
        after[1]["record"]["body"]["test"]["name"], "Density at 15 C",
        "the change shows the item as it is now"
    );
}

#[test]
fn a_deleted_attachment_carries_its_last_envelope_with_its_size_and_digest() {
    let server = Server::start();
    let key = server.admin_key();
    let (ws, job) = workspace_with_job(&server, &key, "Files Co", None);
    let files = format!("/workspaces/{ws}/jobs/{job}/files");
    let bytes = b"survey report, page one".to_vec();
    let body = crate::common::multipart("b0undary", &[("file", Some("survey.txt"), None, &bytes)]);
    let file = id(&server.post_multipart(&files, Some(&key), "b0undary", &body));
    let deleted = server.delete(&format!("{files}/{file}"), &key);
    assert!(deleted.status < 300, "{}", deleted.text());
    let (changes, _) = read_all(
        &server,
        &format!("/v2/workspaces/{ws}/changes?types=attachment.*"),
        &key,
        0,
    );
    let types: Vec<&str> = changes
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["attachment.created", "attachment.deleted"]);
    assert_eq!(changes[0]["entity_id"], file.as_str());
    assert_eq!(changes[0]["record"], changes[1]["record"]);
    assert_eq!(
        changes[1]["record"]["type"], "svc.hub.attachment",
        "{}",
        changes[1]
    );
    let text = changes[1]["record"].to_string();
    assert!(text.contains(&bytes.len().to_string()), "size: {text}");
}
