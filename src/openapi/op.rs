//! One operation of the OpenAPI document: what is particular to it (summary,
//! parameters, body, answers, the reasons of its errors). A route declares its
//! [`Op`] beside its handler (see `src/routes.rs`); the statuses that follow
//! from what the route takes (400, 401, 404, 408, 413, 415, 500, 503, 507),
//! those any request may get (414, 431: a head over the server's limits) and
//! its security are added by [`Op::render`] from its method, path and access.

use serde_json::{Map, Value, json};

use super::schema::{array, body_of, closed, object, pascal};
use crate::auth::principal::Access;
use crate::http::Method;
use crate::listing::Generation;

/// The tags operations are grouped under.
pub mod tags {
    pub const SESSIONS: &str = "Sessions";
    pub const LOCATIONS: &str = "Location catalog";
    pub const ORGANIZATIONS: &str = "Organizations";
    pub const WORKSPACES: &str = "Workspaces";
    pub const DOCUMENTS: &str = "Jobs and documents";
    pub const CATALOGS: &str = "Catalogs";
    pub const SYNONYMS: &str = "Synonyms";
    pub const FILES: &str = "Files and attachments";
    pub const CHANGES: &str = "Changes";
    pub const WEBHOOKS: &str = "Webhooks";
    pub const SERVICE: &str = "Service";
}

/// One operation: what is particular to it. The statuses that follow from what
/// it takes are added by [`Op::render`].
#[derive(Clone)]
pub struct Op {
    tag: &'static str,
    summary: String,
    uses_store: bool,
    parameters: Vec<Value>,
    body: Option<Value>,
    responses: Map<String, Value>,
    errors: Vec<(u16, Option<String>)>,
}

impl Op {
    pub fn new(tag: &'static str, summary: impl Into<String>) -> Op {
        Op {
            tag,
            summary: summary.into(),
            uses_store: true,
            parameters: Vec::new(),
            body: None,
            responses: Map::new(),
            errors: Vec::new(),
        }
    }

    /// Answered from memory: cannot fail on the store.
    pub fn without_store(mut self) -> Op {
        self.uses_store = false;
        self
    }

    pub fn parameters(mut self, parameters: impl IntoIterator<Item = Value>) -> Op {
        self.parameters.extend(parameters);
        self
    }

    pub fn body(mut self, media_type: &str, schema: Value, extra: Value) -> Op {
        let mut media = json!({"schema": schema});
        if let (Value::Object(media), Value::Object(extra)) = (&mut media, extra) {
            media.extend(extra);
        }
        self.body = Some(json!({"required": true, "content": {media_type: media}}));
        self
    }

    pub fn json_body(self, schema: Value) -> Op {
        self.body("application/json", schema, json!({}))
    }

    /// One part named `file`.
    pub fn upload_body(self) -> Op {
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
    pub fn answer(
        mut self,
        status: u16,
        description: &str,
        content: Value,
        headers: &[&str],
    ) -> Op {
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
    pub fn ok(self, status: u16, description: &str, schema: Value) -> Op {
        self.answer(
            status,
            description,
            json!({"application/json": {"schema": schema}}),
            &[],
        )
    }

    /// A JSON array with the count of all matches in `X-Total-Count`, and
    /// the next page's link and cursor.
    pub fn list(self, description: &str, item: Value) -> Op {
        self.answer(
            200,
            description,
            json!({"application/json": {"schema": array(item)}}),
            &[
                "X-Total-Count",
                "X-Total-Count-Capped",
                "Link",
                "X-Next-Cursor",
            ],
        )
    }

    /// An error status this operation gives beyond those of its sort; several
    /// reasons for one status are joined.
    pub fn error(mut self, status: u16, reason: Option<&str>) -> Op {
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

    pub fn conflicts(self, reasons: &[&str]) -> Op {
        reasons
            .iter()
            .fold(self, |op, reason| op.error(409, Some(reason)))
    }

    /// The operation object of `method pattern` for a route of `access`.
    pub fn render(&self, method: Method, pattern: &str, access: Access) -> Value {
        let mut op = self.clone();
        let public = access == Access::Public;
        let has_path_parameters = pattern.contains('{');
        if has_path_parameters || !op.parameters.is_empty() || op.body.is_some() {
            op = op.error(400, None);
        }
        if !public {
            op = op.error(401, None);
            if has_path_parameters {
                op = op.error(404, None);
            }
        }
        if op.body.is_some() {
            op = op.error(408, None).error(413, None).error(415, None);
        }
        // Answered before any route is chosen, to a request line or a head
        // over the limits (`http::server`): any operation's request can be
        // made too long, and some within their parameters' declared lengths
        // (three text parameters of 4,000 four-byte characters).
        op = op.error(414, None).error(431, None);
        if op.uses_store {
            op = op.error(500, None);
            if method != Method::Get {
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
            "operationId": operation_id(method, pattern),
        });
        if public {
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
pub fn operation_id(method: Method, pattern: &str) -> String {
    let mut id = method.as_str().to_ascii_lowercase();
    for segment in pattern.split('/').filter(|s| !s.is_empty()) {
        match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) => id.push_str(&format!("By{}", pascal(name))),
            None => id.push_str(&pascal(segment)),
        }
    }
    id
}

// ---------------------------------------------------------------------------
// Error answers and headers, shared by every operation

/// Every error status an operation can give: the component it refers to.
pub const ERRORS: &[(u16, &str, &str)] = &[
    (
        400,
        "BadRequest",
        "The request is malformed or breaks a rule (`invalid_json`, `duplicate_field`, \
         `invalid_field`, `missing_field`, `unknown_field`, `invalid_query`, `invalid_path`, \
         `invalid_multipart`, `invalid_items`, `invalid_item_count`; `invalid_request` for a \
         head that is not valid HTTP/1.1); `field` names the input at fault",
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
        410,
        "CursorExpired",
        "The feed cursor is outside what the change log keeps (`cursor_expired`); the error \
         also holds `next`: list again, then continue from it",
    ),
    (
        413,
        "PayloadTooLarge",
        "The body is over the limit (`payload_too_large`)",
    ),
    (
        414,
        "UriTooLong",
        "The request's path and query are longer than 65,534 bytes (`uri_too_long`); the \
         connection is closed after the answer",
    ),
    (
        415,
        "UnsupportedMediaType",
        "The body's Content-Type is not the one this route takes (`unsupported_media_type`)",
    ),
    (
        416,
        "RangeNotSatisfiable",
        "The range is outside the file, or a position is too large to be one \
         (`range_not_satisfiable`)",
    ),
    (
        429,
        "TooManyRequests",
        "Too many failed logins from the client's address (`too_many_requests`); \
         `Retry-After` says when to try again",
    ),
    (
        431,
        "HeadersTooLarge",
        "The request's line and headers are larger than 64 KiB (`headers_too_large`), which \
         a request line over its own limit can also answer when it arrives in pieces; the \
         connection is closed after the answer",
    ),
    (
        500,
        "InternalError",
        "A fault in the server; the detail is in its log (`internal_error`)",
    ),
    (
        503,
        "Unavailable",
        "The server is shutting down or its database cannot be reached (`unavailable`), or \
         serving its limit of uploads, \
         connections or password checks at once (`busy`, with `Retry-After`)",
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

pub fn error_responses() -> Map<String, Value> {
    ERRORS
        .iter()
        .map(|(status, name, description)| {
            let mut response = json!({
                "description": description,
                "content": {"application/json": {"schema": super::schema::schema_ref("Error")}},
            });
            let header = match status {
                416 => Some("Content-Range"),
                429 | 503 => Some("Retry-After"),
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

pub fn headers() -> Value {
    let header =
        |description: &str, ty: &str| json!({"description": description, "schema": {"type": ty}});
    json!({
        "X-Total-Count": header(
            "Every match, before `limit`, `offset` and `after`: exact up to 1000; past that, \
             1000 with `X-Total-Count-Capped: true`",
            "integer",
        ),
        "X-Total-Count-Capped": header(
            "`true` when there are more than 1000 matches (`X-Total-Count` says 1000); absent \
             otherwise",
            "string",
        ),
        "Link": header(
            "`<PATH?...&after=CURSOR>; rel=\"next\"` (RFC 8288) when a next page exists: the \
             request's own parameters but `offset` and `after`, relative to the server",
            "string",
        ),
        "X-Next-Cursor": header(
            "The next page's `after`, when there is a next page",
            "string",
        ),
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
        "Retry-After": header("Seconds to wait before trying again", "integer"),
        "Cache-Control": header(
            "`private, no-cache` on downloads: a browser may keep the bytes, and checks them \
             with `If-None-Match` before use (every API answer is `no-store`)",
            "string",
        ),
        "X-Content-Type-Options": header("`nosniff`: the type is never guessed", "string"),
        "Content-Security-Policy": header(
            "`sandbox; default-src 'none'`: opened in a browser, the file runs and loads nothing",
            "string",
        ),
    })
}

// ---------------------------------------------------------------------------
// The five operations of a resource with an id

/// Create, list, read, patch and delete of a resource with an id, on a
/// generation. `read` is how a record answers in lists and creates, `one` (if
/// different) how it answers GET one, PATCH and DELETE; `conflicts` gives the
/// 409 reasons of POST, PATCH and DELETE.
pub struct Resource<'a> {
    pub tag: &'static str,
    pub noun: &'a str,
    pub generation: Generation,
    pub read: Value,
    pub one: Option<Value>,
    pub create: Value,
    pub patch: Value,
    pub parameters: Vec<Value>,
    pub conflicts: [&'a [&'a str]; 3],
}

/// The operations of a [`Resource`]: on the collection `list` and `create`;
/// on one record `get`, `patch` and `delete`.
pub struct ResourceOps {
    pub list: Op,
    pub create: Op,
    pub get: Op,
    pub patch: Op,
    pub delete: Op,
}

impl Resource<'_> {
    pub fn ops(self) -> ResourceOps {
        let noun = self.noun;
        let [on_create, on_patch, on_delete] = self.conflicts;
        let one = self.one.unwrap_or_else(|| self.read.clone());
        ResourceOps {
            list: Op::new(self.tag, format!("List {noun}s"))
                .parameters(self.parameters)
                .list("The matches, one page", self.read.clone()),
            create: Op::new(self.tag, format!("Create a {noun}"))
                .json_body(body_of(self.generation, self.create, true))
                .ok(201, "Created", self.read)
                .conflicts(on_create),
            get: Op::new(self.tag, format!("Read a {noun}")).ok(200, "The record", one.clone()),
            patch: Op::new(self.tag, format!("Change a {noun}"))
                .json_body(body_of(self.generation, self.patch, false))
                .ok(200, "The record as stored", one.clone())
                .conflicts(on_patch),
            delete: Op::new(self.tag, format!("Delete a {noun}"))
                .ok(200, "The last known record", one)
                .conflicts(on_delete),
        }
    }
}
