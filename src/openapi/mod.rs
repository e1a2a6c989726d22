//! The OpenAPI 3.1 document of every route of both services, served without a
//! key at `GET /openapi.json`.
//!
//! There is no list of paths here: [`document`] renders the route table
//! (`src/routes.rs`), where each route declares its operation ([`Op`]) beside
//! its handler. This module holds what routes share: the operation builder and
//! the error answers (`op.rs`), schema helpers (`schema.rs`), the component
//! schemas (`components.rs`), the tags, and the path parameters described by
//! their names.

pub mod components;
pub mod op;
pub mod schema;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value, json};

use crate::auth::principal::Access;
use crate::catalogs::CatalogName;
use crate::http::Method;
use crate::locations::model as location;
use op::Op;
use op::tags::*;
use schema::{one_of, parameter, words};

/// What the document needs of one route.
pub struct Operation<'a> {
    pub method: Method,
    pub pattern: &'a str,
    pub access: Access,
    pub op: &'a Op,
}

/// The document of these routes, in their order.
pub fn document<'a>(routes: impl IntoIterator<Item = Operation<'a>>) -> Value {
    let mut paths = Map::new();
    for route in routes {
        let item = paths.entry(route.pattern).or_insert_with(|| {
            let parameters = path_parameters(route.pattern);
            if parameters.is_empty() {
                json!({})
            } else {
                json!({"parameters": parameters})
            }
        });
        let method = route.method.as_str().to_ascii_lowercase();
        let rendered = route.op.render(route.method, route.pattern, route.access);
        let previous = item
            .as_object_mut()
            .and_then(|item| item.insert(method, rendered));
        assert!(previous.is_none(), "{} documented twice", route.pattern);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Quayside",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "Location catalog and workspace integration services in one process",
            "description": "Every route of both services: the location catalog under \
                `/api/rest/1.0`, the workspace service at `/workspaces` (older paths) and `/v2`. \
                Log in with `POST /api/rest/1.0/sessions/{username}` and send the `sessionId` \
                as `Authorization: Bearer KEY` or as the query parameter `api_key`. Every answer \
                that is not 2xx has the `Error` body; a known path with another method answers \
                405 with `Allow`, and `OPTIONS` on any known path answers 204 with `Allow` (and, \
                when the server runs with `--cors-origin ORIGIN`, the CORS headers of a \
                preflight from exactly that origin). Every answer carries \
                `Cache-Control: no-store` except the console's files and downloads, which say \
                how they may be kept. JSON bodies are read strictly: a key given twice is a 400 \
                `duplicate_field`, an integer that a double cannot hold exactly a 400 \
                `invalid_field`. The prose reference is docs/api.md.",
            "license": {"name": "MIT", "identifier": "MIT"},
        },
        "tags": [
            tag(SESSIONS, "Login and logout; the session key"),
            tag(LOCATIONS, "Ports and inland facilities: two catalogs of one record shape"),
            tag(ORGANIZATIONS, "The v2 organization registry"),
            tag(WORKSPACES, "Workspaces on both path generations"),
            tag(DOCUMENTS, "Jobs, and the load port information, quantity and quality results and time logs of a job"),
            tag(CATALOGS, "The eight reference catalogs of a workspace"),
            tag(SYNONYMS, "Links between two records of one catalog"),
            tag(FILES, "Files of a job (older paths) and attachments of any document (v2): one set of records"),
            tag(WEBHOOKS, "Signed POSTs of the change log to a tenant's receivers, with retries and a delivery log"),
            tag(SERVICE, "Health and this document"),
        ],
        "security": [{"sessionAuth": []}, {"bearerAuth": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "sessionAuth": {
                    "type": "apiKey",
                    "in": "query",
                    "name": "api_key",
                    "description": "The `sessionId` of a login, as the query parameter `api_key`.",
                },
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The `sessionId` of a login, as `Authorization: Bearer KEY` \
                        (wins over `api_key` when both are sent).",
                },
            },
            "schemas": components::schemas(),
            "responses": op::error_responses(),
            "headers": op::headers(),
        },
    })
}

fn tag(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description})
}

fn path_parameters(pattern: &str) -> Vec<Value> {
    pattern
        .split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| {
            let (description, schema) = path_parameter(name);
            let mut param = parameter("path", name, &description, schema);
            param["required"] = Value::Bool(true);
            param
        })
        .collect()
}

fn path_parameter(name: &str) -> (String, Value) {
    match name {
        "username" => (
            "An account's username: 1-64 characters of `A-Z a-z 0-9 . _ @ -`".into(),
            json!({"type": "string", "pattern": "^[A-Za-z0-9._@-]{1,64}$"}),
        ),
        "clientCode" => (
            "The record's code: 1-64 characters of `A-Z a-z 0-9 . _ -`, case-sensitive, not `.` or `..` (400 otherwise)"
                .into(),
            json!({"type": "string", "pattern": location::CLIENT_CODE_PATTERN}),
        ),
        "file" => (
            "A file of the browser console; another name is 404".into(),
            one_of(&crate::console::files().collect::<Vec<_>>()),
        ),
        "catalog" | "xtype" => (
            "A catalog of the workspace; `methods` and `timelogEvents` are aliases of \
             `testMethods` and `eventTypes`; another name is 404"
                .into(),
            one_of(&CatalogName::path_names().collect::<Vec<_>>()),
        ),
        _ => {
            let what = name.trim_end_matches("_id").trim_end_matches("Id");
            let what = match what {
                "id" => "record".to_string(),
                _ => words(what),
            };
            let description =
                format!("Id (a UUID) of the {what}; an id that is not a UUID is not found (404)");
            (description, json!({"type": "string", "format": "uuid"}))
        }
    }
}
