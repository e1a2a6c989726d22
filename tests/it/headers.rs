//! Caching, OPTIONS and CORS (issue 15, item 8): API answers are never kept
//! by caches, OPTIONS on any path of the route table answers its methods, and
//! CORS is off unless `--cors-origin` names the one origin allowed.

use std::io::{Read, Write};

use crate::common::{ADMIN_PASSWORD, PORTS, Reply, Server, urlencode, workspace_with_job};
use serde_json::json;

fn options(server: &Server, path: &str, headers: &[(&str, &str)]) -> Reply {
    server.request("OPTIONS", path, None, headers, None)
}

#[test]
fn no_cache_control_on_api_answers_not_even_the_login_that_carries_the_key() {
    let server = Server::start();
    let login = server.login_reply("admin", ADMIN_PASSWORD);
    assert_eq!(login.status, 200);
    assert_eq!(login.header("cache-control"), Some("no-store"));
    let key = login.json()["sessionId"].as_str().unwrap().to_string();
    server.put(
        &format!("{PORTS}/NLRTM"),
        &key,
        &json!({"name": "Rotterdam"}),
    );
    let (workspace, _) = workspace_with_job(&server, &key, "Cache Co", None);
    for reply in [
        server.get(&format!("{PORTS}/NLRTM"), &key),
        server.get(&format!("{PORTS}?api_key={}", urlencode(&key)), &key),
        server.get(&format!("/workspaces/{workspace}/jobs"), &key),
        server.get("/v2/changes?since=0", &key),
        server.request("GET", "/healthz", None, &[], None),
        server.request("GET", "/openapi.json", None, &[], None),
        // Errors too: from the router, the session check, a handler.
        server.request("GET", "/v2/workspaces", None, &[], None),
        server.get("/nowhere", &key),
        server.request("PATCH", PORTS, Some(&key), &[], None),
        server.get(&format!("{PORTS}?pgae=2"), &key),
        server.login_reply("admin", "wrong-password"),
        server.delete(&format!("/workspaces/{workspace}"), &key),
    ] {
        assert_eq!(
            reply.header("cache-control"),
            Some("no-store"),
            "{}: {}",
            reply.status,
            reply.text()
        );
        assert_eq!(
            reply
                .headers
                .iter()
                .filter(|(n, _)| n == "cache-control")
                .count(),
            1
        );
    }
    // An answer the request parser gives, before any route.
    let mut socket = std::net::TcpStream::connect(server.address()).unwrap();
    socket
        .write_all(b"GET /api/rest/1.0/ports/%ff HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("cache-control: no-store"),
        "{answer}"
    );
    // The console's files keep their own rule: revalidate with the ETag.
    let page = server.request("GET", "/", None, &[], None);
    assert_eq!(page.header("cache-control"), Some("no-cache"));
}

#[test]
fn options_gets_405_with_no_cors_at_all() {
    let server = Server::start();
    for (path, allow) in [
        ("/api/rest/1.0/ports/NLRTM", "GET, PUT, DELETE, OPTIONS"),
        ("/api/rest/1.0/ports", "GET, OPTIONS"),
        ("/v2/workspaces", "GET, POST, OPTIONS"),
        ("/api/rest/1.0/sessions/admin", "POST, DELETE, OPTIONS"),
        ("/healthz", "GET, OPTIONS"),
        (
            "/workspaces/00000000-0000-0000-0000-000000000000/jobs/x/files/y/content",
            "GET, HEAD, OPTIONS",
        ),
    ] {
        // No key needed: browsers send preflights without credentials.
        let reply = options(&server, path, &[("Origin", "https://erp.example.com")]);
        assert_eq!(reply.status, 204, "{path}: {}", reply.text());
        assert!(reply.body.is_empty());
        assert_eq!(reply.header("allow"), Some(allow), "{path}");
        assert_eq!(reply.header("cache-control"), Some("no-store"));
        // Without --cors-origin, nothing of CORS.
        assert!(
            !reply
                .headers
                .iter()
                .any(|(n, _)| n.starts_with("access-control-")),
            "{path}: {:?}",
            reply.headers
        );
        // The 405 of another method lists the same methods.
        if !allow.contains("PATCH") {
            let other = server.request("PATCH", path, None, &[], None);
            other.assert_error(405, "method_not_allowed");
            assert_eq!(other.header("allow"), Some(allow), "{path}");
        }
    }
    options(&server, "/nowhere/at/all", &[]).assert_error(404, "not_found");
    let key = server.admin_key();
    let answer = server.request(
        "GET",
        "/v2/workspaces",
        Some(&key),
        &[("Origin", "https://erp.example.com")],
        None,
    );
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("access-control-allow-origin"), None);
}

#[test]
fn cors_origin_answers_preflights_for_exactly_that_origin() {
    const ORIGIN: &str = "https://erp.example.com";
    let server = Server::start_with(&["--cors-origin", ORIGIN]);
    let key = server.admin_key();
    let preflight = |origin: &str| {
        options(
            &server,
            "/v2/workspaces",
            &[
                ("Origin", origin),
                ("Access-Control-Request-Method", "POST"),
                (
                    "Access-Control-Request-Headers",
                    "authorization, content-type",
                ),
            ],
        )
    };
    let reply = preflight(ORIGIN);
    assert_eq!(reply.status, 204);
    assert_eq!(reply.header("access-control-allow-origin"), Some(ORIGIN));
    assert_eq!(
        reply.header("access-control-allow-methods"),
        Some("GET, POST, OPTIONS")
    );
    let headers = reply
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    assert!(
        headers.contains("authorization") && headers.contains("content-type"),
        "{headers}"
    );
    assert!(reply.header("access-control-max-age").is_some());
    assert_eq!(reply.header("vary"), Some("Origin"));
    assert_eq!(reply.header("access-control-allow-credentials"), None);

    // Any other origin, even a near one, gets no CORS header.
    for other in [
        "https://evil.example.com",
        "http://erp.example.com",
        "https://erp.example.com:8443",
        "https://erp.example.com.evil.example",
        "null",
    ] {
        let reply = preflight(other);
        assert_eq!(reply.status, 204);
        assert_eq!(reply.header("access-control-allow-origin"), None, "{other}");
        assert_eq!(
            reply.header("access-control-allow-methods"),
            None,
            "{other}"
        );
    }

    // Actual answers to that origin carry the headers, errors too.
    let list = server.request(
        "GET",
        "/v2/workspaces",
        Some(&key),
        &[("Origin", ORIGIN)],
        None,
    );
    assert_eq!(list.status, 200);
    assert_eq!(list.header("access-control-allow-origin"), Some(ORIGIN));
    let exposed = list.header("access-control-expose-headers").unwrap();
    assert!(exposed.contains("X-Total-Count"), "{exposed}");
    let denied = server.request("GET", "/v2/workspaces", None, &[("Origin", ORIGIN)], None);
    denied.assert_error(401, "unauthorized");
    assert_eq!(denied.header("access-control-allow-origin"), Some(ORIGIN));
    // Another origin's request is answered, but its page may not read it.
    let foreign = server.request(
        "GET",
        "/v2/workspaces",
        Some(&key),
        &[("Origin", "https://evil.example.com")],
        None,
    );
    assert_eq!(foreign.status, 200);
    assert_eq!(foreign.header("access-control-allow-origin"), None);
    assert_eq!(foreign.header("vary"), Some("Origin"));
}
