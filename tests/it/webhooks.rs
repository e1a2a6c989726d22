//! Webhooks over real HTTP: the server delivers to receivers this test runs on
//! 127.0.0.1 (so the servers run with `--webhook-allow-private`, except where
//! the refusal itself is tested), with retries shortened by the hidden flags.
//! Every wait polls for the state it asserts, with a deadline.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Server, id, wait_for, workspace_with_job};

/// Flags of a server whose webhooks may reach this test's receivers, and retry fast.
pub(crate) const FAST: &[&str] = &[
    "--webhook-allow-private",
    "--webhook-retry-base-ms",
    "50",
    "--webhook-retry-max-secs",
    "60",
];

pub(crate) fn start(extra: &[&str]) -> Server {
    let mut flags = FAST.to_vec();
    flags.extend_from_slice(extra);
    Server::start_with(&flags)
}

// ---------------------------------------------------------------------------
// A receiver

/// What a receiver answers one request.
#[derive(Clone, Copy)]
pub(crate) enum Answer {
    Status(u16),
    /// Waits, then answers 200.
    Slow(Duration),
}

/// One request a receiver got.
#[derive(Clone)]
pub(crate) struct Received {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map_or("", |(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON change")
    }

    fn seq(&self) -> u64 {
        self.json()["seq"].as_u64().expect("seq")
    }
}

type Script = Box<dyn FnMut(usize) -> Answer + Send>;

/// An HTTP (or, with a TLS config, https) receiver on 127.0.0.1: records every
/// request, and answers the n-th (from 0) as its script says.
pub(crate) struct Receiver {
    address: SocketAddr,
    https: bool,
    got: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<Script>>,
    stop: Arc<AtomicBool>,
}

impl Receiver {
    pub(crate) fn start(script: impl FnMut(usize) -> Answer + Send + 'static) -> Receiver {
        Receiver::on(TcpListener::bind("127.0.0.1:0").unwrap(), None, script)
    }

    pub(crate) fn accepting() -> Receiver {
        Receiver::start(|_| Answer::Status(200))
    }

    fn on(
        listener: TcpListener,
        tls: Option<Arc<rustls::ServerConfig>>,
        script: impl FnMut(usize) -> Answer + Send + 'static,
    ) -> Receiver {
        let receiver = Receiver {
            address: listener.local_addr().unwrap(),
            https: tls.is_some(),
            got: Arc::default(),
            script: Arc::new(Mutex::new(Box::new(script))),
            stop: Arc::default(),
        };
        let (got, script, stop) = (
            receiver.got.clone(),
            receiver.script.clone(),
            receiver.stop.clone(),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (got, script, tls) = (got.clone(), script.clone(), tls.clone());
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    match tls {
                        Some(config) => {
                            let connection = rustls::ServerConnection::new(config).unwrap();
                            serve_one(rustls::StreamOwned::new(connection, stream), &got, &script);
                        }
                        None => serve_one(stream, &got, &script),
                    }
                });
            }
        });
        receiver
    }

    pub(crate) fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}/hook?from=quayside", self.address)
    }

    pub(crate) fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    pub(crate) fn answer(&self, script: impl FnMut(usize) -> Answer + Send + 'static) {
        *self.script.lock().unwrap() = Box::new(script);
    }

    /// Waits until it has received at least `n` requests.
    #[track_caller]
    fn wait_for(&self, n: usize) -> Vec<Received> {
        wait_for(&format!("{n} requests at {}", self.address), 30, || {
            let got = self.received();
            (got.len() >= n).then_some(got)
        })
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(self.address);
    }
}

fn serve_one(mut stream: impl Read + Write, got: &Mutex<Vec<Received>>, script: &Mutex<Script>) {
    let mut reader = BufReader::new(&mut stream);
    let mut headers = Vec::new();
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    drop(reader);
    let answer = {
        let mut got = got.lock().unwrap();
        let answer = (script.lock().unwrap())(got.len());
        got.push(Received { headers, body });
        answer
    };
    let status = match answer {
        Answer::Status(status) => status,
        Answer::Slow(wait) => {
            std::thread::sleep(wait);
            200
        }
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} Whatever\r\nContent-Length: 9\r\nConnection: close\r\n\r\nreceived\n"
    );
    let _ = stream.flush();
}

/// A webhook an admin made reads as an admin (every tenant's workspaces): the
/// other accounts of the admin's tenant may not see or change it, or they
/// could point it at their own server and read what they may not.
#[test]
fn a_webhook_that_reads_as_an_admin_is_the_admins_alone() {
    let server = start(&[]);
    let admin = server.admin_key();
    let colleague = server.add_user("colleague", &["--tenant-of", "admin"]);
    let (hook, _) = create(&server, &admin, json!({"url": "http://127.0.0.1:1/admin"}));
    let (own, _) = create(
        &server,
        &colleague,
        json!({"url": "http://127.0.0.1:1/own"}),
    );
    let path = format!("/v2/webhooks/{hook}");
    server.get(&path, &colleague).assert_error(404, "not_found");
    server
        .patch(
            &path,
            &colleague,
            &json!({"body": {"url": "http://127.0.0.1:2/mine"}}),
        )
        .assert_error(404, "not_found");
    server
        .post(&format!("{path}/rotate-secret"), &colleague, &json!({}))
        .assert_error(404, "not_found");
    server
        .get(&format!("{path}/deliveries"), &colleague)
        .assert_error(404, "not_found");
    server
        .delete(&path, &colleague)
        .assert_error(404, "not_found");
    let listed = |key: &str| -> Vec<String> {
        let reply = server.get("/v2/webhooks", key);
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply
            .json()
            .as_array()
            .expect("a list")
            .iter()
            .map(|h| h["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(listed(&colleague), std::slice::from_ref(&own));
    let mut both = listed(&admin);
    both.sort();
    let mut expected = vec![hook.clone(), own];
    expected.sort();
    assert_eq!(both, expected, "the admin manages both");
    let reply = server.get(&path, &admin);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["body"]["url"], "http://127.0.0.1:1/admin");
}

/// On a data file, the UN/LOCODE import of the command line (another process
/// writing the file, which the server's writer does not see) is delivered
/// without the server having to write anything itself.
#[test]
fn an_import_by_the_cli_is_delivered() {
    let server = start(&[]);
    let key = server.admin_key();
    let receiver = Receiver::start(|_| Answer::Status(200));
    create(
        &server,
        &key,
        json!({"url": receiver.url(), "event_types": ["port.created"]}),
    );
    let out = server.cli(&["import-unlocode", crate::common::UNLOCODE_SAMPLE], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ports = server.get("/api/rest/1.0/ports", &key);
    let total = ports.json()["totalResultsAvailable"].as_u64().unwrap() as usize;
    assert!(total > 0);
    let got = wait_for("every imported port delivered", 60, || {
        let got = receiver.received();
        (got.len() >= total).then_some(got)
    });
    assert_eq!(got.len(), total, "each once");
    assert!(got.iter().all(|r| r.json()["type"] == "port.created"));
}

/// A webhook that only waits (its filter takes none of the changes) is not
/// overtaken by retention: its stored cursor moves past what it skipped well
/// within the retention, so a restart, which forgets what the worker had read
/// past the stored cursor, never finds it before the log's start (a 410
/// there would disable a webhook that missed nothing); nor does a nudge.
#[test]
fn retention_never_disables_a_webhook_that_only_waits() {
    let mut flags = FAST.to_vec();
    flags.extend_from_slice(&[
        "--changes-retention-secs",
        "2",
        "--changes-trim-every-ms",
        "200",
    ]);
    let mut server = Server::start_with(&flags);
    let _dir = server.take_dir();
    let key = server.admin_key();
    let receiver = Receiver::start(|_| Answer::Status(200));
    let (hook, _) = create(
        &server,
        &key,
        json!({"url": receiver.url(), "event_types": ["organization.created"]}),
    );
    // Changes the filter skips; then retention removes them.
    for i in 0..5 {
        let put = server.put(
            &format!("/api/rest/1.0/ports/RT{i}"),
            &key,
            &json!({"name": "Skipped"}),
        );
        assert_eq!(put.status, 201, "{}", put.text());
    }
    wait_for("retention past them", 30, || {
        let reply = server.get("/api/rest/1.0/changes?since=0", &key);
        (reply.status == 410).then_some(())
    });
    server.stop();
    let server = Server::spawn(&server.data, &flags);
    let key = server.login("admin", crate::common::ADMIN_PASSWORD);
    // A new webhook nudges the worker too.
    create(&server, &key, json!({"url": "http://127.0.0.1:1/other"}));
    let org = id(&server.post("/v2/organizations", &key, &json!({"name": "Wanted"})));
    let deadline = Instant::now() + Duration::from_secs(20);
    let got = wait_for("the wanted change delivered", 30, || {
        let got = receiver.received();
        assert!(
            Instant::now() < deadline,
            "{}",
            server.get(&format!("/v2/webhooks/{hook}"), &key).text()
        );
        (!got.is_empty()).then_some(got)
    });
    assert_eq!(got[0].json()["entity_id"], org.as_str());
    let reply = server.get(&format!("/v2/webhooks/{hook}"), &key);
    assert_eq!(reply.json()["body"]["active"], true, "{}", reply.text());
}

// ---------------------------------------------------------------------------
// Helpers

/// Creates a webhook; answers its id and secret.
pub(crate) fn create(server: &Server, key: &str, body: Value) -> (String, String) {
    let reply = server.post("/v2/webhooks", key, &json!({ "body": body }));
    assert_eq!(reply.status, 201, "{}", reply.text());
    let created = reply.json();
    let secret = created["body"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    (id(&reply), secret)
}

fn deliveries(server: &Server, key: &str, webhook: &str) -> Vec<Value> {
    let reply = server.get(
        &format!("/v2/webhooks/{webhook}/deliveries?limit=1000"),
        key,
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json().as_array().unwrap().clone()
}

fn webhook(server: &Server, key: &str, webhook: &str) -> Value {
    let reply = server.get(&format!("/v2/webhooks/{webhook}"), key);
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()
}

fn hmac_hex(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let mut message = format!("{timestamp}.").into_bytes();
    message.extend_from_slice(body);
    ring::hmac::sign(&key, &message)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What a receiver does with `Quayside-Signature`: the timestamp is recent,
/// and one `v1=` is the HMAC of `t.body` with the secret.
fn verifies(received: &Received, secret: &str) -> bool {
    let header = received.header("quayside-signature");
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", t)) => timestamp = Some(t),
            Some(("v1", v)) => signatures.push(v),
            _ => {}
        }
    }
    let Some(timestamp) = timestamp else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let t: i64 = timestamp.parse().unwrap();
    let expected = hmac_hex(secret, timestamp, &received.body);
    (now - t).abs() < 300 && signatures.contains(&expected.as_str())
}

/// Every change the admin's feed holds, by seq.
fn feed_seqs(server: &Server, key: &str) -> Vec<u64> {
    let reply = server.get("/v2/changes?since=0&limit=1000", key);
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["seq"].as_u64().unwrap())
        .collect()
}

// ---------------------------------------------------------------------------
// Tests

#[test]
fn deliveries_are_signed_carry_the_change_and_can_be_redelivered() {
    let server = start(&[]);
    let key = server.admin_key();
    let receiver = Receiver::accepting();
    let (hook, secret) = create(
        &server,
        &key,
        json!({"url": receiver.url(), "description": "all of it"}),
    );
    let (workspace, job) = workspace_with_job(&server, &key, "Signing Co", None);
    let got = receiver.wait_for(3);
    let mut last_seq = 0;
    for received in &got {
        assert!(
            verifies(received, &secret),
            "signature of {}",
            received.header("quayside-signature")
        );
        assert!(!verifies(received, "whsec_wrong"));
        let change = received.json();
        assert_eq!(received.header("quayside-event-id"), change["event_id"]);
        assert_eq!(received.header("content-type"), "application/json");
        assert!(
            received
                .header("user-agent")
                .starts_with("Quayside-Webhooks/")
        );
        assert!(change["seq"].as_u64().unwrap() > last_seq, "in order");
        last_seq = change["seq"].as_u64().unwrap();
        assert_eq!(change["actor"], "admin");
    }
    let changes: Vec<Value> = got.iter().map(Received::json).collect();
    assert_eq!(changes[0]["type"], "organization.created");
    assert_eq!(changes[1]["type"], "workspace.created");
    assert_eq!(changes[1]["entity_id"], workspace.as_str());
    assert_eq!(changes[2]["type"], "job.created");
    assert_eq!(changes[2]["entity_id"], job.as_str());
    assert_eq!(changes[2]["workspace_id"], workspace.as_str());
    assert_eq!(changes[2]["record"]["id"], job.as_str());

    // The log and the status: three successes, the cursor at the last change.
    let log = wait_for("three logged attempts", 10, || {
        let log = deliveries(&server, &key, &hook);
        (log.len() == 3).then_some(log)
    });
    for attempt in &log {
        assert_eq!(attempt["type"], "svc.hub.webhookDelivery");
        assert_eq!(attempt["body"]["outcome"], "succeeded", "{attempt}");
        assert_eq!(attempt["body"]["status"], 200);
        assert_eq!(attempt["body"]["attempt"], 1);
        assert!(attempt["body"]["duration_ms"].as_i64().is_some());
    }
    assert_eq!(log[0]["body"]["seq"], last_seq, "newest first");
    let read = webhook(&server, &key, &hook);
    assert_eq!(read["type"], "svc.hub.webhook");
    assert!(
        read["body"].get("secret").is_none(),
        "the secret is shown once"
    );
    assert_eq!(read["body"]["status"]["cursor"], last_seq);
    assert_eq!(
        read["body"]["status"]["last_delivery"]["outcome"],
        "succeeded"
    );
    assert_eq!(read["body"]["event_types"], json!([]));

    // Redelivery: the same change once more, logged as a new attempt; the
    // cursor stays.
    let first = log.last().unwrap();
    let reply = server.request(
        "POST",
        &format!(
            "/v2/webhooks/{hook}/deliveries/{}/redeliver",
            first["id"].as_str().unwrap()
        ),
        Some(&key),
        &[],
        None,
    );
    assert_eq!(reply.status, 202, "{}", reply.text());
    let queued = reply.json();
    assert_eq!(queued["body"]["outcome"], "queued");
    assert_eq!(queued["body"]["redelivery_of"], first["id"]);
    assert_eq!(queued["body"]["attempt"], 2);
    let again = receiver.wait_for(4);
    assert_eq!(again[3].body, got[0].body, "the same change");
    assert!(verifies(&again[3], &secret));
    wait_for("the redelivery settled", 10, || {
        let log = deliveries(&server, &key, &hook);
        (log.len() == 4 && log[0]["body"]["outcome"] == "succeeded").then_some(())
    });
    assert_eq!(
        webhook(&server, &key, &hook)["body"]["status"]["cursor"],
        last_seq
    );
}

#[test]
fn a_receiver_failing_three_times_gets_the_change_on_the_fourth_and_the_log_shows_all_four() {
    let server = start(&[]);
    let key = server.admin_key();
    let receiver = Receiver::start(|n| Answer::Status(if n < 3 { 500 } else { 204 }));
    let (hook, _) = create(&server, &key, json!({"url": receiver.url()}));
    let org = id(&server.post("/v2/organizations", &key, &json!({"name": "Retry Co"})));
    let got = receiver.wait_for(4);
    let event = got[0].header("quayside-event-id").to_string();
    assert!(got.iter().all(|r| r.header("quayside-event-id") == event));
    assert_eq!(got[0].json()["entity_id"], org.as_str());
    let log = wait_for("four logged attempts", 10, || {
        let log = deliveries(&server, &key, &hook);
        (log.len() == 4).then_some(log)
    });
    let attempts: Vec<i64> = log
        .iter()
        .map(|d| d["body"]["attempt"].as_i64().unwrap())
        .collect();
    assert_eq!(attempts, [4, 3, 2, 1], "newest first");
    assert_eq!(log[0]["body"]["outcome"], "succeeded");
    assert_eq!(log[0]["body"]["status"], 204);
    for failed in &log[1..] {
        assert_eq!(failed["body"]["outcome"], "failed");
        assert_eq!(failed["body"]["status"], 500);
        assert!(
            failed["body"]["error"].as_str().unwrap().contains("500"),
            "{failed}"
        );
    }
    let status = &webhook(&server, &key, &hook)["body"]["status"];
    assert_eq!(status["failures"], 0);
    assert_eq!(status["failing_since"], Value::Null);
    assert_eq!(status["cursor"], got[0].seq());
    // Nothing more arrives: it was accepted once.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(receiver.received().len(), 4);
}

#[test]
fn slow_and_refusing_receivers_are_retried() {
    // A timeout no loaded machine's answer on loopback comes near, so that
    // the successful retries below are never taken for timeouts.
    let server = start(&["--webhook-timeout-ms", "1000"]);
    let key = server.admin_key();
    // Slow: the first answer comes after the timeout.
    let slow = Receiver::start(|n| {
        if n == 0 {
            Answer::Slow(Duration::from_millis(3000))
        } else {
            Answer::Status(200)
        }
    });
    let (slow_hook, _) = create(&server, &key, json!({"url": slow.url()}));
    // Refusing: the port is held, bound but not listening, so connections
    // to it are refused and nothing else can take it before the test
    // listens on it below.
    let held = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    held.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let port = held.local_addr().unwrap().as_socket().unwrap();
    let (refused_hook, _) = create(&server, &key, json!({"url": format!("http://{port}/hook")}));
    id(&server.post("/v2/organizations", &key, &json!({"name": "Slow Co"})));

    let failure = |hook: &str, what: &str| {
        wait_for(&format!("a failed attempt ({what})"), 20, || {
            deliveries(&server, &key, hook)
                .into_iter()
                .find(|d| d["body"]["outcome"] == "failed")
        })
    };
    let timed_out = failure(&slow_hook, "timeout");
    let error = timed_out["body"]["error"].as_str().unwrap();
    assert!(error.contains("timed out"), "{error}");
    assert_eq!(timed_out["body"]["status"], Value::Null);
    let refused = failure(&refused_hook, "refused");
    let error = refused["body"]["error"].as_str().unwrap();
    assert!(error.contains("cannot connect"), "{error}");

    // Now something listens there: the retry gets through.
    held.listen(128).unwrap();
    let late = Receiver::on(TcpListener::from(held), None, |_| Answer::Status(200));
    for hook in [&slow_hook, &refused_hook] {
        wait_for("a successful retry", 20, || {
            deliveries(&server, &key, hook)
                .into_iter()
                .find(|d| d["body"]["outcome"] == "succeeded")
        });
    }
    assert!(slow.received().len() >= 2);
    assert_eq!(late.received().len(), 1);
    assert_eq!(slow.received()[0].body, late.received()[0].body);
}

#[test]
fn a_restart_in_the_middle_of_a_backlog_delivers_the_rest_in_order() {
    let mut server = start(&[]);
    let key = server.admin_key();
    let receiver = Receiver::start(|_| Answer::Slow(Duration::from_millis(40)));
    create(&server, &key, json!({"url": receiver.url()}));
    let (workspace, _) = workspace_with_job(&server, &key, "Backlog Co", None);
    for n in 0..20 {
        let reply = server.post(
            &format!("/workspaces/{workspace}/jobs"),
            &key,
            &json!({"notes": format!("job {n}")}),
        );
        assert_eq!(reply.status, 201);
    }
    let expected = feed_seqs(&server, &key);
    assert!(expected.len() >= 23, "{expected:?}");
    receiver.wait_for(5);
    // A crash in the middle: SIGKILL, no shutdown.
    let dir = server.take_dir();
    server.kill_by_pid();
    drop(server);
    let before = receiver.received().len();
    assert!(
        before < expected.len(),
        "the backlog was not left half done"
    );
    let data = dir.path().join("quayside.db");
    let server = Server::spawn(&data, FAST);
    let all = wait_for("every change delivered after the restart", 60, || {
        let got: Vec<u64> = receiver.received().iter().map(Received::seq).collect();
        let mut distinct = got.clone();
        distinct.dedup();
        (distinct.len() >= expected.len()).then_some(got)
    });
    let mut distinct = all.clone();
    distinct.dedup();
    assert_eq!(
        distinct, expected,
        "each change once, in order (a repeat only of the one in flight)"
    );
    assert!(all.len() <= expected.len() + 1, "{all:?}");
    drop(server);
}

#[test]
fn a_private_target_is_refused_without_the_flag() {
    let server = Server::start();
    let key = server.admin_key();
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://[::1]/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::ffff:192.168.0.1]/hook",
        "http://100.64.0.1/hook",
    ] {
        let reply = server.post("/v2/webhooks", &key, &json!({"body": {"url": url}}));
        reply.assert_error(400, "invalid_field");
        assert_eq!(reply.error_field().as_deref(), Some("body.url"), "{url}");
        assert!(
            reply.text().contains("--webhook-allow-private"),
            "{}",
            reply.text()
        );
    }
    // Bare bodies name the field without the prefix; other fields are checked too.
    let reply = server.post("/v2/webhooks", &key, &json!({"url": "ftp://example.com/"}));
    reply.assert_error(400, "invalid_field");
    assert_eq!(reply.error_field().as_deref(), Some("url"));
    server
        .post("/v2/webhooks", &key, &json!({"description": "no url"}))
        .assert_error(400, "missing_field");
    assert_eq!(server.get("/v2/webhooks", &key).json(), json!([]));
}

#[test]
fn bodies_are_validated_and_a_foreign_workspace_is_refused() {
    let server = start(&[]);
    let admin = server.admin_key();
    let alice = server.add_user("alice", &[]);
    let bob = server.add_user("bob", &[]);
    let (workspace, _) = workspace_with_job(&server, &alice, "Alice Co", None);
    let receiver = Receiver::accepting();
    let url = receiver.url();
    for (body, field) in [
        (
            json!({"url": url, "event_types": ["job.exploded"]}),
            "body.event_types",
        ),
        (
            json!({"url": url, "event_types": "job.created"}),
            "body.event_types",
        ),
        (json!({"url": url, "active": "yes"}), "body.active"),
        (
            json!({"url": url, "workspace_id": workspace}),
            "body.workspace_id",
        ),
        (json!({"url": url, "secret": "mine"}), "body.secret"),
    ] {
        let reply = server.post("/v2/webhooks", &bob, &json!({ "body": body }));
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        assert_eq!(reply.error_field().as_deref(), Some(field), "{body}");
    }
    // Alice may; so may an admin (who sees every workspace).
    let (hook, _) = create(
        &server,
        &alice,
        json!({"url": url, "workspace_id": workspace, "event_types": ["job.*", "qualityResult.created"]}),
    );
    create(
        &server,
        &admin,
        json!({"url": url, "workspace_id": workspace}),
    );
    let read = webhook(&server, &alice, &hook);
    assert_eq!(read["body"]["workspace_id"], workspace.as_str());
    assert_eq!(
        read["body"]["event_types"],
        json!(["job.*", "qualityResult.created"])
    );
    // Another tenant: 404 on every route of it; its list is its own.
    server
        .get(&format!("/v2/webhooks/{hook}"), &bob)
        .assert_error(404, "not_found");
    assert_eq!(server.get("/v2/webhooks", &bob).json(), json!([]));
    assert_eq!(
        server.get("/v2/webhooks", &alice).header("x-total-count"),
        Some("1")
    );
    // PATCH: the same checks.
    let path = format!("/v2/webhooks/{hook}");
    let reply = server.patch(&path, &alice, &json!({"body": {"url": "gopher://x/"}}));
    assert_eq!(reply.error_field().as_deref(), Some("body.url"));
    let reply = server.patch(
        &path,
        &alice,
        &json!({"body": {"description": "jobs only", "active": false}}),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["body"]["active"], false);
    assert_eq!(reply.json()["body"]["description"], "jobs only");
    let deleted = server.delete(&path, &alice);
    assert_eq!(deleted.status, 200);
    server.get(&path, &alice).assert_error(404, "not_found");
}

#[test]
fn after_a_rotation_both_secrets_verify_during_the_overlap() {
    let server = start(&[]);
    let key = server.admin_key();
    let receiver = Receiver::accepting();
    let (hook, old) = create(&server, &key, json!({"url": receiver.url()}));
    let reply = server.request(
        "POST",
        &format!("/v2/webhooks/{hook}/rotate-secret"),
        Some(&key),
        &[],
        None,
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let rotated = reply.json();
    let new = rotated["body"]["secret"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    assert!(new.starts_with("whsec_"));
    let until = rotated["body"]["status"]["previous_secret_valid_until"]
        .as_str()
        .expect("the old secret's end");
    assert!(until.ends_with('Z'));
    assert!(
        webhook(&server, &key, &hook)["body"]
            .get("secret")
            .is_none()
    );

    id(&server.post("/v2/organizations", &key, &json!({"name": "Rotation Co"})));
    let got = receiver.wait_for(1);
    let header = got[0].header("quayside-signature");
    assert_eq!(header.matches("v1=").count(), 2, "{header}");
    assert!(verifies(&got[0], &new), "the new secret verifies");
    assert!(
        verifies(&got[0], &old),
        "the old secret verifies during the overlap"
    );
}

#[test]
fn a_tenant_s_webhook_never_receives_another_tenant_s_change() {
    let server = start(&[]);
    let alice = server.add_user("alice", &[]);
    let bob = server.add_user("bob", &[]);
    let to_alice = Receiver::accepting();
    let to_bob = Receiver::accepting();
    create(&server, &alice, json!({"url": to_alice.url()}));
    create(&server, &bob, json!({"url": to_bob.url()}));
    let (alice_ws, alice_job) = workspace_with_job(&server, &alice, "Alice Trading", None);
    let (bob_ws, _) = workspace_with_job(&server, &bob, "Bob Inspect", None);
    // Alice changes her job once more, then Bob writes last: deliveries are
    // in order, so once Bob's last change arrives, anything of Alice's that
    // reached Bob would have arrived before it.
    let patched = server.patch(
        &format!("/workspaces/{alice_ws}/jobs/{alice_job}"),
        &alice,
        &json!({"notes": "private"}),
    );
    assert!(patched.status < 300, "{}", patched.text());
    let last = id(&server.post("/v2/organizations", &bob, &json!({"name": "Bob's last"})));
    let bobs = wait_for("Bob's last change", 30, || {
        let got = to_bob.received();
        got.iter()
            .any(|r| r.json()["entity_id"] == last.as_str())
            .then_some(got)
    });
    let alices = to_alice.wait_for(4);
    for received in &bobs {
        let change = received.json();
        assert_ne!(change["workspace_id"], alice_ws.as_str(), "{change}");
        assert_ne!(change["entity_id"], alice_ws.as_str(), "{change}");
        assert_ne!(change["entity_id"], alice_job.as_str(), "{change}");
        // The organization registry is readable by everyone signed in, so
        // Alice's organization may reach Bob; nothing of her workspace does.
        if change["actor"] == "alice" {
            assert_eq!(change["type"], "organization.created", "{change}");
        }
    }
    for received in &alices {
        let change = received.json();
        assert_ne!(change["workspace_id"], bob_ws.as_str(), "{change}");
        assert_ne!(change["entity_id"], bob_ws.as_str(), "{change}");
    }
    assert!(
        alices
            .iter()
            .any(|r| r.json()["entity_id"] == alice_job.as_str())
    );
}

#[test]
fn a_webhook_failing_past_its_window_is_disabled_and_resumes_when_re_enabled() {
    let server = Server::start_with(&[
        "--webhook-allow-private",
        "--webhook-retry-base-ms",
        "50",
        "--webhook-retry-max-secs",
        "1",
    ]);
    let key = server.admin_key();
    let receiver = Receiver::start(|_| Answer::Status(503));
    let (hook, _) = create(&server, &key, json!({"url": receiver.url()}));
    id(&server.post("/v2/organizations", &key, &json!({"name": "Down Co"})));
    let disabled = wait_for("the webhook disabled", 20, || {
        let read = webhook(&server, &key, &hook);
        (read["body"]["active"] == false).then_some(read)
    });
    let reason = disabled["body"]["status"]["disabled_reason"]
        .as_str()
        .unwrap();
    assert!(reason.contains("1 s") && reason.contains("503"), "{reason}");
    let attempts = receiver.received().len();
    assert!(
        attempts >= 3,
        "retried with backoff before giving up: {attempts}"
    );
    // Nothing more is sent while disabled.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(receiver.received().len(), attempts);

    receiver.answer(|_| Answer::Status(200));
    let reply = server.patch(
        &format!("/v2/webhooks/{hook}"),
        &key,
        &json!({"body": {"active": true}}),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.json()["body"]["status"]["disabled_reason"],
        Value::Null
    );
    let got = receiver.wait_for(attempts + 1);
    assert_eq!(
        got[attempts].body, got[0].body,
        "resumes with the change it stopped at"
    );
    wait_for("the cursor moved", 10, || {
        let status = webhook(&server, &key, &hook)["body"]["status"].clone();
        (status["cursor"] == got[0].seq()).then_some(())
    });
}

// ---------------------------------------------------------------------------
// https

/// A CA and a server certificate for 127.0.0.1 it signed.
struct TestCa {
    pem: String,
    server: Arc<rustls::ServerConfig>,
}

fn test_ca(name: &str) -> TestCa {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, name);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone(), ca_cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    TestCa {
        pem: ca_cert.pem(),
        server: Arc::new(server),
    }
}

#[test]
fn https_deliveries_trust_the_ca_file() {
    let trusted = test_ca("Quayside test CA");
    let stranger = test_ca("Some other CA");
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &trusted.pem).unwrap();
    let server = start(&["--webhook-ca-file", ca_file.to_str().unwrap()]);
    let key = server.admin_key();
    let listener = || TcpListener::bind("127.0.0.1:0").unwrap();
    let good = Receiver::on(listener(), Some(trusted.server.clone()), |_| {
        Answer::Status(200)
    });
    let bad = Receiver::on(listener(), Some(stranger.server.clone()), |_| {
        Answer::Status(200)
    });
    let (good_hook, secret) = create(&server, &key, json!({"url": good.url()}));
    let (bad_hook, _) = create(&server, &key, json!({"url": bad.url()}));
    assert!(good.url().starts_with("https://127.0.0.1:"));
    id(&server.post("/v2/organizations", &key, &json!({"name": "TLS Co"})));
    let got = good.wait_for(1);
    assert!(verifies(&got[0], &secret));
    wait_for("a logged https success", 10, || {
        deliveries(&server, &key, &good_hook)
            .into_iter()
            .find(|d| d["body"]["outcome"] == "succeeded")
    });
    let refused = wait_for(
        "a certificate the CA file does not trust refused",
        20,
        || {
            deliveries(&server, &key, &bad_hook)
                .into_iter()
                .find(|d| d["body"]["outcome"] == "failed")
        },
    );
    let error = refused["body"]["error"].as_str().unwrap();
    assert!(error.contains("TLS"), "{error}");
    assert!(bad.received().is_empty());

    // A CA file that holds no certificate stops the server at startup.
    std::fs::write(&ca_file, "not a certificate").unwrap();
    let out = std::process::Command::new(crate::common::binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--webhook-ca-file"])
        .arg(&ca_file)
        .arg("--data")
        .arg(dir.path().join("other.db"))
        .env("QUAYSIDE_ADMIN_PASSWORD", crate::common::ADMIN_PASSWORD)
        .env("QUAYSIDE_PBKDF2_ITERATIONS", crate::common::TEST_ITERATIONS)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("webhooks:") && stderr.contains("ca.pem"),
        "{stderr}"
    );
}

/// Without a CA file the platform's roots are trusted, read when the first
/// https delivery needs them: a certificate of a CA they do not hold is
/// refused by the verifier they make (not by a missing configuration).
#[test]
fn https_deliveries_without_a_ca_file_trust_the_platform_roots() {
    let stranger = test_ca("A CA no platform trusts");
    let server = start(&[]);
    let key = server.admin_key();
    let receiver = Receiver::on(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        Some(stranger.server.clone()),
        |_| Answer::Status(200),
    );
    let (hook, _) = create(&server, &key, json!({"url": receiver.url()}));
    id(&server.post("/v2/organizations", &key, &json!({"name": "Roots Co"})));
    let refused = wait_for("an untrusted certificate refused", 20, || {
        deliveries(&server, &key, &hook)
            .into_iter()
            .find(|d| d["body"]["outcome"] == "failed")
    });
    let error = refused["body"]["error"].as_str().unwrap();
    assert!(
        error.contains("TLS with 127.0.0.1") && error.contains("invalid peer certificate"),
        "{error}"
    );
    assert!(receiver.received().is_empty());
}

#[test]
fn shutdown_does_not_wait_for_a_delivery_in_flight_and_the_change_is_sent_again() {
    let mut server = start(&[]);
    let key = server.admin_key();
    let receiver = Receiver::start(|n| {
        if n == 0 {
            Answer::Slow(Duration::from_secs(20))
        } else {
            Answer::Status(200)
        }
    });
    let (hook, _) = create(&server, &key, json!({"url": receiver.url()}));
    id(&server.post("/v2/organizations", &key, &json!({"name": "Stop Co"})));
    receiver.wait_for(1);
    let dir = server.take_dir();
    let asked = Instant::now();
    assert!(server.stop().success());
    // Well before the receiver's 20 s answer (a closing connection may
    // linger up to 2 s on a loaded machine).
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "stopping took {:?}",
        asked.elapsed()
    );
    drop(server);
    // The change was not acknowledged: after a restart it is delivered.
    let server = Server::spawn(&dir.path().join("quayside.db"), FAST);
    let got = receiver.wait_for(2);
    assert_eq!(got[1].body, got[0].body);
    let key = server.admin_key();
    wait_for("the delivery logged", 10, || {
        deliveries(&server, &key, &hook)
            .into_iter()
            .find(|d| d["body"]["outcome"] == "succeeded")
    });
}
