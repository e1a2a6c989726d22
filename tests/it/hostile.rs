//! Hostile input. Property tests drive the request handler directly (no
//! socket, so thousands of inputs run in seconds): any path, method, query,
//! JSON or multipart body gives a 2xx or a 4xx with the error body, never a
//! 5xx, a panic or a hang. Named cases then go over real sockets: truncated
//! and oversized bodies, slow headers, deep nesting, huge numbers, invalid
//! UTF-8, NUL bytes, traversal and SQL-looking strings.

use crate::common;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use proptest::prelude::*;
use quayside::app::{App, Settings};
use quayside::http::{Request, Response};
use serde_json::{Value, json};

/// One application on one data file for every property, with a session key
/// and a populated workspace.
struct World {
    runtime: tokio::runtime::Runtime,
    app: Arc<App>,
    key: String,
    ids: Vec<(&'static str, String)>,
    _dir: tempfile::TempDir,
}

static TRIED: AtomicUsize = AtomicUsize::new(0);

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("hostile.db");
        {
            let conn = quayside::db::Conn::open(&data).unwrap();
            let hash = quayside::auth::password::hash("hostile-password", 1000);
            quayside::auth::accounts::insert(&conn, "eve", "tenant-eve", false, &hash, 0).unwrap();
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let app = runtime.block_on(async {
            let db = quayside::db::Db::open(
                &data,
                2,
                None,
                std::sync::Arc::new(quayside::changes::Capture::default()),
            )
            .unwrap();
            App::new(
                db,
                Settings {
                    pbkdf2_iterations: 1000,
                    ..Settings::default()
                },
                quayside::routes::table(),
            )
        });
        let mut world = World {
            runtime,
            app,
            key: String::new(),
            ids: Vec::new(),
            _dir: dir,
        };
        let login = world.call(
            "POST",
            "/api/rest/1.0/sessions/eve",
            "application/x-www-form-urlencoded",
            b"password=hostile-password",
        );
        world.key = login.1["sessionId"].as_str().unwrap().to_string();
        let id = |w: &World, path: &str, body: Value| -> String {
            let (status, json) = w.call(
                "POST",
                path,
                "application/json",
                body.to_string().as_bytes(),
            );
            assert!(status < 300, "{path}: {json}");
            json["id"].as_str().unwrap().to_string()
        };
        let org = id(
            &world,
            "/v2/organizations",
            json!({"body": {"name": "Eve Co"}}),
        );
        let ws = id(
            &world,
            "/workspaces",
            json!({"parties": {"client": {"id": org}}}),
        );
        let job = id(
            &world,
            &format!("/workspaces/{ws}/jobs"),
            json!({"notes": "x"}),
        );
        let item = id(
            &world,
            &format!("/workspaces/{ws}/catalogs/products"),
            json!({"name": "Gasoil"}),
        );
        world.ids = vec![("org", org), ("ws", ws), ("job", job), ("item", item)];
        world
    })
}

impl World {
    fn id(&self, name: &str) -> &str {
        &self.ids.iter().find(|(n, _)| *n == name).unwrap().1
    }

    /// Calls the handler; returns the status and the JSON body (Null if not JSON).
    fn call(&self, method: &str, target: &str, content_type: &str, body: &[u8]) -> (u16, Value) {
        TRIED.fetch_add(1, Ordering::Relaxed);
        let auth = format!("Bearer {}", self.key);
        let headers = [
            ("content-type", content_type),
            ("authorization", auth.as_str()),
        ];
        let request = match Request::from_bytes(method, target, &headers, body.to_vec()) {
            Ok(request) => request,
            // Unrepresentable as HTTP (the client library would refuse to send it).
            Err(err) => return (err.status(), err.body()),
        };
        let app = self.app.clone();
        let response: Response = self.runtime.block_on(async move {
            tokio::time::timeout(Duration::from_secs(10), app.handle(request))
                .await
                .expect("the handler hung")
        });
        let status = response.status();
        let bytes = self
            .runtime
            .block_on(response.into_bytes())
            .unwrap_or_default();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }
}

fn assert_sane(what: &str, status: u16, body: &Value) {
    assert!(status < 500, "{what} answered {status}: {body}");
    if status >= 400 {
        assert_eq!(body["error"]["status"], status, "{what}: {body}");
        assert!(body["error"]["code"].is_string(), "{what}: {body}");
        assert!(body["error"]["message"].is_string(), "{what}: {body}");
    }
}

/// Path segments a client might send, good and bad.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("workspaces".to_string()),
        Just("jobs".to_string()),
        Just("quality".to_string()),
        Just("catalogs".to_string()),
        Just("products".to_string()),
        Just("files".to_string()),
        Just("v2".to_string()),
        Just("api".to_string()),
        Just("rest".to_string()),
        Just("1.0".to_string()),
        Just("ports".to_string()),
        Just("synonyms".to_string()),
        Just("..".to_string()),
        Just("%2e%2e%2fetc%2fpasswd".to_string()),
        Just("'%20OR%201=1--".to_string()),
        Just("%00".to_string()),
        Just("%ff%fe".to_string()),
        Just("%".to_string()),
        Just("{ws}".to_string()),
        Just("{job}".to_string()),
        Just("{item}".to_string()),
        "[a-zA-Z0-9._~%-]{0,40}",
    ]
}

fn fill(world: &World, path: &str) -> String {
    path.replace("{ws}", world.id("ws"))
        .replace("{job}", world.id("job"))
        .replace("{item}", world.id("item"))
        .replace("{org}", world.id("org"))
}

/// Query strings: list parameters with odd values, SQL-looking filters.
fn query() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        Just("limit"),
        Just("offset"),
        Just("sort"),
        Just("status"),
        Just("cargo.quantity"),
        Just("filter[body.description]"),
        Just("page"),
        Just("resultsPerPage"),
        Just("clientCodes"),
        Just("dateModifiedFrom"),
        Just("name"),
        Just("xtype"),
        Just("api_key"),
        Just("x;DROP TABLE locations"),
    ];
    let value = prop_oneof![
        Just("-1".to_string()),
        Just("99999999999999999999".to_string()),
        Just("name:desc,created_at".to_string()),
        Just("eta:up".to_string()),
        Just("1;DELETE FROM documents".to_string()),
        Just("%5B%22A%22%5D".to_string()),
        Just("%5B1,2%5D".to_string()),
        Just("json_extract(body,'$')".to_string()),
        "[ -~]{0,30}".prop_map(|s| s.replace(['&', '#', ' '], "+")),
    ];
    proptest::collection::vec((name, value), 0..4).prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("&")
    })
}

/// Arbitrary JSON, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[ -~\u{00e0}-\u{00ff}\u{0391}-\u{03c9}]{0,20}".prop_map(Value::String),
        prop_oneof![
            Just("2026-11-21T09:30:00Z"),
            Just("9999-12-31T23:59:59-01:00"),
            Just("pending"),
            Just("source"),
            Just("complete"),
            Just("")
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![
            Just("name"),
            Just("status"),
            Just("direction"),
            Just("cargo"),
            Just("product"),
            Just("quantity"),
            Just("location"),
            Just("xref"),
            Just("body"),
            Just("parties"),
            Just("client"),
            Just("id"),
            Just("measurements"),
            Just("start"),
            Just("end"),
            Just("requested"),
            Just("latitudeDeg"),
            Just("unknown"),
        ];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((key, inner), 0..6).prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

const WRITE_TARGETS: &[(&str, &str)] = &[
    ("PUT", "/api/rest/1.0/ports/HOSTILE"),
    ("POST", "/workspaces"),
    ("PATCH", "/workspaces/{ws}"),
    ("POST", "/v2/workspaces"),
    ("POST", "/v2/organizations"),
    ("PATCH", "/v2/organizations/{org}"),
    ("POST", "/workspaces/{ws}/jobs"),
    ("PATCH", "/workspaces/{ws}/jobs/{job}"),
    ("POST", "/workspaces/{ws}/jobs/{job}/quantity"),
    ("POST", "/workspaces/{ws}/jobs/{job}/quality"),
    ("POST", "/workspaces/{ws}/jobs/{job}/timelog"),
    ("POST", "/workspaces/{ws}/jobs/{job}/load-port-information"),
    ("POST", "/workspaces/{ws}/catalogs/products"),
    ("PATCH", "/workspaces/{ws}/catalogs/products/{item}"),
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_path_method_and_query_is_answered_sanely(
        method in prop_oneof![Just("GET"), Just("POST"), Just("PUT"), Just("PATCH"), Just("DELETE"), Just("HEAD"), Just("BREW")],
        segments in proptest::collection::vec(segment(), 0..8),
        query in query(),
    ) {
        let world = world();
        let path = fill(world, &format!("/{}", segments.join("/")));
        let target = if query.is_empty() { path } else { format!("{path}?{query}") };
        let (status, body) = world.call(method, &target, "application/json", b"{}");
        assert_sane(&format!("{method} {target}"), status, &body);
    }

    #[test]
    fn any_json_body_is_answered_sanely(
        target in proptest::sample::select(WRITE_TARGETS),
        body in json_value(),
    ) {
        let world = world();
        let path = fill(world, target.1);
        let text = body.to_string();
        let (status, reply) = world.call(target.0, &path, "application/json", text.as_bytes());
        assert_sane(&format!("{} {path} {text}", target.0), status, &reply);
    }

    #[test]
    fn any_bytes_as_json_are_answered_sanely(
        target in proptest::sample::select(WRITE_TARGETS),
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let world = world();
        let path = fill(world, target.1);
        let (status, reply) = world.call(target.0, &path, "application/json", &bytes);
        assert_sane(&format!("{} {path} {bytes:?}", target.0), status, &reply);
    }

    #[test]
    fn any_multipart_body_is_answered_sanely(
        preamble in proptest::sample::select(vec![
            "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n",
            "--B\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n",
            "--B\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\n",
            "--B\r\n\r\n",
            "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\u{0}\"\r\n\r\n",
            "",
        ]),
        payload in proptest::collection::vec(any::<u8>(), 0..300),
        ending in proptest::sample::select(vec!["\r\n--B--\r\n", "", "\r\n--B", "--B--"]),
        boundary in proptest::sample::select(vec!["B", "", "\"B\"", "a b"]),
    ) {
        let world = world();
        let mut body = preamble.as_bytes().to_vec();
        body.extend_from_slice(&payload);
        body.extend_from_slice(ending.as_bytes());
        let content_type = format!("multipart/form-data; boundary={boundary}");
        let path = fill(world, "/workspaces/{ws}/jobs/{job}/files");
        let (status, reply) = world.call("POST", &path, &content_type, &body);
        assert_sane(&format!("upload {body:?}"), status, &reply);
    }
}

#[test]
fn zz_report_inputs_tried() {
    // Runs after the properties in the same binary most of the time; the figure
    // is informative, the assertions are in the properties.
    eprintln!(
        "hostile input: {} handler calls so far",
        TRIED.load(Ordering::Relaxed)
    );
}

/// Sends raw bytes on a fresh connection and returns what came back (empty if
/// the server closed the connection without answering).
fn raw(server: &common::Server, bytes: &[u8], pause_after: Option<usize>) -> String {
    let address = server.address();
    let mut socket = std::net::TcpStream::connect(address).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    match pause_after {
        Some(at) => {
            socket.write_all(&bytes[..at]).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            let _ = socket.write_all(&bytes[at..]);
        }
        None => socket.write_all(bytes).unwrap(),
    }
    if pause_after.is_none() && !String::from_utf8_lossy(bytes).contains("Connection: close") {
        // A client that stops sending: half-close the connection.
        let _ = socket.shutdown(std::net::Shutdown::Write);
    }
    let mut out = Vec::new();
    let _ = socket.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn named_hostile_requests_get_clear_4xx_answers() {
    let server = common::Server::start();
    let key = server.admin_key();
    let auth = format!("Authorization: Bearer {key}\r\n");
    let post = |path: &str, content_type: &str, body: &[u8]| -> Vec<u8> {
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        request
    };
    let status_of = |answer: &str| answer.split(' ').nth(1).unwrap_or("").to_string();

    // Deeply nested JSON: refused, not a stack overflow.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let answer = raw(
        &server,
        &post("/workspaces", "application/json", deep.as_bytes()),
        None,
    );
    assert_eq!(status_of(&answer), "400", "{answer}");
    assert!(answer.contains("\"invalid_json\""));

    // Huge numbers.
    for body in [
        r#"{"name":"x","latitudeDeg":1e400}"#,
        r#"{"name":"x","latitudeDeg":123456789012345678901234567890}"#,
    ] {
        let answer = raw(
            &server,
            &post_put(&auth, "/api/rest/1.0/ports/HUGE", body),
            None,
        );
        assert!(answer.starts_with("HTTP/1.1 400"), "{body}: {answer}");
    }

    // Invalid UTF-8 in a JSON body, in a path, in a query.
    let answer = raw(
        &server,
        &post(
            "/workspaces",
            "application/json",
            b"{\"description\":\"\xff\xfe\"}",
        ),
        None,
    );
    assert_eq!(status_of(&answer), "400", "{answer}");
    let answer = raw(
        &server,
        format!(
            "GET /api/rest/1.0/ports/%ff HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
        )
        .as_bytes(),
        None,
    );
    assert_eq!(status_of(&answer), "400", "{answer}");
    let answer = raw(&server, format!("GET /api/rest/1.0/ports?name=%c3%28 HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n").as_bytes(), None);
    assert_eq!(status_of(&answer), "400", "{answer}");

    // NUL bytes in ids and in JSON strings.
    let answer = raw(
        &server,
        format!(
            "GET /api/rest/1.0/ports/A%00B HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
        )
        .as_bytes(),
        None,
    );
    assert_eq!(status_of(&answer), "400", "{answer}");
    let answer = raw(
        &server,
        &post_put(&auth, "/api/rest/1.0/ports/NUL", "{\"name\":\"a\\u0000b\"}"),
        None,
    );
    assert_eq!(status_of(&answer), "400", "{answer}");

    // Traversal and SQL-looking ids, sorts and filters: not found or refused, nothing changed.
    assert_eq!(
        server
            .put("/api/rest/1.0/ports/SAFE", &key, &json!({"name": "Safe"}))
            .status,
        201
    );
    for path in [
        "/workspaces/..%2F..%2Fetc%2Fpasswd",
        "/workspaces/1'%20OR%20'1'='1",
        "/api/rest/1.0/ports/SAFE'--",
        "/api/rest/1.0/ports?name=%27%3B%20DROP%20TABLE%20locations%3B--",
        "/workspaces?sort=description;DROP%20TABLE%20workspaces",
        "/workspaces?description=%27%20OR%201%3D1--",
        "/workspaces?x%27%29%20OR%201%3D1--=1",
    ] {
        let reply = server.get(path, &key);
        assert!(
            matches!(reply.status, 200 | 400 | 404),
            "{path}: {}",
            reply.status
        );
        if reply.status == 200 {
            assert!(
                reply.json().as_array().is_none_or(|a| a.is_empty())
                    || reply.json()["totalResultsAvailable"] == 0,
                "{path}: {}",
                reply.text()
            );
        }
    }
    assert_eq!(server.get("/api/rest/1.0/ports/SAFE", &key).status, 200);

    // A truncated body: the client promises more than it sends, then closes its side.
    let truncated = String::from_utf8_lossy(&post(
        "/workspaces",
        "application/json",
        b"{\"description\":",
    ))
    .replace("Content-Length: 15", "Content-Length: 500")
    .replace("Connection: close\r\n", "")
    .into_bytes();
    let answer = raw(&server, &truncated, None);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 400"),
        "{answer}"
    );

    // Headers sent slowly but within the limit are fine.
    let slow = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let answer = raw(&server, slow.as_bytes(), Some(10));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // The server is still healthy after all of it.
    assert_eq!(
        server.request("GET", "/healthz", None, &[], None).status,
        200
    );
}

fn post_put(auth: &str, path: &str, body: &str) -> Vec<u8> {
    format!(
        "PUT {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[test]
fn a_stalled_body_times_out_with_408() {
    let server = common::Server::start_with(&["--body-timeout-secs", "1"]);
    let key = server.admin_key();
    let request = format!(
        "POST /workspaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: 500\r\nConnection: close\r\n\r\n{{\"description\":"
    );
    let started = std::time::Instant::now();
    let answer = raw(&server, request.as_bytes(), Some(request.len()));
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"request_timeout\""), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_slow_loris_is_cut_off_and_others_are_served() {
    let server = common::Server::start_with(&["--header-timeout-secs", "1"]);
    let address = server.address().to_string();
    let mut loris = std::net::TcpStream::connect(&address).unwrap();
    loris
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .unwrap();
    // Meanwhile another client is served.
    assert_eq!(
        server.request("GET", "/healthz", None, &[], None).status,
        200
    );
    std::thread::sleep(Duration::from_millis(1600));
    loris
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut out = Vec::new();
    let _ = loris.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    // Cut off: either closed silently or with a 408.
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
}

/// Requests hyper cannot parse are refused before any handler runs; the
/// answers still carry the contract's error body: a target past 65,534
/// bytes (414), a head well past the 64 KiB read buffer (431: hyper checks
/// the buffer only when a head does not parse whole from what it read), a
/// malformed header line (400). The connection closes after each.
#[test]
fn unparsable_requests_get_the_contract_error_body() {
    let server = common::Server::start();
    let long_target = format!(
        "GET /api/rest/1.0/ports/{} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(70_000)
    );
    let large_head = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: {}\r\n\r\n",
        "p".repeat(300_000)
    );
    for (request, status, code) in [
        (long_target.as_bytes(), 414, "uri_too_long"),
        (large_head.as_bytes(), 431, "headers_too_large"),
        (
            &b"GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n"[..],
            400,
            "invalid_request",
        ),
    ] {
        let reply = server.exchange_raw(request);
        reply.assert_error(status, code);
        assert_eq!(
            reply.header("content-type"),
            Some("application/json"),
            "{code}"
        );
        assert_eq!(reply.header("connection"), Some("close"), "{code}");
    }
    // The server goes on answering.
    assert_eq!(
        server.request("GET", "/healthz", None, &[], None).status,
        200
    );
}
