//! Two `quayside serve` processes on one database of the test cluster behave
//! as one server (issue 17, "several processes, one service"): a session ended
//! through one is refused by the other at once, concurrent creates of one name
//! through both give one winner and no 500, webhooks are delivered once per
//! attempt (by the process holding the background lease, `db::lease`), and
//! the lockout counts failures made through either, and the change log's
//! entries written through one reflect what was changed through the other
//! (who may read them, the catalog records they show). Over real HTTP, on
//! 127.0.0.1; every wait polls for the state it asserts, with a deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{ADMIN_PASSWORD, PORTS, Server, id, wait_for, workspace_with_job};
use crate::webhooks::{Answer, Receiver, create};

/// Two servers, A then B, on one fresh database. A is started first and
/// holds the background lease before B starts.
struct Pair {
    a: Server,
    b: Server,
    database: String,
    _dir: tempfile::TempDir,
}

const HOLDS_THE_LEASE: &str = "this process holds the lease";

fn pair(extra: &[&str]) -> Pair {
    let dir = tempfile::tempdir().expect("temp dir");
    let database = crate::pg::cluster::cluster().database_string();
    let a = Server::spawn_on_database(&dir.path().join("a.db"), &database, extra);
    a.log_when(|log| log.contains(HOLDS_THE_LEASE));
    let b = Server::spawn_on_database(&dir.path().join("b.db"), &database, extra);
    Pair {
        a,
        b,
        database,
        _dir: dir,
    }
}

impl Pair {
    /// The one integer `sql` answers on the shared database.
    fn count(&self, sql: &str, params: &[&str]) -> i64 {
        use quayside::db::pg::{Client, ConnectOptions};
        use quayside::db::value::Value;
        let client = Client::connect(&ConnectOptions::parse(&self.database).unwrap())
            .expect("connect to the test database");
        let values: Vec<Value> = params.iter().map(|p| Value::from(*p)).collect();
        client
            .query_row(sql, &values)
            .expect("query")
            .and_then(|row| row[0].as_i64())
            .expect("an integer")
    }
}

/// A session route that answers from the read cache when it can (a port).
fn port_path() -> String {
    format!("{PORTS}/NLRTM")
}

#[track_caller]
fn live(server: &Server, key: &str) {
    let reply = server.get(&port_path(), key);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["clientCode"], "NLRTM", "{}", reply.text());
}

#[track_caller]
fn refused(server: &Server, key: &str) {
    server
        .get(&port_path(), key)
        .assert_error(401, "unauthorized");
    server
        .put(
            &format!("{PORTS}/NLRTM"),
            key,
            &json!({"name": "Rotterdam"}),
        )
        .assert_error(401, "unauthorized");
}

#[test]
fn a_logout_password_change_or_removal_through_one_process_is_refused_by_the_other_at_once() {
    let p = pair(&[]);
    let admin = p.a.admin_key();
    let created = p.a.put(&port_path(), &admin, &json!({"name": "Rotterdam"}));
    assert_eq!(created.status, 201, "{}", created.text());

    // A logout through A.
    let key = p.a.add_user("alice", &[]);
    for _ in 0..3 {
        live(&p.b, &key);
        live(&p.a, &key);
    }
    let out = p.a.delete("/api/rest/1.0/sessions/alice", &key);
    assert_eq!(out.status, 204, "{}", out.text());
    refused(&p.b, &key);
    refused(&p.a, &key);

    // `quayside user passwd` run by the CLI on the database.
    let key = p.b.login("alice", "alice-password");
    for _ in 0..3 {
        live(&p.b, &key);
        live(&p.a, &key);
    }
    let out =
        p.a.cli(&["user", "passwd", "alice"], Some("alice-new-password"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    refused(&p.b, &key);
    refused(&p.a, &key);
    p.b.login_reply("alice", "alice-password")
        .assert_error(401, "unauthorized");
    let key = p.b.login("alice", "alice-new-password");

    // `quayside user remove`.
    for _ in 0..3 {
        live(&p.a, &key);
        live(&p.b, &key);
    }
    let out = p.b.cli(&["user", "remove", "alice"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    refused(&p.a, &key);
    refused(&p.b, &key);
    // The administrator's session, used through both all along, still works.
    live(&p.a, &admin);
    live(&p.b, &admin);
}

/// `requests` of `send` at once, half through each process; their statuses.
fn race(
    p: &Pair,
    requests: usize,
    send: impl Fn(&Server) -> (u16, Value) + Sync,
) -> Vec<(u16, Value)> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..requests)
            .map(|i| {
                let server = if i % 2 == 0 { &p.a } else { &p.b };
                let send = &send;
                scope.spawn(move || send(server))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[track_caller]
fn tally(answers: &[(u16, Value)]) -> BTreeMap<u16, usize> {
    let mut statuses = BTreeMap::new();
    for (status, _) in answers {
        *statuses.entry(*status).or_insert(0) += 1;
    }
    assert!(
        answers.iter().all(|(status, _)| *status < 500),
        "no 500: {answers:?}"
    );
    statuses
}

/// One 201 among `answers`, and 409 `code` for every other.
#[track_caller]
fn one_winner(answers: &[(u16, Value)], code: &str) {
    assert_eq!(
        tally(answers),
        BTreeMap::from([(201, 1), (409, answers.len() - 1)]),
        "{answers:?}"
    );
    for (_, body) in answers.iter().filter(|(status, _)| *status == 409) {
        assert_eq!(body["error"]["code"], code, "{body}");
    }
}

#[test]
fn concurrent_creates_through_both_processes_give_one_winner_and_never_a_500() {
    let p = pair(&[]);
    let admin = p.a.admin_key();
    const AT_ONCE: usize = 12;

    // One new port code: an upsert, so one 201 and 200 for the others.
    let answers = race(&p, AT_ONCE, |server| {
        let reply = server.put(&format!("{PORTS}/RACE"), &admin, &json!({"name": "Race"}));
        (reply.status, reply.json())
    });
    assert_eq!(
        tally(&answers),
        BTreeMap::from([(200, AT_ONCE - 1), (201, 1)]),
        "{answers:?}"
    );
    assert!(
        answers.iter().all(|(_, body)| body["name"] == "Race"),
        "{answers:?}"
    );
    assert_eq!(
        p.count(
            "SELECT count(*) FROM locations WHERE catalog = 'ports' AND client_code = ?1",
            &["RACE"]
        ),
        1
    );

    // One organization name: one 201, 409 `duplicate_name` for the others.
    let answers = race(&p, AT_ONCE, |server| {
        let reply = server.post(
            "/v2/organizations",
            &admin,
            &json!({"body": {"name": "Race Inspections"}}),
        );
        (reply.status, reply.json())
    });
    one_winner(&answers, "duplicate_name");
    for (_, body) in answers.iter().filter(|(status, _)| *status == 201) {
        assert_eq!(body["body"]["name"], "Race Inspections", "{body}");
    }
    assert_eq!(
        p.count(
            "SELECT count(*) FROM organizations WHERE name_folded = ?1",
            &["race inspections"]
        ),
        1
    );

    // One quantity direction on one job: one 201, 409 for the others.
    let (workspace, job) = workspace_with_job(&p.a, &admin, "Race Client", None);
    let path = format!("/workspaces/{workspace}/jobs/{job}/quantity");
    let answers = race(&p, AT_ONCE, |server| {
        let reply = server.post(&path, &admin, &json!({"direction": "source"}));
        (reply.status, reply.json())
    });
    one_winner(&answers, "duplicate_direction");
    assert_eq!(
        p.count(
            "SELECT count(*) FROM documents WHERE kind = 'quantityResult' AND job_id = ?1",
            &[job.as_str()]
        ),
        1
    );
}

/// The delivery log of a webhook, oldest first, through `server`.
fn log(server: &Server, key: &str, webhook: &str) -> Vec<Value> {
    let reply = server.get(
        &format!("/v2/webhooks/{webhook}/deliveries?limit=1000"),
        key,
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let mut entries: Vec<Value> = reply
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["body"].clone())
        .collect();
    entries.reverse();
    entries
}

/// Event ids with one succeeded attempt each in the log.
fn succeeded(log: &[Value]) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for entry in log.iter().filter(|e| e["outcome"] == "succeeded") {
        *seen
            .entry(entry["event_id"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    seen
}

/// Receivers on 127.0.0.1; retries far enough apart that the process not
/// holding the lease, which would look for work every second, would see
/// each one due (so a second deliverer would show).
const FLAGS: &[&str] = &[
    "--webhook-allow-private",
    "--webhook-retry-base-ms",
    "700",
    "--webhook-retry-max-secs",
    "60",
];

#[test]
fn webhooks_are_delivered_once_per_attempt_and_the_other_process_takes_over_a_killed_holder() {
    let p = pair(FLAGS);
    let admin = p.a.admin_key();
    assert!(
        !p.b.log_text().contains(HOLDS_THE_LEASE),
        "A holds it, not B"
    );

    // Changes made through both processes, each delivered once. The first
    // two answers take longer than a second: a delivery in flight meanwhile
    // is not started again by the other process.
    let receiver = Receiver::start(|n| {
        if n < 2 {
            Answer::Slow(Duration::from_millis(1500))
        } else {
            Answer::Status(200)
        }
    });
    let (hook, _) = create(&p.b, &admin, json!({"url": receiver.url()}));
    for i in 0..6 {
        let server = if i % 2 == 0 { &p.a } else { &p.b };
        id(&server.post(
            "/v2/organizations",
            &admin,
            &json!({"name": format!("Once {i}")}),
        ));
    }
    let delivered = wait_for("six successes logged", 30, || {
        let log = log(&p.b, &admin, &hook);
        (succeeded(&log).len() == 6).then_some(log)
    });
    assert_eq!(delivered.len(), 6, "one attempt each: {delivered:?}");
    assert!(succeeded(&delivered).values().all(|n| *n == 1));
    let events: BTreeSet<String> = receiver
        .received()
        .iter()
        .map(|r| r.header("quayside-event-id").to_string())
        .collect();
    assert_eq!(receiver.received().len(), 6, "each change once");
    assert_eq!(events, succeeded(&delivered).into_keys().collect());

    // A failing receiver's retries are not doubled: two failures, then a
    // success, each attempt made and logged once.
    let failing = Receiver::start(|n| Answer::Status(if n < 2 { 500 } else { 204 }));
    let (retried, _) = create(&p.a, &admin, json!({"url": failing.url()}));
    id(&p
        .b
        .post("/v2/organizations", &admin, &json!({"name": "Retried"})));
    let deadline = Instant::now() + Duration::from_secs(30);
    let attempts = wait_for("the third attempt logged", 31, || {
        let log = log(&p.a, &admin, &retried);
        assert!(
            Instant::now() < deadline,
            "{log:?}; {} requests; A: {}; B: {}",
            failing.received().len(),
            p.a.log_text(),
            p.b.log_text()
        );
        (!succeeded(&log).is_empty()).then_some(log)
    });
    let numbers: Vec<i64> = attempts
        .iter()
        .map(|d| d["attempt"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 3], "{attempts:?}");
    let outcomes: Vec<&str> = attempts
        .iter()
        .map(|d| d["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["failed", "failed", "succeeded"]);
    assert_eq!(failing.received().len(), 3, "three requests, not six");
    let event = failing.received()[0]
        .header("quayside-event-id")
        .to_string();
    assert!(
        failing
            .received()
            .iter()
            .all(|r| r.header("quayside-event-id") == event)
    );

    // A, the holder, is killed: B takes the lease over and delivers what
    // remains (changes made through B once A is gone).
    p.a.kill_by_pid();
    for i in 0..3 {
        id(&p.b.post(
            "/v2/organizations",
            &admin,
            &json!({"name": format!("After {i}")}),
        ));
    }
    p.b.log_when(|log| log.contains(HOLDS_THE_LEASE));
    // Six, "Retried" and three more.
    let after = wait_for("ten successes logged", 30, || {
        let log = log(&p.b, &admin, &hook);
        (succeeded(&log).len() == 10).then_some(log)
    });
    assert!(succeeded(&after).values().all(|n| *n == 1), "{after:?}");
    let got = receiver.received();
    let events: BTreeSet<String> = got
        .iter()
        .map(|r| r.header("quayside-event-id").to_string())
        .collect();
    assert_eq!(events.len(), 10, "every change delivered");
    assert_eq!(got.len(), 10, "and none twice");
    let names: BTreeSet<String> = got
        .iter()
        .filter_map(|r| {
            r.json()["record"]["body"]["name"]
                .as_str()
                .map(str::to_string)
        })
        .filter(|name| name.starts_with("After"))
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

#[test]
fn five_failures_split_between_the_processes_lock_the_pair_on_both() {
    let p = pair(&[]);
    for i in 0..5 {
        let server = if i % 2 == 0 { &p.a } else { &p.b };
        server
            .login_reply("admin", "wrong-password")
            .assert_error(401, "unauthorized");
    }
    for server in [&p.a, &p.b] {
        let locked = server.login_reply("admin", ADMIN_PASSWORD);
        locked.assert_error(429, "too_many_requests");
        let retry: u64 = locked.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=300).contains(&retry), "{retry}");
    }
    // The pair, not the account: another address logs in through both.
    for server in [&p.a, &p.b] {
        let reply = server.login_from("127.0.0.2", "admin", ADMIN_PASSWORD);
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    // `quayside user unlock` on the database lets the address in on both.
    let out = p.b.cli(&["user", "unlock", "admin"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("unlocked admin"));
    p.a.login("admin", ADMIN_PASSWORD);
    p.b.login("admin", ADMIN_PASSWORD);
    // A success forgets the pair's failures on both: four more failures do
    // not lock it.
    for i in 0..4 {
        let server = if i % 2 == 0 { &p.b } else { &p.a };
        server
            .login_reply("admin", "wrong-password")
            .assert_error(401, "unauthorized");
    }
    p.a.login("admin", ADMIN_PASSWORD);
    p.b.login("admin", ADMIN_PASSWORD);
}

/// A failed login is counted where every process sees it, but it is not a
/// commit of anything cached: the commit counter stays where it was, so no
/// process's caches are emptied by wrong passwords (as on a data file, where
/// failures are counted in memory).
#[test]
fn failed_logins_through_either_process_leave_the_commit_counter_alone() {
    let p = pair(&[]);
    let key = p.a.admin_key();
    let commits = || p.count("SELECT commits FROM change_log WHERE id = 1", &[]);
    let failures = || p.count("SELECT count(*) FROM login_failures", &[]);
    let before = commits();
    for i in 0..4 {
        let server = if i % 2 == 0 { &p.a } else { &p.b };
        server
            .login_reply("admin", "wrong-password")
            .assert_error(401, "unauthorized");
    }
    assert_eq!(failures(), 4, "each failure recorded before its 401");
    assert_eq!(commits(), before, "and none counted as a commit");
    let reply = p.b.get(PORTS, &key);
    assert_eq!(reply.status, 200, "{}", reply.text());
}

/// A session's sliding expiry, refreshed through either process, is
/// bookkeeping: it changes nothing a cache holds, so it is not counted as a
/// commit and empties no process's caches (as on a data file, where such a
/// commit is recognised by the writer, `db::stamp`). The session stays live
/// on both, and a logout through one is still refused by the other at once.
#[test]
fn a_session_refreshed_through_either_process_leaves_the_commit_counter_alone() {
    // An idle limit of 2 s: the expiry is refreshed every 250 ms of use.
    let p = pair(&["--session-idle-secs", "2"]);
    let admin = p.a.admin_key();
    let created = p.a.put(&port_path(), &admin, &json!({"name": "Rotterdam"}));
    assert_eq!(created.status, 201, "{}", created.text());
    let key = p.b.add_user("alice", &[]);
    live(&p.a, &key);
    live(&p.b, &key);
    let commits = || p.count("SELECT commits FROM change_log WHERE id = 1", &[]);
    let used = || {
        p.count(
            "SELECT s.last_used_at FROM sessions s JOIN accounts a ON a.id = s.account_id \
             WHERE a.username = $1",
            &["alice"],
        )
    };
    let sessions = || p.count("SELECT session_commits FROM change_log WHERE id = 1", &[]);
    let before = commits();
    let sessions_before = sessions();
    for server in [&p.a, &p.b] {
        let last = used();
        wait_for("the session's expiry refreshed", 10, || {
            live(server, &key);
            (used() > last).then_some(())
        });
    }
    assert_eq!(commits(), before, "a refreshed expiry counted as a commit");
    assert_eq!(sessions(), sessions_before, "nor as a change of a session");
    let out = p.b.delete("/api/rest/1.0/sessions/alice", &key);
    assert_eq!(out.status, 204, "{}", out.text());
    assert!(commits() > before, "a logout is a commit");
    assert_eq!(
        sessions(),
        sessions_before + 1,
        "and a change of a session, which every process's cached sessions compare"
    );
    refused(&p.a, &key);
    refused(&p.b, &key);
}

/// The read cache of location records compares the count of the
/// transactions that changed a location (`change_log.location_commits`, kept
/// by a trigger on the table), not every commit: a workspace's writes through
/// either process leave it, while a port changed through one process, by
/// the CLI, or by any statement on the table moves it, and the other process
/// answers the change at once.
#[test]
fn only_a_change_of_a_location_through_any_process_moves_the_count_the_location_cache_compares() {
    let p = pair(&[]);
    let key = p.a.admin_key();
    let created = p.a.put(&port_path(), &key, &json!({"name": "Rotterdam"}));
    assert_eq!(created.status, 201, "{}", created.text());
    let counts = || {
        (
            p.count("SELECT commits FROM change_log WHERE id = 1", &[]),
            p.count("SELECT location_commits FROM change_log WHERE id = 1", &[]),
        )
    };
    live(&p.a, &key);
    live(&p.b, &key);
    let (commits, locations) = counts();
    let sessions = p.count("SELECT session_commits FROM change_log WHERE id = 1", &[]);
    // A workspace, a job and a quality result through each process.
    for server in [&p.a, &p.b] {
        let (ws, job) = workspace_with_job(server, &key, &format!("Org {}", server.base), None);
        let result = server.post(
            &format!("/workspaces/{ws}/jobs/{job}/quality"),
            &key,
            &json!({"status": "preliminary", "setNumber": 1, "testNumber": 1,
                    "sample": {"location": "T1"},
                    "method": {"xref": "D4052", "name": "ASTM D4052"},
                    "test": {"xref": "DEN", "name": "Density"},
                    "uom": {"xref": "KGM3", "name": "kg/m3"},
                    "result": "845.1", "resultOperator": "eq"}),
        );
        assert_eq!(result.status, 201, "{}", result.text());
    }
    let (after_commits, after_locations) = counts();
    assert!(after_commits >= commits + 6, "{commits} -> {after_commits}");
    assert_eq!(after_locations, locations, "no location changed");
    assert_eq!(
        p.count("SELECT session_commits FROM change_log WHERE id = 1", &[]),
        sessions,
        "nor a session: the processes' cached sessions hold"
    );
    live(&p.a, &key);
    live(&p.b, &key);
    // A port renamed through B: A answers the new name at once.
    let renamed =
        p.b.put(&port_path(), &key, &json!({"name": "Rotterdam Europoort"}));
    assert_eq!(renamed.status, 200, "{}", renamed.text());
    assert_eq!(
        counts().1,
        locations + 1,
        "one transaction changed a location"
    );
    let reply = p.a.get(&port_path(), &key);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["name"], "Rotterdam Europoort");
    // The CLI's import, one transaction of many rows: counted once.
    let out =
        p.a.cli(&["import-unlocode", crate::common::UNLOCODE_SAMPLE], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(counts().1, locations + 2);
    // Any statement on the table, from psql as much as from Quayside.
    use quayside::db::pg::{Client, ConnectOptions};
    let client = Client::connect(&ConnectOptions::parse(&p.database).unwrap()).unwrap();
    client
        .batch_execute("UPDATE locations SET name = 'Rotterdam Haven' WHERE client_code = 'NLRTM'")
        .unwrap();
    assert_eq!(counts().1, locations + 3);
    for server in [&p.a, &p.b] {
        let reply = server.get(&port_path(), &key);
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.json()["name"], "Rotterdam Haven");
    }
}

/// The per-username slowdown counts the failures made through both processes
/// (from several addresses, so that no pair locks), and `quayside user unlock`
/// ends it, as on one process.
#[test]
fn the_username_slowdown_counts_failures_through_both_processes_and_ends_with_unlock() {
    let p = pair(&[]);
    let fail = |server: &Server, local: &str| {
        let started = Instant::now();
        server
            .login_from(local, "admin", "wrong-password")
            .assert_error(401, "unauthorized");
        started.elapsed()
    };
    // Eight failures, two from each of four addresses, half through each.
    for i in 0..8 {
        let server = if i % 2 == 0 { &p.a } else { &p.b };
        fail(server, &format!("127.0.0.{}", 2 + i / 2));
    }
    // The ninth is four past the fifth: answered 4 x 250 ms later, though
    // A itself saw only four of them.
    let ninth = fail(&p.a, "127.0.0.10");
    assert!(ninth >= Duration::from_millis(1000), "{ninth:?}");
    let out = p.a.cli(&["user", "unlock", "admin"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Unlocked: the next failure is the first again (the tenth would have
    // waited 1,250 ms).
    let after = fail(&p.b, "127.0.0.11");
    assert!(after < Duration::from_millis(1000), "{after:?}");
}

#[test]
fn two_processes_started_at_once_on_an_empty_database_both_serve() {
    let dir = tempfile::tempdir().expect("temp dir");
    let database = crate::pg::cluster::cluster().database_string();
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| Server::spawn_on_database(&dir.path().join("a.db"), &database, &[]));
        let b = scope.spawn(|| Server::spawn_on_database(&dir.path().join("b.db"), &database, &[]));
        (a.join().unwrap(), b.join().unwrap())
    });
    // One schema, one first administrator, one holder of the lease.
    let key = a.admin_key();
    let reply = b.get(PORTS, &key);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let holders = wait_for("a holder of the lease", 10, || {
        let holders = [&a, &b]
            .iter()
            .filter(|s| s.log_text().contains(HOLDS_THE_LEASE))
            .count();
        (holders > 0).then_some(holders)
    });
    assert_eq!(holders, 1);
    std::thread::sleep(LEASE_RETRY_AND_A_BIT);
    assert_eq!(
        [&a, &b]
            .iter()
            .filter(|s| s.log_text().contains(HOLDS_THE_LEASE))
            .count(),
        1,
        "the other does not take it while it is held"
    );
}

/// Longer than `db::lease::RETRY` (2 s): a second holder would have shown.
const LEASE_RETRY_AND_A_BIT: Duration = Duration::from_millis(2500);

/// The changes of `workspace` that `key` reads through `server`, after `since`:
/// (type, the record's body).
fn workspace_feed(server: &Server, key: &str, workspace: &str, since: u64) -> Vec<(String, Value)> {
    let reply = server.get(
        &format!("/v2/workspaces/{workspace}/changes?since={since}&limit=1000"),
        key,
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap().to_string(),
                c["record"]["body"].clone(),
            )
        })
        .collect()
}

/// Two users, each with an organization of their own, and a workspace
/// alice made through A naming bob's organization: bob's tenant is invited.
struct Invited {
    alice: String,
    bob: String,
    ws: String,
}

fn invited(p: &Pair) -> Invited {
    let alice = p.a.add_user("alice", &[]);
    let bob = p.a.add_user("bob", &[]);
    let org = |key: &str, name: &str| {
        id(&p
            .a
            .post("/v2/organizations", key, &json!({"body": {"name": name}})))
    };
    let (client, vendor) = (org(&alice, "Alice Shipping"), org(&bob, "Bob Inspections"));
    let ws = id(&p.a.post(
        "/workspaces",
        &alice,
        &json!({"parties": {"client": {"id": client}, "vendor": {"id": vendor}}}),
    ));
    Invited { alice, bob, ws }
}

/// `key` accepts the invitation to `ws` through `server`.
fn accept(server: &Server, key: &str, ws: &str) {
    let accepted = server.request(
        "POST",
        &format!("/workspaces/{ws}/accept"),
        Some(key),
        &[],
        None,
    );
    assert_eq!(accepted.status, 200, "{}", accepted.text());
}

/// The change log's capture keeps, between writes, each workspace's members
/// (who may read its changes) and the catalog records documents show
/// expanded. A change made through the other process must not leave them
/// stale: an invitation accepted through B lets the new member read the
/// changes written through A from then on, and a catalog record renamed
/// through B shows its new name in the entries A writes next.
#[test]
fn the_capture_s_kept_members_and_catalog_records_follow_changes_made_through_the_other_process() {
    let p = pair(&[]);
    let Invited { alice, bob, ws } = invited(&p);
    // Alice prepares a catalog record meanwhile, through A (which keeps the
    // workspace's members: alice's tenant alone).
    let test = id(&p.a.post(
        &format!("/workspaces/{ws}/catalogs/tests"),
        &alice,
        &json!({"name": "Density", "xref": "DEN"}),
    ));
    accept(&p.b, &bob, &ws);
    let since = 0;
    let job = id(&p
        .a
        .post(&format!("/workspaces/{ws}/jobs"), &alice, &json!({})));
    let result = |server: &Server| {
        let reply = server.post(
            &format!("/workspaces/{ws}/jobs/{job}/quality"),
            &alice,
            &json!({
                "status": "preliminary", "setNumber": 1, "testNumber": 1,
                "sample": {"location": "T1"}, "test": test,
                "method": {"xref": "D4052", "name": "ASTM D4052"},
                "uom": {"xref": "KGM3", "name": "kg/m3"},
                "result": "845.1", "resultOperator": "eq"
            }),
        );
        assert_eq!(reply.status, 201, "{}", reply.text());
    };
    // Through A: the capture reads the test record to show it expanded.
    result(&p.a);
    for server in [&p.a, &p.b] {
        let seen: Vec<String> = workspace_feed(server, &bob, &ws, since)
            .into_iter()
            .map(|(kind, _)| kind)
            .collect();
        assert_eq!(
            seen,
            [
                "workspace.updated",
                "job.created",
                // The method and unit, made as the result names them.
                "catalogItem.created",
                "catalogItem.created",
                "qualityResult.created"
            ],
            "the new member reads what was written through A after it accepted"
        );
    }
    let renamed = p.b.send_json(
        "PATCH",
        &format!("/workspaces/{ws}/catalogs/tests/{test}"),
        &alice,
        &json!({"name": "Density at 15 °C"}),
    );
    assert_eq!(renamed.status, 200, "{}", renamed.text());
    result(&p.a);
    let feed = workspace_feed(&p.a, &alice, &ws, since);
    let (kind, last) = feed.last().expect("changes");
    assert_eq!(kind, "qualityResult.created");
    assert_eq!(last["test"]["name"], "Density at 15 °C", "{last}");
}

/// What each process's writer keeps between writes (`db::kept`: the
/// workspace, the job a result goes under, a catalog record found by xref)
/// follows changes made through the other process: a catalog record's xref
/// changed, a job deleted and a workspace deleted through B are seen by the
/// next write through A.
#[test]
fn the_writer_s_kept_rows_follow_changes_made_through_the_other_process() {
    let p = pair(&[]);
    let alice = p.a.add_user("alice", &[]);
    let (ws, job) = workspace_with_job(&p.a, &alice, "Alice Shipping", None);
    let jobs = format!("/workspaces/{ws}/jobs");
    let rotterdam = json!({"location": {"xref": "NLRTM", "name": "Rotterdam"}});
    let location = |server: &Server, body: &Value| {
        let reply = server.post(&jobs, &alice, body);
        assert_eq!(reply.status, 201, "{}", reply.text());
        reply.json()["body"]["location"]
            .as_str()
            .expect("a location")
            .to_string()
    };
    // Made, then found by xref through A (read, then kept).
    let first = location(&p.a, &rotterdam);
    assert_eq!(location(&p.a, &rotterdam), first);
    assert_eq!(location(&p.a, &rotterdam), first);
    let renamed = p.b.send_json(
        "PATCH",
        &format!("/workspaces/{ws}/catalogs/locations/{first}"),
        &alice,
        &json!({"xref": "NLRTM-1"}),
    );
    assert_eq!(renamed.status, 200, "{}", renamed.text());
    let made = location(&p.a, &rotterdam);
    assert_ne!(made, first, "the old xref names a new record");
    let moved = json!({"location": {"xref": "NLRTM-1", "name": "Rotterdam"}});
    assert_eq!(location(&p.a, &moved), first);

    // A job written under through A, deleted through B.
    let results = format!("/workspaces/{ws}/jobs/{job}/timelog");
    let timelog = json!({
        "type": {"xref": "NOR", "name": "Notice of readiness"},
        "category": "event",
        "start": "2026-11-21T06:00:00Z"
    });
    let mut written = Vec::new();
    for _ in 0..2 {
        written.push(id(&p.a.post(&results, &alice, &timelog)));
    }
    for result in &written {
        let gone = p.b.delete(&format!("{results}/{result}"), &alice);
        assert_eq!(gone.status, 200, "{}", gone.text());
    }
    let gone = p.b.delete(&format!("{jobs}/{job}"), &alice);
    assert_eq!(gone.status, 200, "{}", gone.text());
    assert_eq!(p.a.post(&results, &alice, &timelog).status, 404);

    // A workspace written in through A, deleted through B.
    let (other, _) = workspace_with_job(&p.a, &alice, "Alice Trading", None);
    let items = format!("/workspaces/{other}/catalogs/products");
    for name in ["Gasoil", "Diesel"] {
        id(&p.a.post(&items, &alice, &json!({"name": name})));
    }
    let job = p.a.get(&format!("/workspaces/{other}/jobs"), &alice).json()[0]["id"]
        .as_str()
        .expect("the job")
        .to_string();
    let gone =
        p.b.delete(&format!("/workspaces/{other}/jobs/{job}"), &alice);
    assert_eq!(gone.status, 200, "{}", gone.text());
    let gone = p.b.delete(&format!("/workspaces/{other}"), &alice);
    assert_eq!(gone.status, 200, "{}", gone.text());
    assert_eq!(
        p.a.post(&items, &alice, &json!({"name": "Jet"})).status,
        404
    );
}

/// A writer's batch on PostgreSQL sends its BEGIN ahead and reads what it
/// answers after its writes ran (`Conn::begin_writing_ahead`); when that
/// shows another process's writes, what the writes read of kept rows may
/// have been stale, refusals included, and every write of the batch runs
/// again. Here A keeps a pending workspace (a catalog record was prepared
/// there), B accepts the invitation, and the next job through A, which the
/// kept row would refuse, is taken at once.
#[test]
fn a_refusal_read_off_a_row_kept_before_the_other_process_changed_it_runs_again() {
    let p = pair(&["--log-level", "debug"]);
    let Invited { alice, bob, ws } = invited(&p);
    // A catalog record prepared through A, whose writer keeps the
    // workspace as it read it: pending.
    let product = p.a.post(
        &format!("/workspaces/{ws}/catalogs/products"),
        &alice,
        &json!({"name": "Crude"}),
    );
    assert_eq!(product.status, 201, "{}", product.text());
    // Past the batches that wait for their BEGIN after one found another
    // process's writes (`SHARED_BATCHES`): the next sends it ahead.
    for round in 0..70 {
        let reply = p.a.put(
            "/api/rest/1.0/ports/NLRTM",
            &alice,
            &json!({"name": "Rotterdam", "generalComments": format!("round {round}")}),
        );
        assert!(reply.status < 300, "{}", reply.text());
    }
    accept(&p.b, &bob, &ws);
    let job =
        p.a.post(&format!("/workspaces/{ws}/jobs"), &alice, &json!({}));
    assert_eq!(job.status, 201, "{}", job.text());
    p.a.log_when(|log| log.contains("another process wrote since this writer's last transaction"));
}

/// A long-poll served by one process answers as promptly for a change written
/// through the other as for one of its own: within 100 ms of the commit (the
/// median of five), as `changes::a_long_poll_answers_within_100_ms_of_the_commit`
/// asks of one process.
#[test]
fn a_long_poll_on_one_process_answers_within_100_ms_of_a_commit_through_the_other() {
    let p = pair(&[]);
    let key = p.a.admin_key();
    crate::common::assert_long_poll_answers_within_100_ms(&p.b, &p.a, &key);
}

/// A webhook's settings changed through the process that does not deliver
/// apply as when changed through the one that does: to the changes the
/// worker has not looked at yet. One the old filter passed over stays passed
/// over; the next one the new filter takes is delivered.
#[test]
fn a_webhook_filter_widened_through_the_other_process_applies_as_through_the_deliverer() {
    let p = pair(FLAGS);
    let admin = p.a.admin_key();
    let receiver = Receiver::start(|_| Answer::Status(200));
    let (hook, _) = create(
        &p.a,
        &admin,
        json!({"url": receiver.url(), "event_types": ["organization.created"]}),
    );
    let org = id(&p
        .a
        .post("/v2/organizations", &admin, &json!({"name": "Filtered"})));
    wait_for("the create delivered", 30, || {
        (receiver.received().len() == 1).then_some(())
    });
    let rename = |name: &str| {
        let renamed = p.a.patch(
            &format!("/v2/organizations/{org}"),
            &admin,
            &json!({"body": {"name": name}}),
        );
        assert_eq!(renamed.status, 200, "{}", renamed.text());
    };
    // Not taken by the filter: A's worker passes over it (and stores that).
    rename("Passed over");
    let head = p.a.get("/v2/changes?since=now", &admin).json()["next"]
        .as_u64()
        .expect("next");
    wait_for("the worker past the rename", 30, || {
        let reply = p.a.get(&format!("/v2/webhooks/{hook}"), &admin);
        (reply.json()["body"]["status"]["cursor"].as_u64() >= Some(head)).then_some(())
    });
    // B holds no lease: its PATCH nudges no worker of its own that delivers.
    let widened = p.b.patch(
        &format!("/v2/webhooks/{hook}"),
        &admin,
        &json!({"body": {"event_types": ["organization.*"]}}),
    );
    assert_eq!(widened.status, 200, "{}", widened.text());
    rename("Taken");
    let got = wait_for("the second rename delivered", 30, || {
        let got = receiver.received();
        (got.len() >= 2).then_some(got)
    });
    assert_eq!(got.len(), 2, "the passed-over rename is not sent later");
    assert_eq!(got[1].json()["type"], "organization.updated");
    assert_eq!(got[1].json()["record"]["body"]["name"], "Taken");
}
