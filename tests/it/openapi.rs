//! `GET /openapi.json` over real HTTP: served without a key, and the document
//! agrees with the running server. That every route is in the document (and
//! every documented operation routed) is checked against the route table by the
//! unit tests in `src/openapi.rs`; here the server itself is asked.

use crate::common::{Server, urlencode};
use serde_json::Value;

const METHODS: &[&str] = &["get", "put", "post", "delete", "patch"];

fn fetch(server: &Server) -> Value {
    let reply = server.request("GET", "/openapi.json", None, &[], None);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"));
    reply.json()
}

/// Every (path, method, operation) of the document.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            if METHODS.contains(&method.as_str()) {
                out.push((path.clone(), method.to_uppercase(), op.clone()));
            }
        }
    }
    out
}

/// A concrete path for a pattern: ids that exist nowhere, names that are valid.
fn concrete(pattern: &str) -> String {
    pattern
        .split('/')
        .map(|segment| match segment {
            "{clientCode}" => "NLRTM",
            "{username}" => "admin",
            "{catalog}" | "{xtype}" => "products",
            s if s.starts_with('{') => "00000000-0000-4000-8000-000000000000",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A value a parameter accepts, from its example or its schema.
fn sample(param: &Value) -> String {
    let example = param["content"]["application/json"]["example"].clone();
    if !example.is_null() {
        return example.to_string();
    }
    let schema = &param["schema"];
    let first = [
        &schema["examples"][0],
        &schema["enum"][0],
        &schema["default"],
    ]
    .into_iter()
    .find(|v| !v.is_null())
    .cloned();
    match (first, schema["type"].as_str(), schema["format"].as_str()) {
        (Some(Value::String(s)), _, _) => s,
        (Some(other), _, _) => other.to_string(),
        (None, _, Some("date-time")) => "2026-11-21T09:30:00Z".into(),
        (None, Some("integer" | "number"), _) => schema["minimum"]
            .as_i64()
            .map_or_else(|| "1".into(), |n| n.to_string()),
        (None, Some("boolean"), _) => "true".into(),
        _ => "x".into(),
    }
}

#[test]
fn the_document_is_served_without_a_key() {
    let server = Server::start();
    let doc = fetch(&server);
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["title"], "Quayside");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        doc["paths"]["/openapi.json"]["get"]["security"],
        serde_json::json!([])
    );
    assert!(doc["components"]["schemas"]["Error"].is_object());
    // A key, even a bad one, changes nothing on a public route.
    let with_key = server.request("GET", "/openapi.json", Some("not-a-key"), &[], None);
    assert_eq!(with_key.status, 200);
    assert_eq!(with_key.json(), doc);
}

#[test]
fn operations_that_need_a_key_answer_401_without_one() {
    let server = Server::start();
    let doc = fetch(&server);
    let mut checked = 0;
    for (path, method, op) in operations(&doc) {
        if op.get("security").is_some() {
            continue;
        }
        let reply = server.request(&method, &concrete(&path), None, &[], None);
        assert!(
            op["responses"].get("401").is_some(),
            "{method} {path} does not document 401"
        );
        reply.assert_error(401, "unauthorized");
        checked += 1;
    }
    assert!(checked > 60, "only {checked} operations checked");
}

#[test]
fn every_documented_query_parameter_is_accepted_and_others_refused() {
    let server = Server::start();
    let key = server.admin_key();
    let doc = fetch(&server);
    let mut checked = 0;
    for (path, method, op) in operations(&doc) {
        let params: Vec<&Value> = op["parameters"]
            .as_array()
            .map(|p| p.iter().filter(|p| p["in"] == "query").collect())
            .unwrap_or_default();
        if params.is_empty() {
            continue;
        }
        let base = concrete(&path);
        for param in params {
            let name = param["name"].as_str().expect("name");
            let value = sample(param);
            let url = format!("{base}?{}={}", urlencode(name), urlencode(&value));
            let reply = server.request(&method, &url, Some(&key), &[], None);
            if name == "after" {
                // A cursor comes from the list itself (this file has no
                // records to page through): a made-up one is known as a
                // cursor and refused as one, not as an unknown parameter.
                reply.assert_error(400, "invalid_query");
                assert!(
                    reply.text().contains("not a cursor"),
                    "{path}: {}",
                    reply.text()
                );
                checked += 1;
                continue;
            }
            assert_ne!(
                reply.status,
                400,
                "{method} {path}: documented ?{name}={value} refused: {}",
                reply.text()
            );
            checked += 1;
        }
        let url = format!("{base}?undocumented=1");
        server
            .request(&method, &url, Some(&key), &[], None)
            .assert_error(400, "invalid_query");
    }
    assert!(checked > 100, "only {checked} parameters checked");
}
