//! The OpenAPI document checked against the route table it is rendered from,
//! against JSON Schema's rules of references, and against the code whose
//! rules it states.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::op::ERRORS;
use crate::auth::principal::Access;
use crate::catalogs::CatalogName;
use crate::documents::kinds::{self, Type};
use crate::locations::model as location;

/// The document of the server's route table.
fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let table = crate::routes::table();
        super::document(crate::routes::operations(&table))
    })
}

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Every (path, method, operation) of the document.
fn operations() -> Vec<(&'static str, &'static str, &'static Value)> {
    let mut out = Vec::new();
    for (path, item) in document()["paths"].as_object().expect("paths") {
        for (key, op) in item.as_object().expect("path item") {
            if METHODS.contains(&key.as_str()) {
                out.push((path.as_str(), key.as_str(), op));
            } else {
                assert_eq!(key, "parameters", "unexpected key {key} under {path}");
            }
        }
    }
    out
}

#[test]
fn every_route_is_documented_and_every_operation_is_routed() {
    let table = crate::routes::table();
    let routed: BTreeSet<(String, String)> = table
        .iter()
        .map(|r| {
            (
                r.pattern.to_string(),
                r.method.as_str().to_ascii_lowercase(),
            )
        })
        .collect();
    let documented: BTreeSet<(String, String)> = operations()
        .into_iter()
        .map(|(path, method, _)| (path.to_string(), method.to_string()))
        .collect();
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    let unrouted: Vec<_> = documented.difference(&routed).collect();
    assert!(
        undocumented.is_empty() && unrouted.is_empty(),
        "routes missing from the document: {undocumented:?}\n\
         documented operations with no route: {unrouted:?}"
    );
    assert_eq!(routed.len(), table.len(), "a route is declared twice");
}

#[test]
fn security_follows_each_route_s_access_rule() {
    let doc = document();
    for route in crate::routes::table() {
        let method = route.method.as_str().to_ascii_lowercase();
        let op = &doc["paths"][route.pattern][&method];
        let at = format!("{method} {}", route.pattern);
        match route.access {
            Access::Public => assert_eq!(op["security"], json!([]), "{at}"),
            Access::Session => {
                assert!(op.get("security").is_none(), "{at} overrides security");
                assert!(op["responses"].get("401").is_some(), "{at} lacks 401");
            }
        }
    }
    assert_eq!(
        doc["security"],
        json!([{"sessionAuth": []}, {"bearerAuth": []}])
    );
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["sessionAuth"]["in"], "query");
    assert_eq!(schemes["sessionAuth"]["name"], "api_key");
    assert_eq!(schemes["bearerAuth"]["scheme"], "bearer");
}

#[test]
fn path_parameters_are_named_as_in_the_patterns() {
    for (path, item) in document()["paths"].as_object().unwrap() {
        let in_pattern: Vec<&str> = path
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .collect();
        let declared: Vec<&str> = item["parameters"]
            .as_array()
            .map(|params| {
                params
                    .iter()
                    .filter(|p| p["in"] == "path")
                    .inspect(|p| assert_eq!(p["required"], true, "{path}"))
                    .inspect(|p| assert!(p["schema"].is_object(), "{path}"))
                    .map(|p| p["name"].as_str().unwrap())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(in_pattern, declared, "{path}");
    }
}

fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("$ref", Value::String(target)) => out.push(target),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn every_ref_resolves_to_a_component() {
    let doc = document();
    let mut found = Vec::new();
    refs(doc, &mut found);
    assert!(found.len() > 100);
    for target in found {
        let pointer = target
            .strip_prefix('#')
            .filter(|p| p.starts_with("/components/"))
            .unwrap_or_else(|| panic!("{target} is not a local component"));
        assert!(doc.pointer(pointer).is_some(), "{target} does not resolve");
    }
}

#[test]
fn every_operation_answers_success_and_errors_in_the_error_schema() {
    let doc = document();
    let mut ids = BTreeSet::new();
    for (path, method, op) in operations() {
        let at = format!("{method} {path}");
        assert!(ids.insert(op["operationId"].as_str().unwrap()), "{at}: id");
        assert!(
            op["summary"].as_str().is_some_and(|s| !s.is_empty()),
            "{at}"
        );
        let responses = op["responses"].as_object().unwrap();
        assert!(responses.keys().any(|s| s.starts_with('2')), "{at}");
        for (status, response) in responses {
            let code: u16 = status.parse().unwrap();
            if code < 400 {
                continue;
            }
            let target = response["$ref"]
                .as_str()
                .unwrap_or_else(|| panic!("{at} {status}"));
            let component = doc.pointer(&target[1..]).unwrap();
            assert_eq!(
                component["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/Error",
                "{at} {status}"
            );
            assert!(
                ERRORS
                    .iter()
                    .any(|(s, name, _)| *s == code && target.ends_with(name)),
                "{at} {status} -> {target}"
            );
        }
        if path.contains('{') && op.get("security").is_none() {
            assert!(responses.contains_key("404"), "{at}");
        }
        if op.get("requestBody").is_some() {
            for status in ["400", "413", "415"] {
                assert!(responses.contains_key(status), "{at} {status}");
            }
        }
        // Any request line or head can be made too long.
        for status in ["414", "431"] {
            assert!(responses.contains_key(status), "{at} {status}");
        }
    }
}

#[test]
fn lists_answer_x_total_count_and_downloads_their_headers() {
    for (path, method, op) in operations() {
        let ok = &op["responses"]["200"];
        let is_list = ok["content"]["application/json"]["schema"]["type"] == "array"
            && method == "get"
            && !path.ends_with("}");
        if is_list {
            assert!(ok["headers"].get("X-Total-Count").is_some(), "{path}");
        }
        if path.ends_with("/content") {
            for header in ["ETag", "Content-Disposition"] {
                assert!(ok["headers"].get(header).is_some(), "{path} {header}");
            }
            assert!(
                op["responses"]["206"]["headers"]
                    .get("Content-Range")
                    .is_some()
            );
            assert!(op["responses"].get("416").is_some());
        }
    }
}

#[test]
fn the_named_components_are_present() {
    let schemas = &document()["components"]["schemas"];
    for name in [
        "LocationWrite",
        "Location",
        "LocationSearchResult",
        "ResourceStatus",
        "Session",
        "Error",
        "Health",
        "Envelope",
        "V2Envelope",
        "Workspace",
        "Organization",
        "Job",
        "LoadPortInformation",
        "QuantityResult",
        "QualityResult",
        "TimeLog",
        "Measurement",
        "CatalogItem",
        "CatalogReference",
        "Synonym",
        "FileDescriptor",
        "Attachment",
        "Webhook",
        "WebhookWrite",
        "WebhookDelivery",
    ] {
        assert!(schemas[name].is_object(), "{name}");
    }
    assert_eq!(schemas["CatalogReference"]["oneOf"][0]["type"], "string");
    assert_eq!(schemas["CatalogReference"]["oneOf"][1]["type"], "object");
}

#[test]
fn document_kind_schemas_follow_their_tables() {
    let schemas = &document()["components"]["schemas"];
    for kind in kinds::ALL {
        let name = kind.schema_name();
        let read = &schemas[&name];
        let write = &schemas[&format!("{name}Write")];
        let names: Vec<&str> = kind.fields.iter().map(|f| f.name).collect();
        let read_names: Vec<&str> = read["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(read_names, names, "{name}");
        for path in kind.required {
            let mut schema = read;
            for part in path.split('.') {
                assert!(
                    schema["required"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|r| r == part),
                    "{name}: {path}"
                );
                schema = &schema["properties"][part];
            }
        }
        for field in kind.fields {
            if let Type::Enum(values) = field.ty {
                assert_eq!(read["properties"][field.name]["enum"], json!(values));
            }
        }
        for (alias, _) in kind.aliases {
            assert!(write["properties"].get(*alias).is_some(), "{name}: {alias}");
        }
        assert_eq!(write["additionalProperties"], false);
    }
    assert_eq!(
        schemas["Job"]["properties"]["status"]["enum"],
        json!(kinds::JOB_STATUSES)
    );
    assert_eq!(
        schemas["QualityResult"]["properties"]["test"]["$ref"],
        "#/components/schemas/ResolvedReference"
    );
    assert_eq!(
        schemas["JobWrite"]["properties"]["location"]["anyOf"][0]["$ref"],
        "#/components/schemas/CatalogReference"
    );
    assert_eq!(
        schemas["QuantityResult"]["properties"]["measurements"]["items"]["$ref"],
        "#/components/schemas/Measurement"
    );
}

#[test]
fn webhook_write_lists_the_fields_validation_takes() {
    let schemas = &document()["components"]["schemas"];
    let write = &schemas["WebhookWrite"];
    let names: Vec<&str> = write["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, crate::webhooks::WRITE_FIELDS);
    assert_eq!(write["additionalProperties"], false);
    let types = &schemas["Webhook"]["properties"]["event_types"]["items"]["anyOf"][0]["enum"];
    assert_eq!(types, &json!(crate::changes::event_types()));
    let secret = &schemas["Webhook"];
    assert!(
        !secret["required"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "secret"),
        "the secret is in two answers only"
    );
}

#[test]
fn location_write_lists_the_write_fields_in_order() {
    let schema = &document()["components"]["schemas"]["LocationWrite"];
    let names: Vec<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .take(location::WRITE_FIELDS.len())
        .collect();
    assert_eq!(names, location::WRITE_FIELDS);
    assert_eq!(schema["required"], json!(["name"]));
}

/// Every `ApiError::conflict("code", ...)` in the source is named in the
/// document, so a new 409 rule cannot go undocumented.
#[test]
fn every_conflict_code_of_the_source_is_documented() {
    fn walk(dir: &std::path::Path, codes: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, codes);
            } else if path.extension().is_some_and(|e| e == "rs")
                && !path.ends_with("openapi/tests.rs")
                && !path.ends_with("error.rs")
            {
                let text = std::fs::read_to_string(&path).unwrap();
                for (at, _) in text.match_indices("conflict(") {
                    let rest = text[at + "conflict(".len()..].trim_start();
                    if let Some(code) = rest.strip_prefix('"').and_then(|r| r.split('"').next()) {
                        codes.insert(code.to_string());
                    }
                }
            }
        }
    }
    let mut codes = BTreeSet::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut codes,
    );
    assert!(codes.contains("workspace_not_empty"), "{codes:?}");
    let text = document().to_string();
    for code in codes {
        assert!(
            text.contains(&format!("`{code}`")),
            "409 `{code}` is not documented"
        );
    }
}

#[test]
fn catalog_names_in_paths_are_the_ones_the_server_takes() {
    let names: Vec<&str> = CatalogName::path_names().collect();
    for name in &names {
        assert!(CatalogName::from_path(name).is_some(), "{name}");
    }
    for catalog in CatalogName::ALL {
        assert!(names.contains(&catalog.key()));
    }
}

#[test]
fn the_document_is_openapi_3_1() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["title"], "Quayside");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(serde_json::to_vec(doc).is_ok());
}
