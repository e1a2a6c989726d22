//! Strict JSON and identifiers (issue 15, item 10): one regression test per
//! quirk a hostile client found, each named after the quirk (the behaviour
//! it had), asserting the behaviour it has now, over real HTTP.

use std::io::{Read, Write};

use crate::common::{PORTS, Server, workspace_with_job};
use serde_json::json;

/// Sends a JSON body as raw text (serde_json would not write a duplicate key).
fn send_raw_json(
    server: &Server,
    method: &str,
    path: &str,
    key: &str,
    body: &str,
) -> crate::common::Reply {
    server.request(
        method,
        path,
        Some(key),
        &[("Content-Type", "application/json")],
        Some(body.as_bytes()),
    )
}

/// A request over a fresh socket, with the path sent exactly as written (HTTP
/// clients resolve `.` and `..` segments before sending).
fn raw_status(server: &Server, request: &str) -> String {
    let mut socket = std::net::TcpStream::connect(server.address()).unwrap();
    socket.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = socket.read_to_string(&mut answer);
    answer
}

#[test]
fn duplicate_object_keys_last_one_silently_wins() {
    let server = Server::start();
    let key = server.admin_key();
    let reply = send_raw_json(
        &server,
        "PUT",
        &format!("{PORTS}/DUPKEY"),
        &key,
        r#"{"name":"Rotterdam","countryCode":"NL","name":"Evil"}"#,
    );
    reply.assert_error(400, "duplicate_field");
    assert_eq!(reply.error_field().as_deref(), Some("name"));
    assert_eq!(server.get(&format!("{PORTS}/DUPKEY"), &key).status, 404);

    // Nested, and inside a v2 wrapper: the whole path is named.
    let (workspace, job) = workspace_with_job(&server, &key, "Dup Co", None);
    let reply = send_raw_json(
        &server,
        "PATCH",
        &format!("/workspaces/{workspace}/jobs/{job}"),
        &key,
        r#"{"cargo":{"quantity":1,"quantity":2}}"#,
    );
    reply.assert_error(400, "duplicate_field");
    assert_eq!(reply.error_field().as_deref(), Some("cargo.quantity"));
    let reply = send_raw_json(
        &server,
        "POST",
        "/v2/organizations",
        &key,
        r#"{"body":{"name":"A","category":"shipper","name":"B"}}"#,
    );
    reply.assert_error(400, "duplicate_field");
    assert_eq!(reply.error_field().as_deref(), Some("body.name"));
}

#[test]
fn integers_above_2_53_in_float_fields_are_echoed_exactly() {
    let server = Server::start();
    let key = server.admin_key();
    let (workspace, _) = workspace_with_job(&server, &key, "Float Co", None);
    let jobs = format!("/workspaces/{workspace}/jobs");
    let reply = send_raw_json(
        &server,
        "POST",
        &jobs,
        &key,
        r#"{"cargo":{"quantity":9007199254740993}}"#,
    );
    reply.assert_error(400, "invalid_field");
    assert_eq!(reply.error_field().as_deref(), Some("cargo.quantity"));
    // What a double holds exactly is fine, and reads back as sent.
    for exact in ["9007199254740992", "1152921504606846976", "5000.25"] {
        let reply = send_raw_json(
            &server,
            "POST",
            &jobs,
            &key,
            &format!(r#"{{"cargo":{{"quantity":{exact}}}}}"#),
        );
        assert_eq!(reply.status, 201, "{exact}: {}", reply.text());
        assert!(reply.text().contains(exact), "{exact}: {}", reply.text());
    }
    // A location's seconds too.
    let reply = send_raw_json(
        &server,
        "PUT",
        &format!("{PORTS}/SECS"),
        &key,
        r#"{"name":"x","latitudeSec":18446744073709551615}"#,
    );
    reply.assert_error(400, "invalid_field");
    assert_eq!(reply.error_field().as_deref(), Some("latitudeSec"));
}

#[test]
fn nul_is_accepted_in_job_notes_but_refused_in_names() {
    let server = Server::start();
    let key = server.admin_key();
    let (workspace, job) = workspace_with_job(&server, &key, "Notes Co", None);
    let job_path = format!("/workspaces/{workspace}/jobs/{job}");
    // Refused in notes, as in every text field.
    for bad in [
        "a\u{0}b",
        "bell\u{7}",
        "esc\u{1b}[31m",
        "c1\u{85}",
        "lone\rreturn",
    ] {
        let reply = server.patch(&job_path, &key, &json!({"notes": bad}));
        reply.assert_error(400, "invalid_field");
        assert_eq!(reply.error_field().as_deref(), Some("notes"), "{bad:?}");
    }
    // Notes are multi-line: line breaks and tabs are kept.
    let notes = "line one\nline two\r\n\tindented";
    let reply = server.patch(&job_path, &key, &json!({"notes": notes}));
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["notes"], notes);
    // One-line fields refuse every control character, line breaks too.
    for (path, body, field) in [
        (
            format!("{PORTS}/CTRL"),
            json!({"name": "Rotter\ndam"}),
            "name",
        ),
        (
            format!("{PORTS}/CTRL"),
            json!({"name": "x", "geoRegionCode": "a\tb"}),
            "geoRegionCode",
        ),
        (job_path.clone(), json!({"xref": "J\u{0}1"}), "xref"),
    ] {
        let method = if path.starts_with(PORTS) {
            "PUT"
        } else {
            "PATCH"
        };
        let reply = server.send_json(method, &path, &key, &body);
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        assert_eq!(reply.error_field().as_deref(), Some(field), "{body}");
    }
    let reply = server.post(
        "/v2/organizations",
        &key,
        &json!({"body": {"name": "Tab\tCo"}}),
    );
    reply.assert_error(400, "invalid_field");
    // A location's comments are multi-line like notes.
    let reply = server.put(
        &format!("{PORTS}/MULTI"),
        &key,
        &json!({"name": "Multi", "generalComments": "berth 4\nberth 5", "restrictions": "a\u{0}"}),
    );
    reply.assert_error(400, "invalid_field");
    assert_eq!(reply.error_field().as_deref(), Some("restrictions"));
}

#[test]
fn a_name_of_only_invisible_characters_is_not_blank() {
    let server = Server::start();
    let key = server.admin_key();
    for name in ["\u{202e}\u{200b}", "\u{feff}", " \u{2060}\u{3164} "] {
        let reply = server.put(&format!("{PORTS}/BLANK"), &key, &json!({"name": name}));
        reply.assert_error(400, "invalid_field");
        assert_eq!(reply.error_field().as_deref(), Some("name"));
        let reply = server.post("/v2/organizations", &key, &json!({"body": {"name": name}}));
        assert_eq!(reply.status, 400, "{}", reply.text());
    }
    // A catalog record needs a name or an xref: an invisible name is none.
    let (workspace, _) = workspace_with_job(&server, &key, "Blank Co", None);
    let reply = server.post(
        &format!("/workspaces/{workspace}/catalogs/products"),
        &key,
        &json!({"name": "\u{202e}\u{200b}"}),
    );
    reply.assert_error(400, "missing_field");
    // Visible text around format characters is still a name.
    let reply = server.put(
        &format!("{PORTS}/RTL"),
        &key,
        &json!({"name": "\u{200f}Haifa"}),
    );
    assert_eq!(reply.status, 201, "{}", reply.text());
}

#[test]
fn put_ports_dot_dot_creates_a_record_no_client_can_address() {
    let server = Server::start();
    let key = server.admin_key();
    let body = r#"{"name":"Nowhere"}"#;
    for code in ["%2e%2e", "%2E%2E", "..", "%2e", "."] {
        let answer = raw_status(
            &server,
            &format!(
                "PUT {PORTS}/{code} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        );
        assert!(answer.starts_with("HTTP/1.1 400"), "{code}: {answer}");
        assert!(
            answer.contains("\"field\":\"clientCode\""),
            "{code}: {answer}"
        );
    }
    // Dots inside a code are still fine.
    let reply = server.put(&format!("{PORTS}/A..B"), &key, &json!({"name": "Dots"}));
    assert_eq!(reply.status, 201, "{}", reply.text());
    let listed = server
        .get(&format!("{PORTS}?resultsPerPage=200"), &key)
        .json();
    assert_eq!(listed["totalResultsAvailable"], 1, "{listed}");
}

/// A NUL reached PostgreSQL as a text parameter and answered 500 (SQLite
/// answered `200 []`); the decoder refuses it on both engines.
#[test]
fn a_nul_in_a_path_a_query_or_a_form_is_a_400_on_both_engines() {
    let server = Server::start();
    let key = server.admin_key();
    let (workspace, job) = workspace_with_job(&server, &key, "Nul Co", None);
    let jobs = format!("/workspaces/{workspace}/jobs");
    // A filter's value, a filter's name, on every kind of list.
    for (path, parameter) in [
        (format!("{jobs}?xref=%00"), "xref"),
        (format!("{jobs}?tripNumber=a%00b"), "tripNumber"),
        (format!("{PORTS}?name=Rotter%00dam"), "name"),
        (
            format!("/workspaces/{workspace}/catalogs/locations?xref=%00"),
            "xref",
        ),
        (
            "/v2/workspaces?filter%5Bbody.state%5D=%00".to_string(),
            "filter[body.state]",
        ),
        ("/invitations?description=%00".to_string(), "description"),
    ] {
        let reply = server.get(&path, &key);
        reply.assert_error(400, "invalid_query");
        assert_eq!(reply.error_field().as_deref(), Some(parameter), "{path}");
        assert!(reply.text().contains("NUL"), "{path}: {}", reply.text());
    }
    let reply = server.get(&format!("{jobs}?x%00ref=1"), &key);
    reply.assert_error(400, "invalid_query");
    // An id or a code in the path.
    for path in [
        "/workspaces/a%00b/jobs".to_string(),
        format!("{jobs}/{job}%00"),
        format!("{PORTS}/NL%00RTM"),
    ] {
        server.get(&path, &key).assert_error(400, "invalid_path");
    }
    // A login form.
    let reply = server.request(
        "POST",
        "/api/rest/1.0/sessions/admin",
        None,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        Some(b"password=a%00b"),
    );
    reply.assert_error(400, "invalid_query");
    // Any other control character is a value like another: no match.
    let reply = server.get(&format!("{jobs}?xref=%01"), &key);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json(), json!([]));
    let reply = server.get(&format!("{jobs}/{job}"), &key);
    assert_eq!(reply.status, 200, "{}", reply.text());
}

#[test]
fn a_repeated_api_key_is_accepted() {
    let server = Server::start();
    let key = server.admin_key();
    for query in [
        format!("api_key={key}&api_key={key}"),
        format!("api_key={key}&api_key=other"),
        format!("api_key=&api_key={key}"),
    ] {
        let reply = server.request("GET", &format!("{PORTS}?{query}"), None, &[], None);
        reply.assert_error(400, "invalid_query");
        assert_eq!(reply.error_field().as_deref(), Some("api_key"));
        // With a bearer key too: which of them would count?
        let reply = server.request(
            "GET",
            &format!("/v2/workspaces?{query}"),
            Some(&key),
            &[],
            None,
        );
        reply.assert_error(400, "invalid_query");
    }
    let reply = server.request("GET", &format!("{PORTS}?api_key={key}"), None, &[], None);
    assert_eq!(reply.status, 200, "{}", reply.text());
}

#[test]
fn a_key_sent_under_a_wrong_parameter_name_is_logged_verbatim() {
    let server = Server::start();
    let key = server.admin_key();
    let other = server.add_user("bystander", &[]);
    let dead = server.add_user("leaver", &[]);
    assert_eq!(
        server.delete("/api/rest/1.0/sessions/leaver", &dead).status,
        204
    );
    // Under a misspelt name, under a real parameter, with and without a
    // working key; a live key of another account too.
    let targets = [
        format!("{PORTS}?apikey={key}"),
        format!("{PORTS}?name={key}"),
        format!("/v2/workspaces?limit=5&token={other}"),
        format!("/healthz?session={key}"),
    ];
    for target in &targets {
        let reply = server.request("GET", target, None, &[], None);
        assert!(reply.status < 500, "{target}: {}", reply.text());
        let reply = server.request("GET", target, Some(&key), &[], None);
        assert!(reply.status < 500, "{target}: {}", reply.text());
    }
    // A value that is not a live key is logged as sent, for diagnosis.
    let reply = server.get(&format!("{PORTS}?name={dead}"), &key);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let reply = server.get(&format!("{PORTS}?name=Rotterdam"), &key);
    assert_eq!(reply.status, 200);
    let log = wait_for_log(&server, "name=Rotterdam");
    assert!(!log.contains(&key), "a live key reached the log:\n{log}");
    assert!(!log.contains(&other), "a live key reached the log:\n{log}");
    assert!(log.contains("apikey=REDACTED"), "{log}");
    assert!(log.contains("token=REDACTED"), "{log}");
    assert!(log.contains(&format!("name={dead}")), "{log}");
}

/// The server's log once a line holding `wanted` is in it (access lines are
/// written after the answer).
fn wait_for_log(server: &Server, wanted: &str) -> String {
    // The access log's writer flushes at least once a second; a busy machine
    // may take longer, so wait for the line (up to 30 s), not for a time.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let log = server.log_text();
        if log.contains(wanted) || std::time::Instant::now() >= deadline {
            return log;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
