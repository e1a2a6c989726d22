//! The OpenAPI 3.1 document of every route of both services, served without a
//! key at `GET /openapi.json`.
//!
//! The document is built once, as a `serde_json::Value`, by small helpers
//! rather than one long literal: an [`Op`] says what is particular to an
//! operation (its success answers, bodies, query parameters, conflicts) and the
//! statuses every operation of its sort can give (400, 401, 404, 408, 413, 415, 500,
//! 503, 507) are added from what it takes. The schemas of the five document
//! kinds are derived from their tables in `documents/kinds.rs`, so they follow
//! validation. The tests at the end check the document against the route table
//! of `routes.rs`, both ways.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::app::Ctx;
use crate::catalogs::{self, CatalogName};
use crate::documents::kinds::{self, Field, Kind, Shape, Type};
use crate::error::ApiResult;
use crate::http::{Method, Response};
use crate::listing::{Generation, MAX_LIMIT, V2_DEFAULT_LIMIT};
use crate::locations::{self, model as location};
use crate::{attachments, organizations, workspaces};

use Generation::{Older, V2};
use Method::{Delete, Get, Patch, Post, Put};

/// `GET /openapi.json`: this service's OpenAPI document.
pub async fn serve(_ctx: Ctx) -> ApiResult<Response> {
    Ok(Response::json(200, document()))
}

/// The document, built on first use.
pub fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(build)
}

const SESSIONS: &str = "Sessions";
const LOCATIONS: &str = "Location catalog";
const ORGANIZATIONS: &str = "Organizations";
const WORKSPACES: &str = "Workspaces";
const DOCUMENTS: &str = "Jobs and documents";
const CATALOGS: &str = "Catalogs";
const SYNONYMS: &str = "Synonyms";
const FILES: &str = "Files and attachments";
const SERVICE: &str = "Service";

/// Path names of the catalogs besides their keys.
const CATALOG_ALIASES: &[&str] = &["methods", "timelogEvents"];

fn build() -> Value {
    let mut paths = Paths::default();
    service_paths(&mut paths);
    session_paths(&mut paths);
    location_paths(&mut paths);
    workspace_paths(&mut paths);
    document_paths(&mut paths);
    file_paths(&mut paths);
    catalog_paths(&mut paths);
    synonym_paths(&mut paths);
    organization_paths(&mut paths);
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
                405 with `Allow`. The prose reference is docs/api.md.",
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
            tag(SERVICE, "Health and this document"),
        ],
        "security": [{"sessionAuth": []}, {"bearerAuth": []}],
        "paths": paths.0,
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
            "schemas": schemas(),
            "responses": error_responses(),
            "headers": headers(),
        },
    })
}

fn tag(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description})
}

// ---------------------------------------------------------------------------
// Schema helpers

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn string() -> Value {
    json!({"type": "string"})
}

fn uuid(description: &str) -> Value {
    describe(json!({"type": "string", "format": "uuid"}), description)
}

fn date_time(description: &str) -> Value {
    describe(
        json!({"type": "string", "format": "date-time"}),
        description,
    )
}

fn integer(min: i64, max: i64) -> Value {
    json!({"type": "integer", "minimum": min, "maximum": max})
}

fn one_of(values: &[&str]) -> Value {
    json!({"type": "string", "enum": values})
}

fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

/// Adds (or replaces) a description; an empty one adds nothing.
fn describe(mut schema: Value, description: &str) -> Value {
    if !description.is_empty() {
        schema["description"] = Value::from(description);
    }
    schema
}

/// An object with these properties, in this order.
fn object<S: Into<String>>(properties: Vec<(S, Value)>, required: &[&str]) -> Value {
    let properties: Map<String, Value> = properties
        .into_iter()
        .map(|(name, schema)| (name.into(), schema))
        .collect();
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// An object whose every property is always present (answers of the server).
fn record<S: Into<String>>(properties: Vec<(S, Value)>) -> Value {
    let properties: Vec<(String, Value)> = properties
        .into_iter()
        .map(|(name, schema)| (name.into(), schema))
        .collect();
    let names: Vec<String> = properties.iter().map(|(name, _)| name.clone()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    object(properties, &names)
}

/// The object admits no other property: request bodies refuse unknown fields.
fn closed(mut schema: Value) -> Value {
    schema["additionalProperties"] = Value::Bool(false);
    schema
}

/// The schema, or `null`: in request bodies `null` means "not set".
fn or_null(mut schema: Value) -> Value {
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.push(Value::Null);
    }
    match schema.get("type").cloned() {
        Some(Value::String(ty)) => {
            schema["type"] = json!([ty, "null"]);
            schema
        }
        _ => json!({"anyOf": [schema, {"type": "null"}]}),
    }
}

/// Every property of an object schema may also be `null`.
fn nullable_properties(mut schema: Value, except: &[&str]) -> Value {
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if !except.contains(&name.as_str()) {
                *property = or_null(property.take());
            }
        }
    }
    schema
}

/// Marks a dotted path (`sample.location`) as required in an object schema.
/// With `non_null`, the schema also refuses `null` there (a request overlay:
/// `null` counts as absent).
fn require(schema: &mut Value, path: &str, non_null: bool) {
    let (head, rest) = match path.split_once('.') {
        Some((head, rest)) => (head, Some(rest)),
        None => (path, None),
    };
    if !schema["required"].is_array() {
        schema["required"] = json!([]);
    }
    if let Some(required) = schema["required"].as_array_mut() {
        if !required.iter().any(|r| r == head) {
            required.push(Value::from(head));
        }
    }
    let property = &mut schema["properties"][head];
    match rest {
        Some(rest) => {
            if non_null {
                property["type"] = Value::from("object");
            }
            require(property, rest, non_null);
        }
        None if non_null => property["not"] = json!({"type": "null"}),
        None => {}
    }
}

/// `base` plus the required fields of a create.
fn with_required(base: Value, required: &[&str]) -> Value {
    if required.is_empty() {
        return base;
    }
    let mut overlay = json!({});
    for path in required {
        require(&mut overlay, path, true);
    }
    json!({"allOf": [base, overlay]})
}

/// `linked_item` or `synonymRecord` as `linked item`, `synonym record`.
fn words(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        match c {
            '_' => out.push(' '),
            c if c.is_ascii_uppercase() => {
                out.push(' ');
                out.push(c.to_ascii_lowercase());
            }
            c => out.push(c),
        }
    }
    out
}

/// `Camel Case`, `snake_case`, `kebab-case` or `1.0` as one PascalCase word.
fn pascal(text: &str) -> String {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Envelopes and bodies

/// The envelope of a generation around a body schema.
fn envelope(generation: Generation, body: &str, entity_type: &str) -> Value {
    match generation {
        Older => json!({"allOf": [
            schema_ref("Envelope"),
            {"properties": {"body": schema_ref(body)}},
        ]}),
        V2 => json!({"allOf": [
            schema_ref("V2Envelope"),
            {"properties": {"type": {"const": entity_type}, "body": schema_ref(body)}},
        ]}),
    }
}

/// A v2 request body: `{"body": {...}}`, or (`bare`) also the entity itself.
fn v2_body(entity: Value, bare: bool) -> Value {
    let wrapped = closed(object(vec![("body", entity.clone())], &["body"]));
    if bare {
        json!({"oneOf": [wrapped, entity]})
    } else {
        wrapped
    }
}

/// The request body of a create or patch in a generation.
fn body_of(generation: Generation, entity: Value, creating: bool) -> Value {
    match generation {
        Older => entity,
        V2 => v2_body(entity, creating),
    }
}

// ---------------------------------------------------------------------------
// Parameters

fn parameter(location: &str, name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "in": location, "description": description, "schema": schema})
}

fn query(name: &str, description: &str, schema: Value) -> Value {
    parameter("query", name, description, schema)
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

fn catalog_names() -> Vec<&'static str> {
    CatalogName::ALL
        .iter()
        .map(|c| c.key())
        .chain(CATALOG_ALIASES.iter().copied())
        .collect()
}

fn path_parameter(name: &str) -> (String, Value) {
    match name {
        "username" => (
            "An account's username: 1-64 characters of `A-Z a-z 0-9 . _ @ -`".into(),
            json!({"type": "string", "pattern": "^[A-Za-z0-9._@-]{1,64}$"}),
        ),
        "clientCode" => (
            "The record's code: 1-64 characters of `A-Z a-z 0-9 . _ -`, case-sensitive (400 otherwise)"
                .into(),
            json!({"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}),
        ),
        "file" => (
            "A file of the browser console; another name is 404".into(),
            one_of(&crate::console::files().collect::<Vec<_>>()),
        ),
        "catalog" | "xtype" => (
            "A catalog of the workspace; `methods` and `timelogEvents` are aliases of \
             `testMethods` and `eventTypes`; another name is 404"
                .into(),
            one_of(&catalog_names()),
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

/// `limit`, `offset`, `sort` and exact-match filters of a workspace-service list.
fn list_parameters(generation: Generation, filters: Vec<(String, Value)>) -> Vec<Value> {
    let mut limit = integer(0, MAX_LIMIT);
    let mut sort = json!({"type": "string", "examples": ["created_at:desc"]});
    if generation == V2 {
        limit["default"] = Value::from(V2_DEFAULT_LIMIT);
        sort["default"] = Value::from("created_at:desc,id:asc");
    }
    let mut params = vec![
        query(
            "limit",
            "Largest number of items to answer (older paths: all by default)",
            limit,
        ),
        query(
            "offset",
            "Items to skip",
            json!({"type": "integer", "minimum": 0, "default": 0}),
        ),
        query(
            "sort",
            "`field:asc|desc`, comma-separated, over `created_at`, `updated_at`, `id` and the \
             resource's fields (dotted for nested ones); ties are broken by `id`",
            sort,
        ),
    ];
    for (field, schema) in filters {
        let name = match generation {
            Older => field.clone(),
            V2 => format!("filter[body.{field}]"),
        };
        params.push(query(&name, &format!("Exact match on `{field}`"), schema));
    }
    params
}

/// Filters backed by columns: each field with the type its value is compared as.
fn filters(fields: &[(&str, &str)]) -> Vec<(String, Value)> {
    fields
        .iter()
        .map(|(name, ty)| (name.to_string(), json!({"type": ty})))
        .collect()
}

/// A document kind's filters: every scalar field of its body, dotted.
fn document_filters(fields: &'static [Field], prefix: &str, out: &mut Vec<(String, Value)>) {
    for field in fields {
        let path = crate::validate::join(prefix, field.name);
        let schema = match &field.ty {
            Type::Object(inner) => {
                document_filters(inner, &path, out);
                continue;
            }
            Type::Array(_) => continue,
            Type::Int | Type::Float => json!({"type": "number"}),
            Type::Bool => json!({"type": "boolean"}),
            Type::Enum(values) => one_of(values),
            _ => string(),
        };
        out.push((path, schema));
    }
}

// ---------------------------------------------------------------------------
// Operations and paths

/// One operation: what is particular to it. The statuses that follow from what
/// it takes are added by [`Op::render`].
struct Op {
    method: Method,
    tag: &'static str,
    summary: String,
    public: bool,
    uses_store: bool,
    parameters: Vec<Value>,
    body: Option<Value>,
    responses: Map<String, Value>,
    errors: Vec<(u16, Option<String>)>,
}

impl Op {
    fn new(method: Method, tag: &'static str, summary: impl Into<String>) -> Op {
        Op {
            method,
            tag,
            summary: summary.into(),
            public: false,
            uses_store: true,
            parameters: Vec::new(),
            body: None,
            responses: Map::new(),
            errors: Vec::new(),
        }
    }

    /// No session key needed.
    fn public(mut self) -> Op {
        self.public = true;
        self
    }

    /// Answered from memory: cannot fail on the store.
    fn without_store(mut self) -> Op {
        self.uses_store = false;
        self
    }

    fn parameters(mut self, parameters: impl IntoIterator<Item = Value>) -> Op {
        self.parameters.extend(parameters);
        self
    }

    fn body(mut self, media_type: &str, schema: Value, extra: Value) -> Op {
        let mut media = json!({"schema": schema});
        if let (Value::Object(media), Value::Object(extra)) = (&mut media, extra) {
            media.extend(extra);
        }
        self.body = Some(json!({"required": true, "content": {media_type: media}}));
        self
    }

    fn json_body(self, schema: Value) -> Op {
        self.body("application/json", schema, json!({}))
    }

    /// One part named `file`.
    fn upload_body(self) -> Op {
        let file = json!({
            "type": "string",
            "format": "binary",
            "contentMediaType": "application/octet-stream",
            "description": "The file; its name becomes `caption`, its Content-Type `format` \
                (else guessed from the name)",
        });
        self.body(
            "multipart/form-data",
            closed(object(vec![("file", file)], &["file"])),
            json!({"encoding": {"file": {"contentType": "*/*"}}}),
        )
    }

    /// An answer: status, description, content (a media type map) and headers.
    fn answer(mut self, status: u16, description: &str, content: Value, headers: &[&str]) -> Op {
        let mut response = json!({"description": description});
        if content.as_object().is_some_and(|c| !c.is_empty()) {
            response["content"] = content;
        }
        if !headers.is_empty() {
            let headers: Map<String, Value> = headers
                .iter()
                .map(|h| {
                    (
                        h.to_string(),
                        json!({"$ref": format!("#/components/headers/{h}")}),
                    )
                })
                .collect();
            response["headers"] = Value::Object(headers);
        }
        self.responses.insert(status.to_string(), response);
        self
    }

    /// A JSON answer.
    fn ok(self, status: u16, description: &str, schema: Value) -> Op {
        self.answer(
            status,
            description,
            json!({"application/json": {"schema": schema}}),
            &[],
        )
    }

    /// A JSON array with the count of all matches in `X-Total-Count`.
    fn list(self, description: &str, item: Value) -> Op {
        self.answer(
            200,
            description,
            json!({"application/json": {"schema": array(item)}}),
            &["X-Total-Count"],
        )
    }

    /// An error status this operation gives beyond those of its sort; several
    /// reasons for one status are joined.
    fn error(mut self, status: u16, reason: Option<&str>) -> Op {
        match self.errors.iter_mut().find(|(s, _)| *s == status) {
            Some((_, Some(existing))) => {
                if let Some(reason) = reason {
                    existing.push_str("; ");
                    existing.push_str(reason);
                }
            }
            Some((_, slot)) => *slot = reason.map(String::from),
            None => self.errors.push((status, reason.map(String::from))),
        }
        self
    }

    fn conflicts(self, reasons: &[&str]) -> Op {
        reasons
            .iter()
            .fold(self, |op, reason| op.error(409, Some(reason)))
    }

    fn render(self, pattern: &str) -> Value {
        let mut op = self;
        let has_path_parameters = pattern.contains('{');
        if has_path_parameters || !op.parameters.is_empty() || op.body.is_some() {
            op = op.error(400, None);
        }
        if !op.public {
            op = op.error(401, None);
            if has_path_parameters {
                op = op.error(404, None);
            }
        }
        if op.body.is_some() {
            op = op.error(408, None).error(413, None).error(415, None);
        }
        if op.uses_store {
            op = op.error(500, None);
            if op.method != Get {
                op = op.error(503, None).error(507, None);
            }
        }
        op.errors.sort_by_key(|(status, _)| *status);
        let mut responses = op.responses;
        for (status, reason) in op.errors {
            responses.insert(status.to_string(), error_reference(status, reason));
        }
        let mut rendered = json!({
            "tags": [op.tag],
            "summary": op.summary,
            "operationId": operation_id(op.method, pattern),
        });
        if op.public {
            rendered["security"] = json!([]);
        }
        if !op.parameters.is_empty() {
            rendered["parameters"] = Value::Array(op.parameters);
        }
        if let Some(body) = op.body {
            rendered["requestBody"] = body;
        }
        rendered["responses"] = Value::Object(responses);
        rendered
    }
}

/// `getWorkspacesByWorkspaceIdJobs`: the method, then the path's segments.
fn operation_id(method: Method, pattern: &str) -> String {
    let mut id = method.as_str().to_ascii_lowercase();
    for segment in pattern.split('/').filter(|s| !s.is_empty()) {
        match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) => id.push_str(&format!("By{}", pascal(name))),
            None => id.push_str(&pascal(segment)),
        }
    }
    id
}

/// The `paths` object, filled an operation at a time.
#[derive(Default)]
struct Paths(Map<String, Value>);

impl Paths {
    fn add(&mut self, pattern: &str, op: Op) {
        let item = self.0.entry(pattern).or_insert_with(|| {
            let parameters = path_parameters(pattern);
            if parameters.is_empty() {
                json!({})
            } else {
                json!({"parameters": parameters})
            }
        });
        let method = op.method.as_str().to_ascii_lowercase();
        let previous = item
            .as_object_mut()
            .and_then(|item| item.insert(method, op.render(pattern)));
        assert!(previous.is_none(), "{pattern} documented twice");
    }
}

// ---------------------------------------------------------------------------
// The paths of each part of the service

fn service_paths(p: &mut Paths) {
    p.add(
        "/healthz",
        Op::new(
            Get,
            SERVICE,
            "Liveness, for load balancers and install scripts",
        )
        .public()
        .without_store()
        .ok(200, "The server is up", schema_ref("Health")),
    );
    p.add(
        "/openapi.json",
        Op::new(Get, SERVICE, "This OpenAPI document")
            .public()
            .without_store()
            .ok(
                200,
                "The OpenAPI 3.1 document of every route",
                json!({"type": "object"}),
            ),
    );
    let if_none_match = || {
        parameter(
            "header",
            "If-None-Match",
            "The ETag of a copy held: 304 when it still matches",
            string(),
        )
    };
    let text = |media_types: &[&str]| {
        Value::Object(
            media_types
                .iter()
                .map(|m| (m.to_string(), json!({"schema": {"type": "string"}})))
                .collect(),
        )
    };
    p.add(
        "/",
        Op::new(Get, SERVICE, "The browser console's page")
            .public()
            .without_store()
            .parameters([if_none_match()])
            .answer(200, "The console (HTML)", text(&["text/html"]), &["ETag"])
            .answer(304, "Not modified: the ETag matches", json!({}), &["ETag"]),
    );
    p.add(
        "/console/{file}",
        Op::new(Get, SERVICE, "A file of the browser console")
            .public()
            .without_store()
            .parameters([if_none_match()])
            .answer(
                200,
                "The file",
                text(&["text/javascript", "text/css", "text/html"]),
                &["ETag"],
            )
            .answer(304, "Not modified: the ETag matches", json!({}), &["ETag"])
            .error(404, Some("Not one of the console's files")),
    );
}

fn session_paths(p: &mut Paths) {
    const SESSION: &str = "/api/rest/1.0/sessions/{username}";
    let form = closed(object(vec![("password", string())], &["password"]));
    p.add(
        SESSION,
        Op::new(Post, SESSIONS, "Log in: a session key for the account")
            .public()
            .body("application/x-www-form-urlencoded", form, json!({}))
            .ok(200, "The session", schema_ref("Session"))
            .error(
                401,
                Some("Unknown user or wrong password (the same answer for both)"),
            )
            .error(
                429,
                Some("5 failed logins within 5 minutes for this username"),
            ),
    );
    p.add(
        SESSION,
        Op::new(Delete, SESSIONS, "Log out: end the session of the key sent")
            .answer(204, "The key is dead from now on", json!({}), &[])
            .error(
                404,
                Some("`{username}` is not the key's account (the session is kept)"),
            ),
    );
}

fn location_paths(p: &mut Paths) {
    let mut codes = array(json!({"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}));
    codes["maxItems"] = Value::from(location::MAX_CLIENT_CODES);
    let client_codes = json!({
        "name": "clientCodes",
        "in": "query",
        "description": "Only these codes: a JSON array of at most 200",
        "content": {"application/json": {"schema": codes, "example": ["NLRTM", "BEANR"]}},
    });
    let search = vec![
        query(
            "page",
            "1-based page",
            json!({"type": "integer", "minimum": 1, "default": 1}),
        ),
        query("resultsPerPage", "Page size", {
            let mut size = integer(1, location::MAX_PAGE_SIZE);
            size["default"] = Value::from(location::DEFAULT_PAGE_SIZE);
            size
        }),
        query(
            "dateModifiedFrom",
            "Modified at or after (inclusive)",
            date_time("RFC 3339"),
        ),
        query(
            "dateModifiedTo",
            "Modified before (exclusive)",
            date_time("RFC 3339"),
        ),
        client_codes,
        query(
            "countryCode",
            "Exact ISO 3166-1 alpha-2 code",
            json!({"type": "string", "pattern": "^[A-Z]{2}$", "examples": ["NL"]}),
        ),
        query("statusCode", "Exact status", one_of(LOCATION_STATUSES)),
        query("name", "Case-insensitive substring of the name", string()),
    ];
    for catalog in locations::Catalog::ALL {
        let (collection, item) = catalog.patterns();
        let key = catalog.key();
        p.add(
            collection,
            Op::new(
                Get,
                LOCATIONS,
                format!("Search {key}, ordered by clientCode"),
            )
            .parameters(search.clone())
            .ok(
                200,
                "One page of matches",
                schema_ref("LocationSearchResult"),
            ),
        );
        p.add(
            item,
            Op::new(Get, LOCATIONS, format!("Read one of {key}")).ok(
                200,
                "The record",
                schema_ref("Location"),
            ),
        );
        p.add(
            item,
            Op::new(Put, LOCATIONS, format!("Create or replace one of {key}"))
                .json_body(schema_ref("LocationWrite"))
                .ok(
                    200,
                    "Replaced; the stored write shape",
                    schema_ref("LocationWrite"),
                )
                .ok(
                    201,
                    "Created; the stored write shape",
                    schema_ref("LocationWrite"),
                ),
        );
        p.add(
            item,
            Op::new(
                Delete,
                LOCATIONS,
                format!("Deactivate an active record of {key}, remove an inactive one"),
            )
            .ok(200, "What became of it", schema_ref("ResourceStatus")),
        );
    }
}

const LOCATION_STATUSES: &[&str] = &[location::STATUS_ACTIVE, location::STATUS_INACTIVE];

/// Create, list, read, patch and delete of a resource with an id, on a
/// generation. `read` is how a record answers in lists and creates, `one` (if
/// different) how it answers GET one, PATCH and DELETE; `conflicts` gives the
/// 409 reasons of POST, PATCH and DELETE.
struct Resource<'a> {
    tag: &'static str,
    noun: &'a str,
    generation: Generation,
    collection: &'a str,
    item: &'a str,
    read: Value,
    one: Option<Value>,
    create: Value,
    patch: Value,
    parameters: Vec<Value>,
    conflicts: [&'a [&'a str]; 3],
}

impl Resource<'_> {
    fn add_to(self, p: &mut Paths) {
        let noun = self.noun;
        let [on_create, on_patch, on_delete] = self.conflicts;
        let one = self.one.unwrap_or_else(|| self.read.clone());
        p.add(
            self.collection,
            Op::new(Get, self.tag, format!("List {noun}s"))
                .parameters(self.parameters)
                .list("The matches, one page", self.read.clone()),
        );
        p.add(
            self.collection,
            Op::new(Post, self.tag, format!("Create a {noun}"))
                .json_body(body_of(self.generation, self.create, true))
                .ok(201, "Created", self.read)
                .conflicts(on_create),
        );
        p.add(
            self.item,
            Op::new(Get, self.tag, format!("Read a {noun}")).ok(200, "The record", one.clone()),
        );
        p.add(
            self.item,
            Op::new(Patch, self.tag, format!("Change a {noun}"))
                .json_body(body_of(self.generation, self.patch, false))
                .ok(200, "The record as stored", one.clone())
                .conflicts(on_patch),
        );
        p.add(
            self.item,
            Op::new(Delete, self.tag, format!("Delete a {noun}"))
                .ok(200, "The last known record", one)
                .conflicts(on_delete),
        );
    }
}

fn workspace_paths(p: &mut Paths) {
    for (generation, collection, item) in [
        (Older, "/workspaces", "/workspaces/{workspace_id}"),
        (V2, "/v2/workspaces", "/v2/workspaces/{workspace_id}"),
    ] {
        let fields = filters(&[
            ("description", "string"),
            ("parties.client.id", "string"),
            ("parties.client.xref", "string"),
            ("parties.vendor.id", "string"),
            ("parties.vendor.xref", "string"),
        ]);
        Resource {
            tag: WORKSPACES,
            noun: "workspace",
            generation,
            collection,
            item,
            read: envelope(generation, "Workspace", workspaces::ENTITY_TYPE),
            one: None,
            create: schema_ref("WorkspaceWrite"),
            patch: schema_ref("WorkspaceWrite"),
            parameters: list_parameters(generation, fields),
            conflicts: [
                &[],
                &[],
                &["`workspace_not_empty`: the workspace holds documents"],
            ],
        }
        .add_to(p);
    }
}

fn organization_paths(p: &mut Paths) {
    let mut parameters = list_parameters(
        V2,
        filters(&[
            ("name", "string"),
            ("category", "string"),
            ("audience", "string"),
        ]),
    );
    parameters.push(query("name", "Substring of the name, any case", string()));
    let mut categories = organizations::CATEGORIES.to_vec();
    categories.push("none");
    parameters.push(query(
        "category",
        "The category; `none` for organizations without one",
        one_of(&categories),
    ));
    let duplicate: &[&str] =
        &["`duplicate_name`: another organization has this name (ignoring case)"];
    Resource {
        tag: ORGANIZATIONS,
        noun: "organization",
        generation: V2,
        collection: "/v2/organizations",
        item: "/v2/organizations/{organization_id}",
        read: envelope(V2, "Organization", organizations::ENTITY_TYPE),
        one: None,
        create: with_required(schema_ref("OrganizationWrite"), &["name"]),
        patch: schema_ref("OrganizationWrite"),
        parameters,
        conflicts: [
            duplicate,
            duplicate,
            &["`organization_in_use`: a workspace names it as a party, or a job as client or vendor"],
        ],
    }
    .add_to(p);
}

fn catalog_paths(p: &mut Paths) {
    let duplicate: &[&str] = &["`duplicate_xref`: the catalog has a record with this xref"];
    Resource {
        tag: CATALOGS,
        noun: "catalog record",
        generation: Older,
        collection: "/workspaces/{workspace_id}/catalogs/{catalog}",
        item: "/workspaces/{workspace_id}/catalogs/{catalog}/{id}",
        read: envelope(Older, "CatalogItem", ""),
        one: Some(schema_ref("CatalogItem")),
        create: schema_ref("CatalogItemWrite"),
        patch: schema_ref("CatalogItemWrite"),
        parameters: list_parameters(
            Older,
            filters(&[
                ("name", "string"),
                ("xref", "string"),
                ("ownerParty", "string"),
            ]),
        ),
        conflicts: [
            duplicate,
            duplicate,
            &["`catalog_item_in_use`: a document refers to the record"],
        ],
    }
    .add_to(p);
}

fn synonym_paths(p: &mut Paths) {
    const LINKS: &str = "/workspaces/{workspace_id}/catalogs/{catalog}/{recordId}/synonyms";
    const LINK: &str =
        "/workspaces/{workspace_id}/catalogs/{catalog}/{recordId}/synonyms/{synonymRecordId}";
    const V2_LINKS: &str = "/v2/workspaces/{workspace_id}/xrefs/{xtype}/{xref_id}/synonyms";
    const V2_LINK: &str =
        "/v2/workspaces/{workspace_id}/xrefs/{xtype}/{xref_id}/synonyms/{linked_item_id}";
    let older = envelope(Older, "Synonym", "");
    let v2 = envelope(V2, "Synonym", catalogs::synonyms::ENTITY_TYPE);
    let link = |op: Op, schema: &Value| {
        op.ok(201, "Linked", schema.clone()).ok(
            200,
            "Already linked (either order): the existing link",
            schema.clone(),
        )
    };
    p.add(
        LINKS,
        Op::new(Get, SYNONYMS, "Ids of the records linked to a record")
            .parameters(list_parameters(Older, Vec::new()))
            .list("Record ids", uuid("A linked record")),
    );
    p.add(
        LINK,
        link(Op::new(Post, SYNONYMS, "Link two records"), &older),
    );
    p.add(
        LINK,
        Op::new(
            Get,
            SYNONYMS,
            "The link between two records (404 when not linked)",
        )
        .ok(200, "The link", older),
    );
    p.add(
        LINK,
        Op::new(Delete, SYNONYMS, "Unlink two records (404 when not linked)").ok(
            200,
            "The body of the record that was unlinked",
            schema_ref("CatalogItem"),
        ),
    );
    let mut workspace_links = list_parameters(V2, Vec::new());
    workspace_links.push(query("xtype", "Only links of this catalog", {
        let mut names = path_parameter("xtype").1;
        names["description"] = Value::from("A catalog name");
        names
    }));
    p.add(
        "/v2/workspaces/{workspace_id}/synonyms",
        Op::new(Get, SYNONYMS, "Every link of a workspace")
            .parameters(workspace_links)
            .list("The links", v2.clone()),
    );
    p.add(
        V2_LINKS,
        Op::new(Get, SYNONYMS, "The links of one record")
            .parameters(list_parameters(V2, Vec::new()))
            .list("The links", v2.clone()),
    );
    p.add(
        V2_LINK,
        link(Op::new(Post, SYNONYMS, "Link two records"), &v2),
    );
    p.add(
        V2_LINK,
        Op::new(Delete, SYNONYMS, "Unlink two records (404 when not linked)").ok(
            200,
            "The last known link",
            v2,
        ),
    );
}

/// The older-path patterns of a document kind, as `routes.rs` registers them.
fn document_patterns(kind: &Kind) -> (String, String) {
    let parent = if kind.is_job() {
        "/workspaces/{workspace_id}".to_string()
    } else {
        "/workspaces/{workspace_id}/jobs/{job_id}".to_string()
    };
    let collection = format!("{parent}/{}", kind.path);
    let item = format!("{collection}/{{{}}}", kind.id_param);
    (collection, item)
}

/// The component name of a kind: its noun in PascalCase (`TimeLog`).
fn kind_schema(kind: &Kind) -> String {
    pascal(kind.noun)
}

/// How an answer of this shape looks for a kind.
fn shaped(shape: Shape, schema: &str) -> Value {
    match shape {
        Shape::Body => schema_ref(schema),
        Shape::Envelope => envelope(Older, schema, ""),
        Shape::EnvelopeInArray => {
            let mut one = array(envelope(Older, schema, ""));
            one["minItems"] = Value::from(1);
            one["maxItems"] = Value::from(1);
            one
        }
    }
}

/// The 409 reasons of POST, PATCH and DELETE, from the kind's rules (`rules.rs`).
fn document_conflicts(kind: &Kind) -> [&'static [&'static str]; 3] {
    const INCOMPLETE: &str = "`job_incomplete`: moving to `complete` without what was requested";
    const DIRECTION: &str =
        "`duplicate_direction`: the job has a quantity result for this direction";
    const HAS_FILES: &str = "`document_has_attachments`: delete its attachments first";
    const PARENT: &str = "`document_in_use`: a job names it as its `parent`";
    if kind.is_job() {
        [
            &[INCOMPLETE],
            &[
                "`invalid_status_transition`: not an allowed status change",
                INCOMPLETE,
            ],
            &[
                "`job_not_empty`: the job has results, time logs or files",
                PARENT,
            ],
        ]
    } else if kind.key == kinds::QUANTITY_RESULT.key {
        [&[DIRECTION], &[DIRECTION], &[PARENT, HAS_FILES]]
    } else {
        [&[], &[], &[PARENT, HAS_FILES]]
    }
}

fn document_paths(p: &mut Paths) {
    for kind in kinds::ALL {
        let (collection, item) = document_patterns(kind);
        let name = kind_schema(kind);
        let write = format!("{name}Write");
        let mut filters = Vec::new();
        document_filters(kind.fields, "", &mut filters);
        let noun = kind.noun;
        let [on_create, on_patch, on_delete] = document_conflicts(kind);
        let summary = |verb: &str| format!("{verb} {noun}");
        p.add(
            &collection,
            Op::new(Get, DOCUMENTS, format!("List {noun} documents"))
                .parameters(list_parameters(Older, filters))
                .list("`{id, body}` envelopes", envelope(Older, &name, "")),
        );
        p.add(
            &collection,
            Op::new(Post, DOCUMENTS, summary("Create"))
                .json_body(with_required(schema_ref(&write), kind.required))
                .ok(201, "Created", envelope(Older, &name, ""))
                .conflicts(on_create),
        );
        p.add(
            &item,
            Op::new(Get, DOCUMENTS, summary("Read")).ok(
                200,
                "The document",
                shaped(kind.get_shape, &name),
            ),
        );
        p.add(
            &item,
            Op::new(Patch, DOCUMENTS, summary("Merge-patch (RFC 7396)"))
                .json_body(schema_ref(&write))
                .ok(
                    200,
                    "The document as stored",
                    shaped(kind.patch_shape, &name),
                )
                .conflicts(on_patch),
        );
        p.add(
            &item,
            Op::new(Delete, DOCUMENTS, summary("Delete"))
                .ok(200, "The deleted body", schema_ref(&name))
                .conflicts(on_delete),
        );
    }
}

fn file_paths(p: &mut Paths) {
    let references: Vec<Value> = [
        "clientReferenceNumber",
        "vendorReferenceNumber",
        "description",
    ]
    .iter()
    .map(|name| {
        query(
            name,
            "Stored with the attachment",
            json!({"type": "string", "maxLength": 4000}),
        )
    })
    .collect();
    let files = "/workspaces/{workspace_id}/jobs/{job_id}/files";
    let attachments = "/v2/workspaces/{workspace_id}/documents/{document_id}/attachments";
    let fields = filters(&[
        ("caption", "string"),
        ("format", "string"),
        ("size", "number"),
        ("clientReferenceNumber", "string"),
        ("vendorReferenceNumber", "string"),
        ("description", "string"),
    ]);
    for (generation, collection, id, read, upload_parameters) in [
        (
            Older,
            files,
            "file_id",
            schema_ref("FileDescriptor"),
            Vec::new(),
        ),
        (
            V2,
            attachments,
            "attachment_id",
            envelope(V2, "Attachment", attachments::ENTITY_TYPE),
            references,
        ),
    ] {
        let item = format!("{collection}/{{{id}}}");
        p.add(
            collection,
            Op::new(Get, FILES, "List the files of a document")
                .parameters(list_parameters(generation, fields.clone()))
                .list("The files", read.clone()),
        );
        p.add(
            collection,
            Op::new(Post, FILES, "Upload a file (streamed; all or nothing)")
                .parameters(upload_parameters)
                .upload_body()
                .ok(201, "Stored", read.clone()),
        );
        p.add(
            &item,
            Op::new(Get, FILES, "Read a file's record").ok(200, "The record", read.clone()),
        );
        p.add(
            &format!("{item}/content"),
            content(Op::new(Get, FILES, "Download a file's bytes")),
        );
        p.add(
            &item,
            Op::new(Delete, FILES, "Delete a file and its bytes").ok(
                200,
                "The deleted record",
                read,
            ),
        );
    }
}

/// A download: conditional and single-range requests.
fn content(op: Op) -> Op {
    const WHOLE: &[&str] = &[
        "Content-Length",
        "Content-Disposition",
        "ETag",
        "Accept-Ranges",
    ];
    const PART: &[&str] = &[
        "Content-Length",
        "Content-Disposition",
        "ETag",
        "Accept-Ranges",
        "Content-Range",
    ];
    let bytes = json!({"*/*": {"schema": {"type": "string", "format": "binary"}}});
    op.parameters([
        parameter(
            "header",
            "If-None-Match",
            "The ETag of a copy held: 304 when it still matches",
            string(),
        ),
        parameter(
            "header",
            "Range",
            "One byte range (`bytes=a-b`, `bytes=a-`, `bytes=-n`); several are answered whole",
            string(),
        ),
    ])
    .answer(
        200,
        "The whole file, in its media type (`format`)",
        bytes.clone(),
        WHOLE,
    )
    .answer(206, "The requested range", bytes, PART)
    .answer(304, "Not modified: the ETag matches", json!({}), &["ETag"])
    .error(416, None)
}

// ---------------------------------------------------------------------------
// Components

const ERRORS: &[(u16, &str, &str)] = &[
    (
        400,
        "BadRequest",
        "The request is malformed or breaks a rule (`invalid_json`, `invalid_field`, \
         `missing_field`, `unknown_field`, `invalid_query`, `invalid_path`); `field` names the \
         input at fault",
    ),
    (
        401,
        "Unauthorized",
        "No key, or an unknown, expired or dead one (`unauthorized`)",
    ),
    (
        404,
        "NotFound",
        "No such record, or one the caller's tenant may not see (`not_found`)",
    ),
    (
        408,
        "RequestTimeout",
        "The request body stopped arriving (`request_timeout`)",
    ),
    (409, "Conflict", "The request conflicts with what is stored"),
    (
        413,
        "PayloadTooLarge",
        "The body is over the limit (`payload_too_large`)",
    ),
    (
        415,
        "UnsupportedMediaType",
        "The body's Content-Type is not the one this route takes (`unsupported_media_type`)",
    ),
    (
        416,
        "RangeNotSatisfiable",
        "The range is outside the file (`range_not_satisfiable`)",
    ),
    (
        429,
        "TooManyRequests",
        "Login lockout (`too_many_requests`)",
    ),
    (
        500,
        "InternalError",
        "A fault in the server; the detail is in its log (`internal_error`)",
    ),
    (
        503,
        "Unavailable",
        "The server is shutting down (`unavailable`)",
    ),
    (
        507,
        "InsufficientStorage",
        "The disk or data file is full; nothing was written (`insufficient_storage`)",
    ),
];

fn error_reference(status: u16, reason: Option<String>) -> Value {
    let name = ERRORS
        .iter()
        .find(|(s, _, _)| *s == status)
        .map_or("InternalError", |(_, name, _)| name);
    let mut reference = json!({"$ref": format!("#/components/responses/{name}")});
    if let Some(reason) = reason {
        reference["description"] = Value::from(reason);
    }
    reference
}

fn error_responses() -> Map<String, Value> {
    ERRORS
        .iter()
        .map(|(status, name, description)| {
            let mut response = json!({
                "description": description,
                "content": {"application/json": {"schema": schema_ref("Error")}},
            });
            let header = match status {
                416 => Some("Content-Range"),
                429 => Some("Retry-After"),
                _ => None,
            };
            if let Some(header) = header {
                response["headers"] =
                    json!({header: {"$ref": format!("#/components/headers/{header}")}});
            }
            (name.to_string(), response)
        })
        .collect()
}

fn headers() -> Value {
    let header =
        |description: &str, ty: &str| json!({"description": description, "schema": {"type": ty}});
    json!({
        "X-Total-Count": header("Every match, before `limit` and `offset`", "integer"),
        "ETag": header("The quoted SHA-256 of the bytes", "string"),
        "Content-Range": header(
            "`bytes a-b/SIZE` on 206; `bytes */SIZE` on 416",
            "string",
        ),
        "Content-Disposition": header(
            "`attachment` with an ASCII fallback name and the exact UTF-8 name",
            "string",
        ),
        "Content-Length": header("Bytes in this answer", "integer"),
        "Accept-Ranges": header("`bytes`", "string"),
        "Retry-After": header("Seconds to wait", "integer"),
    })
}

fn schemas() -> Map<String, Value> {
    let mut s = Map::new();
    let mut put = |name: &str, schema: Value| {
        s.insert(name.to_string(), schema);
    };
    put(
        "Error",
        record(vec![(
            "error",
            object(
                vec![
                    ("status", integer(400, 599)),
                    ("code", json!({"type": "string", "pattern": "^[a-z_]+$"})),
                    ("message", string()),
                    (
                        "field",
                        describe(
                            string(),
                            "The input at fault: a JSON path (`cargo.uom`, `$`) or a query \
                             parameter; present when one input is at fault",
                        ),
                    ),
                ],
                &["status", "code", "message"],
            ),
        )]),
    );
    put(
        "Health",
        record(vec![
            ("status", json!({"const": "ok"})),
            ("version", string()),
        ]),
    );
    put(
        "Session",
        record(vec![
            ("sessionName", json!({"const": "api_key"})),
            (
                "sessionId",
                describe(string(), "The key: 32 random bytes in unpadded base64url"),
            ),
            ("username", string()),
        ]),
    );
    location_schemas(&mut put);
    put(
        "Envelope",
        describe(
            record(vec![("id", uuid("")), ("body", json!({"type": "object"}))]),
            "The envelope of the older paths",
        ),
    );
    put(
        "V2Envelope",
        describe(
            record(vec![
                (
                    "type",
                    one_of(&[
                        workspaces::ENTITY_TYPE,
                        organizations::ENTITY_TYPE,
                        attachments::ENTITY_TYPE,
                        catalogs::synonyms::ENTITY_TYPE,
                    ]),
                ),
                ("id", uuid("")),
                ("body", json!({"type": "object"})),
                ("created_at", date_time("RFC 3339 UTC with milliseconds")),
                ("updated_at", date_time("RFC 3339 UTC with milliseconds")),
            ]),
            "The envelope of the v2 paths",
        ),
    );
    entity_schemas(&mut put);
    for kind in kinds::ALL {
        kind_schemas(kind, &mut s);
    }
    s
}

fn location_schemas(put: &mut impl FnMut(&str, Value)) {
    let text = |max: usize| json!({"type": "string", "maxLength": max});
    let mut fields: Vec<(String, Value)> = vec![
        (
            "name".into(),
            describe(
                json!({"type": "string", "minLength": 1, "maxLength": 256}),
                "Not blank",
            ),
        ),
        (
            "countryCode".into(),
            describe(
                json!({"type": "string", "pattern": "^[A-Z]{2}$"}),
                "ISO 3166-1 alpha-2, upper case, from the UN/LOCODE country list",
            ),
        ),
        ("geoRegionCode".into(), text(64)),
    ];
    for (axis, degrees, hemispheres, hemisphere) in [
        ("latitude", 90, ["N", "S"], "Ns"),
        ("longitude", 180, ["E", "W"], "We"),
    ] {
        let whole_degrees = describe(
            integer(0, degrees),
            "Whole degrees; at the maximum, minutes and seconds must be 0",
        );
        let seconds = json!({"type": "number", "minimum": 0, "exclusiveMaximum": 60});
        for (suffix, schema) in [
            ("Deg", whole_degrees),
            ("Min", integer(0, 59)),
            ("Sec", seconds),
            (hemisphere, one_of(&hemispheres)),
        ] {
            fields.push((format!("{axis}{suffix}"), schema));
        }
    }
    let mut status = one_of(LOCATION_STATUSES);
    status["default"] = Value::from(location::STATUS_ACTIVE);
    fields.push(("statusCode".into(), status));
    fields.push(("restrictions".into(), text(10_000)));
    fields.push(("generalComments".into(), text(10_000)));

    const SERVICE_FIELDS: &[&str] = &[
        "clientCode",
        "dateCreated",
        "creator",
        "dateModified",
        "modifier",
    ];
    let mut write = fields.clone();
    for name in SERVICE_FIELDS {
        let what = match *name {
            "clientCode" => "Must equal the path's when sent (so a read body can be sent back)",
            _ => "Read-only; accepted and ignored",
        };
        write.push((name.to_string(), json!({"description": what})));
    }
    let mut not_null = vec!["name"];
    not_null.extend(SERVICE_FIELDS);
    let write = closed(nullable_properties(object(write, &["name"]), &not_null));
    put(
        "LocationWrite",
        describe(write, "A location record as PUT takes it and answers it"),
    );

    let code = json!({"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"});
    let mut read = vec![("clientCode".to_string(), code.clone())];
    read.extend(fields);
    for (name, schema) in [
        ("dateCreated", date_time("RFC 3339 UTC with milliseconds")),
        ("creator", describe(string(), "Username")),
        ("dateModified", date_time("RFC 3339 UTC with milliseconds")),
        ("modifier", describe(string(), "Username")),
    ] {
        read.push((name.to_string(), schema));
    }
    not_null.push("statusCode");
    put(
        "Location",
        describe(
            nullable_properties(record(read), &not_null),
            "A location record as read; unset fields are null",
        ),
    );
    put(
        "LocationSearchResult",
        record(vec![
            (
                "totalResultsAvailable",
                describe(integer(0, i64::MAX), "Every match"),
            ),
            (
                "firstResultPosition",
                describe(integer(1, i64::MAX), "(page-1)*resultsPerPage+1"),
            ),
            (
                "resultsPerPage",
                describe(integer(1, location::MAX_PAGE_SIZE), "The page size used"),
            ),
            ("results", array(schema_ref("Location"))),
        ]),
    );
    put(
        "ResourceStatus",
        record(vec![
            ("clientCode", code),
            (
                "statusCode",
                describe(
                    one_of(&[location::STATUS_INACTIVE, "DELETED"]),
                    "INACTIVE: an active record was deactivated; DELETED: an inactive one was removed",
                ),
            ),
        ]),
    );
}

/// Workspaces, organizations, catalog records and references, synonyms and files.
fn entity_schemas(put: &mut impl FnMut(&str, Value)) {
    let nullable_string = || or_null(string());
    // A party and the parties as read (every key present) or as written.
    let party = |write: bool| {
        let properties = vec![
            ("id", or_null(uuid("An organization id"))),
            ("xref", nullable_string()),
        ];
        if write {
            or_null(closed(object(properties, &[])))
        } else {
            record(properties)
        }
    };
    let parties = |write: bool| {
        let properties = vec![("client", party(write)), ("vendor", party(write))];
        if write {
            or_null(closed(object(properties, &[])))
        } else {
            record(properties)
        }
    };
    put(
        "Workspace",
        record(vec![
            ("description", nullable_string()),
            ("parties", parties(false)),
        ]),
    );
    put(
        "WorkspaceWrite",
        describe(
            closed(object(
                vec![
                    ("description", nullable_string()),
                    ("parties", parties(true)),
                ],
                &[],
            )),
            "On create, `parties.client.id` or `parties.vendor.id` must be an organization of \
             the caller's tenant; on PATCH only `description` changes (`parties` is ignored)",
        ),
    );
    let category = || or_null(one_of(organizations::CATEGORIES));
    put(
        "Organization",
        record(vec![
            ("name", string()),
            ("audience", describe(string(), "The owning tenant")),
            ("category", category()),
        ]),
    );
    put(
        "OrganizationWrite",
        closed(object(
            vec![
                (
                    "name",
                    describe(string(), "Unique ignoring case; required on create"),
                ),
                ("category", category()),
                (
                    "audience",
                    describe(
                        nullable_string(),
                        "Set by the server; a body may repeat the current value only",
                    ),
                ),
            ],
            &[],
        )),
    );
    put(
        "CatalogItem",
        record(vec![
            ("name", nullable_string()),
            ("xref", nullable_string()),
            (
                "ownerParty",
                or_null(uuid("The caller's party organization, set by the server")),
            ),
        ]),
    );
    let bounded = |max: usize| or_null(json!({"type": "string", "maxLength": max}));
    put(
        "CatalogItemWrite",
        describe(
            closed(object(
                vec![
                    ("name", bounded(catalogs::store::NAME_MAX)),
                    (
                        "xref",
                        describe(
                            bounded(catalogs::store::XREF_MAX),
                            "Unique within the workspace's catalog",
                        ),
                    ),
                    (
                        "ownerParty",
                        json!({"description": "Set by the server; ignored"}),
                    ),
                ],
                &[],
            )),
            "A record needs a `name` or an `xref`",
        ),
    );
    put(
        "CatalogReference",
        json!({
            "description": "A record of a workspace catalog: its id, or an object found by \
                `xref` (else by `name`, ignoring case) and created when missing",
            "oneOf": [
                uuid("Id of an existing record of that catalog in the workspace"),
                closed(object(
                    vec![
                        ("id", uuid("Id of an existing record")),
                        ("xref", string()),
                        ("name", string()),
                    ],
                    &[],
                )),
            ],
        }),
    );
    put(
        "ResolvedReference",
        describe(
            record(vec![
                ("id", uuid("")),
                ("xref", nullable_string()),
                ("name", nullable_string()),
            ]),
            "A catalog record as quality results read references back",
        ),
    );
    put(
        "Synonym",
        record(vec![
            ("workspace", uuid("")),
            ("baseItem", uuid("")),
            ("linkedItem", uuid("")),
        ]),
    );
    let stored = || {
        vec![
            ("format", describe(string(), "Media type")),
            ("size", integer(0, i64::MAX)),
            (
                "sha256",
                json!({"type": "string", "pattern": "^[0-9a-f]{64}$"}),
            ),
        ]
    };
    let caption = || describe(string(), "The file name");
    let location = || uuid("Id of the stored bytes");
    put(
        "FileDescriptor",
        record(vec![
            ("id", uuid("Also the id of the v2 attachment")),
            ("caption", caption()),
            ("location", location()),
            ("body", record(stored())),
        ]),
    );
    let mut attachment = vec![
        ("workspace", uuid("")),
        ("document", uuid("")),
        ("caption", caption()),
        ("location", location()),
    ];
    attachment.extend(stored());
    for name in [
        "clientReferenceNumber",
        "vendorReferenceNumber",
        "description",
    ] {
        attachment.push((name, nullable_string()));
    }
    put("Attachment", record(attachment));
}

// ---------------------------------------------------------------------------
// Document kinds, from their tables

/// Which side of the wire a kind schema describes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// As read back; `expand` when references read back as `{id, xref, name}`.
    Read { expand: bool },
    /// As written: references by id or `{xref, name}`, `null` for "not set".
    Write,
}

impl Side {
    fn suffix(self) -> &'static str {
        match self {
            Side::Read { expand: false } => "",
            Side::Read { expand: true } => "Expanded",
            Side::Write => "Write",
        }
    }
}

fn kind_schemas(kind: &Kind, out: &mut Map<String, Value>) {
    let name = kind_schema(kind);
    let mut read = fields_schema(
        kind.fields,
        Side::Read {
            expand: kind.expand_references,
        },
        out,
    );
    for path in kind.required {
        require(&mut read, path, false);
    }
    read["description"] = Value::from(format!(
        "A {} as read back: the fields that are set, in this order (from documents/kinds.rs)",
        kind.noun
    ));
    let mut write = fields_schema(kind.fields, Side::Write, out);
    for (alias, canonical) in kind.aliases {
        let same = write["properties"][*canonical].clone();
        write["properties"][*alias] = describe(
            same,
            &format!("Alias of `{canonical}`, stored under that name; sending both is 400"),
        );
    }
    write["description"] = Value::from(format!(
        "A {} as written (POST, or a PATCH merge patch where `null` clears a field)",
        kind.noun
    ));
    out.insert(name.clone(), read);
    out.insert(format!("{name}Write"), write);
}

fn fields_schema(fields: &'static [Field], side: Side, out: &mut Map<String, Value>) -> Value {
    let properties = fields
        .iter()
        .map(|field| (field.name, type_schema(&field.ty, field.name, side, out)))
        .collect();
    let schema = object(properties, &[]);
    match side {
        Side::Read { .. } => schema,
        Side::Write => closed(nullable_properties(schema, &[])),
    }
}

fn type_schema(ty: &'static Type, name: &str, side: Side, out: &mut Map<String, Value>) -> Value {
    match ty {
        Type::Text => string(),
        Type::Stringified => match side {
            Side::Write => describe(
                json!({"type": ["string", "number", "boolean"]}),
                "Numbers and booleans are stored as their text",
            ),
            Side::Read { .. } => string(),
        },
        Type::Int => json!({"type": "integer"}),
        Type::Float => json!({"type": "number"}),
        Type::Bool => json!({"type": "boolean"}),
        Type::DateTime => date_time(match side {
            Side::Write => "RFC 3339 with any offset",
            Side::Read { .. } => "RFC 3339 UTC with milliseconds",
        }),
        Type::Enum(values) => one_of(values),
        Type::Catalog(catalog) => {
            let what = format!("A record of the `{}` catalog", catalog.key());
            match side {
                Side::Write => describe(schema_ref("CatalogReference"), &what),
                Side::Read { expand: true } => describe(schema_ref("ResolvedReference"), &what),
                Side::Read { expand: false } => uuid(&format!("{what}: its id")),
            }
        }
        Type::Organization => uuid("An organization id"),
        Type::DocumentId => uuid("A document id of this workspace"),
        Type::Object(fields) => fields_schema(fields, side, out),
        Type::Array(Type::Object(fields)) => {
            let component = format!(
                "{}{}",
                pascal(name.strip_suffix('s').unwrap_or(name)),
                side.suffix()
            );
            let schema = fields_schema(fields, side, out);
            debug_assert!(out.get(&component).is_none_or(|s| *s == schema));
            out.insert(component.clone(), schema);
            array(schema_ref(&component))
        }
        Type::Array(inner) => array(type_schema(inner, name, side, out)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::app::Access;

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
        let router = crate::routes::table();
        let routed: BTreeSet<(String, String)> = router
            .routes()
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
        assert_eq!(routed.len(), router.routes().count());
    }

    #[test]
    fn security_follows_each_route_s_access_rule() {
        let doc = document();
        for route in crate::routes::table().routes() {
            let method = route.method.as_str().to_ascii_lowercase();
            let op = &doc["paths"][route.pattern][&method];
            let at = format!("{method} {}", route.pattern);
            match route.target.access {
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
            let name = kind_schema(kind);
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
                    && !path.ends_with("openapi.rs")
                    && !path.ends_with("error.rs")
                {
                    let text = std::fs::read_to_string(&path).unwrap();
                    for (at, _) in text.match_indices("conflict(") {
                        let rest = text[at + "conflict(".len()..].trim_start();
                        if let Some(code) = rest.strip_prefix('"').and_then(|r| r.split('"').next())
                        {
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
        let names = catalog_names();
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
}
