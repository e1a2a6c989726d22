//! The service's one error type, and the single place where each error becomes
//! a status code and the contract's error body
//! `{"error":{"status":N,"code":"...","message":"...","field":"..."}}` (with
//! `items` when the items of an array body failed, see [`ApiError::Items`]).
//!
//! Internal errors carry their detail only to the log: the client sees a plain
//! message, so nothing about the store or the code leaks through a 500. The
//! detail is the original error, kept with its `source()` chain, so the log
//! says what failed underneath (see [`chain`]).

use std::error::Error as StdError;
use std::fmt;

use serde_json::{Value, json};

/// Every way a request can fail. Domain code builds these; `http::response`
/// renders them through [`ApiError::status`] and [`ApiError::body`].
#[derive(Debug)]
pub enum ApiError {
    /// 400: the request is malformed or breaks a validation rule.
    BadRequest {
        code: &'static str,
        message: String,
        field: Option<String>,
    },
    /// 401: no key, an unknown key, an expired key, or bad credentials.
    Unauthorized(String),
    /// 404: unknown path or id, or something the caller's tenant may not see.
    NotFound(String),
    /// 405: the path exists but not with this method.
    MethodNotAllowed { allow: Vec<&'static str> },
    /// 408: the client stopped sending its body.
    RequestTimeout,
    /// 409: the request conflicts with what is stored.
    Conflict { code: &'static str, message: String },
    /// 400 `invalid_items` (409 `conflicting_items` when every failed item
    /// met a 409 rule): items of an array body that cannot be stored, each
    /// with its index and the error it alone would have had; nothing was
    /// stored. Made by [`ApiError::items`].
    Items {
        /// How many items the array holds.
        count: usize,
        /// The items that failed, in index order.
        failed: Vec<ItemError>,
        /// The first failed item's field from the body's root (`[3].setNumber`).
        field: String,
    },
    /// 410: a change-feed cursor older than what the log still keeps; the
    /// client lists again and continues from `next`.
    CursorExpired {
        since: u64,
        trimmed_through: u64,
        next: u64,
    },
    /// 413: the body is larger than the limit for this route.
    PayloadTooLarge { limit: u64 },
    /// 416: a `Range` outside a file of this many bytes.
    RangeNotSatisfiable { size: u64 },
    /// 414: a request line whose target is longer than `limit` bytes
    /// (answered for hyper, which refuses it before any handler runs).
    UriTooLong { limit: usize },
    /// 431: a request head larger than `limit` bytes (likewise).
    HeadersTooLarge { limit: usize },
    /// 415: the body is not of a media type this route takes.
    UnsupportedMediaType(String),
    /// 429: too many failed logins from the client's address; retry after
    /// the given number of seconds.
    TooManyRequests {
        retry_after_secs: u64,
        reason: Throttle,
    },
    /// 507: SQLite reported that the disk or the database file is full.
    StorageFull,
    /// 503: the server is shutting down or its writer is gone.
    Unavailable(String),
    /// 503: a bounded resource is in full use (`limit`: "32 uploads at
    /// once", "2 password checks at once and 16 waiting"); the client tries
    /// again after `retry_after_secs`.
    Busy {
        limit: String,
        retry_after_secs: u64,
    },
    /// 500: a bug or an environment failure; the detail (the original error,
    /// with its sources) is logged, never sent.
    Internal(BoxError),
}

pub type ApiResult<T> = Result<T, ApiError>;

/// Why a login was refused with 429 (see `auth::lockout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Throttle {
    /// 5 failures for this username from this address within 5 minutes.
    FailedLogins,
    /// The address spent its budget of failed logins per minute.
    Address,
}

/// One failed item of an array body: its index and its own error (a 400 or
/// a 409, its `field` relative to the item).
#[derive(Debug)]
pub struct ItemError {
    pub index: usize,
    pub error: ApiError,
}

/// Any error, kept whole: what [`ApiError::Internal`] holds.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// An error with a few words in front saying where it happened ("sqlite",
/// "connection pool"); its `source()` is the original error.
#[derive(Debug)]
pub struct Context {
    what: String,
    source: BoxError,
}

impl Context {
    pub fn new(what: impl Into<String>, source: impl Into<BoxError>) -> Context {
        Context {
            what: what.into(),
            source: source.into(),
        }
    }
}

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl StdError for Context {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.source)
    }
}

/// An error and all its sources in one line, outermost first: `a: b: c`. A
/// source whose message the line already holds (many errors repeat their
/// source's message in their own) is not written again.
pub fn chain(err: &(dyn StdError + 'static)) -> String {
    let mut line = err.to_string();
    let mut next = err.source();
    while let Some(source) = next {
        let message = source.to_string();
        if !line.contains(&message) {
            line.push_str(": ");
            line.push_str(&message);
        }
        next = source.source();
    }
    line
}

impl ApiError {
    /// A 400 about one input field (`field` is a JSON path or a parameter name).
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::BadRequest {
            code: "invalid_field",
            message: message.into(),
            field: Some(field.into()),
        }
    }

    /// A 400 about a query parameter.
    pub fn invalid_query(param: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::BadRequest {
            code: "invalid_query",
            message: message.into(),
            field: Some(param.into()),
        }
    }

    /// A 400 with a specific code and no single field at fault.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::BadRequest {
            code,
            message: message.into(),
            field: None,
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::NotFound(message.into())
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::Conflict {
            code,
            message: message.into(),
        }
    }

    /// The failed items of an array of `count` at `prefix` (`""`, or `body`
    /// for a wrapped v2 body); `failed` must not be empty.
    pub fn items(count: usize, failed: Vec<ItemError>, prefix: &str) -> Self {
        let first = failed.first();
        let mut field = format!("{prefix}[{}]", first.map_or(0, |f| f.index));
        if let Some(inner) = first.and_then(|f| f.error.field()).filter(|f| *f != "$") {
            field.push('.');
            field.push_str(inner);
        }
        ApiError::Items {
            count,
            failed,
            field,
        }
    }

    /// A 500 with a message for the log.
    pub fn internal(detail: impl fmt::Display) -> Self {
        ApiError::Internal(detail.to_string().into())
    }

    /// A 500 keeping `source` (and its own sources) for the log, with a few
    /// words of `context` in front.
    pub fn internal_from(context: impl Into<String>, source: impl Into<BoxError>) -> Self {
        ApiError::Internal(Box::new(Context::new(context, source)))
    }

    /// This error and its whole source chain in one line, as the log shows it
    /// (`internal error: sqlite: no such table: x: ...`).
    pub fn chain(&self) -> String {
        chain(self)
    }

    /// Seconds a client should wait before trying again, for the answers
    /// that say so (`Retry-After`).
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            ApiError::TooManyRequests {
                retry_after_secs, ..
            }
            | ApiError::Busy {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            _ => None,
        }
    }

    pub fn status(&self) -> u16 {
        match self {
            ApiError::BadRequest { .. } => 400,
            ApiError::Unauthorized(_) => 401,
            ApiError::NotFound(_) => 404,
            ApiError::MethodNotAllowed { .. } => 405,
            ApiError::RequestTimeout => 408,
            ApiError::Conflict { .. } => 409,
            ApiError::Items { failed, .. } => {
                if failed.iter().all(|f| f.error.status() == 409) {
                    409
                } else {
                    400
                }
            }
            ApiError::CursorExpired { .. } => 410,
            ApiError::PayloadTooLarge { .. } => 413,
            ApiError::UnsupportedMediaType(_) => 415,
            ApiError::RangeNotSatisfiable { .. } => 416,
            ApiError::UriTooLong { .. } => 414,
            ApiError::HeadersTooLarge { .. } => 431,
            ApiError::TooManyRequests { .. } => 429,
            ApiError::Internal(_) => 500,
            ApiError::Unavailable(_) | ApiError::Busy { .. } => 503,
            ApiError::StorageFull => 507,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::BadRequest { code, .. } | ApiError::Conflict { code, .. } => code,
            ApiError::Items { .. } if self.status() == 409 => "conflicting_items",
            ApiError::Items { .. } => "invalid_items",
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed { .. } => "method_not_allowed",
            ApiError::RequestTimeout => "request_timeout",
            ApiError::CursorExpired { .. } => "cursor_expired",
            ApiError::PayloadTooLarge { .. } => "payload_too_large",
            ApiError::UnsupportedMediaType(_) => "unsupported_media_type",
            ApiError::RangeNotSatisfiable { .. } => "range_not_satisfiable",
            ApiError::UriTooLong { .. } => "uri_too_long",
            ApiError::HeadersTooLarge { .. } => "headers_too_large",
            ApiError::TooManyRequests { .. } => "too_many_requests",
            ApiError::StorageFull => "insufficient_storage",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::Busy { .. } => "busy",
            ApiError::Internal(_) => "internal_error",
        }
    }

    /// The message a client sees. Internal detail is replaced by a plain sentence.
    pub fn message(&self) -> String {
        match self {
            ApiError::BadRequest { message, .. } | ApiError::Conflict { message, .. } => {
                message.clone()
            }
            ApiError::Items { count, failed, .. } => {
                let conflicts = failed.iter().filter(|f| f.error.status() == 409).count();
                let invalid = failed.len() - conflicts;
                let are = |n: usize| if n == 1 { "is" } else { "are" };
                let what = match (invalid, conflicts) {
                    (_, 0) => format!("{} invalid", are(invalid)),
                    (0, _) => format!("{} refused by what is stored", are(conflicts)),
                    _ => format!(
                        "cannot be stored ({invalid} invalid, {conflicts} refused by what is \
                         stored)"
                    ),
                };
                format!(
                    "{} of {count} items {what}; nothing was stored",
                    failed.len()
                )
            }
            ApiError::Unauthorized(m)
            | ApiError::NotFound(m)
            | ApiError::UnsupportedMediaType(m)
            | ApiError::Unavailable(m) => m.clone(),
            ApiError::MethodNotAllowed { allow } => {
                format!("Method not allowed here; allowed: {}", allow.join(", "))
            }
            ApiError::RequestTimeout => {
                "The request body stopped arriving; send it again in one go".into()
            }
            ApiError::PayloadTooLarge { limit } => {
                format!("Request body is larger than the limit of {limit} bytes")
            }
            ApiError::CursorExpired {
                since,
                trimmed_through,
                next,
            } => format!(
                "The cursor {since} is outside what the change log keeps (the changes after \
                 {trimmed_through}, up to {next}): list the records again, then continue the \
                 feed from `next` (since={next})"
            ),
            ApiError::UriTooLong { limit } => {
                format!("The request's path and query are longer than {limit} bytes")
            }
            ApiError::HeadersTooLarge { limit } => {
                format!("The request's line and headers are larger than {limit} bytes")
            }
            ApiError::RangeNotSatisfiable { size } => {
                format!("The requested range is outside the file ({size} bytes)")
            }
            ApiError::TooManyRequests {
                retry_after_secs,
                reason: Throttle::FailedLogins,
            } => format!(
                "Too many failed logins for this account from this address; try again in \
                 {retry_after_secs} seconds"
            ),
            ApiError::TooManyRequests {
                retry_after_secs,
                reason: Throttle::Address,
            } => format!(
                "Too many failed logins from this address; try again in {retry_after_secs} seconds"
            ),
            ApiError::StorageFull => {
                "The server's storage is full; nothing was written. Reads still work.".into()
            }
            ApiError::Busy {
                limit,
                retry_after_secs,
            } => format!(
                "The server is serving its limit of {limit}; try again in {retry_after_secs} \
                 seconds"
            ),
            ApiError::Internal(_) => "Internal server error".into(),
        }
    }

    pub fn field(&self) -> Option<&str> {
        match self {
            ApiError::BadRequest { field, .. } => field.as_deref(),
            ApiError::Items { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The contract's error body.
    pub fn body(&self) -> Value {
        let mut error = json!({
            "status": self.status(),
            "code": self.code(),
            "message": self.message(),
        });
        if let Some(field) = self.field() {
            error["field"] = Value::String(field.to_string());
        }
        if let ApiError::CursorExpired { next, .. } = self {
            error["next"] = json!(next);
        }
        if let ApiError::Items { failed, .. } = self {
            let items = failed.iter().map(|item| {
                let mut one = json!({
                    "index": item.index,
                    "status": item.error.status(),
                    "code": item.error.code(),
                    "message": item.error.message(),
                });
                if let Some(field) = item.error.field() {
                    one["field"] = Value::String(field.to_string());
                }
                one
            });
            error["items"] = Value::Array(items.collect());
        }
        json!({ "error": error })
    }
}

/// An internal error shows its whole chain, so a log line written with `{err}`
/// keeps the detail; [`chain`] then finds nothing more to add.
impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Internal(detail) => write!(f, "internal error: {}", chain(&**detail)),
            other => write!(
                f,
                "{} {}: {}",
                other.status(),
                other.code(),
                other.message()
            ),
        }
    }
}

/// The source of an internal error is what it holds; the other variants are
/// answers, not failures of something underneath.
impl StdError for ApiError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            ApiError::Internal(detail) => Some(&**detail),
            _ => None,
        }
    }
}

/// The answer while the database cannot be reached (PostgreSQL restarting,
/// failing over): a 503 the client may retry.
pub fn database_unreachable() -> ApiError {
    ApiError::Unavailable("The database cannot be reached; try again shortly".into())
}

impl From<crate::db::Error> for ApiError {
    fn from(err: crate::db::Error) -> Self {
        match err {
            err if err.is_storage_full() => ApiError::StorageFull,
            err if err.is_unreachable() => {
                // Not a fault of ours, but the operator wants to know why.
                log::warn!("store: {err}");
                database_unreachable()
            }
            crate::db::Error::Sqlite(err) => ApiError::internal_from("sqlite", err),
            other => ApiError::internal_from("store", other),
        }
    }
}

impl From<r2d2::Error> for ApiError {
    fn from(err: r2d2::Error) -> Self {
        ApiError::internal_from("connection pool", err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_such_table() -> crate::db::Error {
        let conn = crate::db::Conn::empty_memory().unwrap();
        conn.query_row("SELECT * FROM secrets", [], |_| Ok(()))
            .unwrap_err()
    }

    #[test]
    fn internal_detail_never_reaches_the_body() {
        let err = ApiError::internal("no such table: secrets at /var/lib/x.db");
        let body = err.body().to_string();
        assert!(!body.contains("secrets"));
        assert_eq!(err.body()["error"]["status"], 500);
        assert_eq!(err.body()["error"]["message"], "Internal server error");

        let err = ApiError::from(no_such_table());
        let body = err.body().to_string();
        assert!(!body.contains("secrets"), "{body}");
        assert!(!body.contains("sqlite"), "{body}");
        assert_eq!(
            err.body()["error"],
            json!({"status": 500, "code": "internal_error", "message": "Internal server error"})
        );
    }

    #[test]
    fn internal_errors_keep_their_source_for_the_log() {
        let err = ApiError::from(no_such_table());
        // The chain leads to the engine's original error.
        let context = err.source().expect("the wrapped error");
        assert_eq!(context.to_string(), "sqlite");
        let original = context.source().expect("the engine's error");
        assert!(original.to_string().contains("no such table: secrets"));
        // What the log shows: every link once, outermost first.
        let line = err.chain();
        assert!(
            line.starts_with("internal error: sqlite: no such table: secrets"),
            "{line}"
        );
        assert_eq!(line.matches("no such table").count(), 1, "{line}");
        assert_eq!(err.to_string(), line);

        let message = ApiError::internal("reader slots closed");
        assert_eq!(message.chain(), "internal error: reader slots closed");
    }

    #[test]
    fn chain_walks_every_source() {
        let inner = Context::new("b", "c");
        let outer = Context::new("a", inner);
        assert_eq!(chain(&outer), "a: b: c");
    }

    #[test]
    fn field_appears_only_when_one_field_is_at_fault() {
        let with_field = ApiError::invalid("latitudeDeg", "must be 0 to 90").body();
        assert_eq!(with_field["error"]["field"], "latitudeDeg");
        let without = ApiError::not_found("No port with that code").body();
        assert!(without["error"].get("field").is_none());
    }

    #[test]
    fn failed_items_are_listed_each_with_its_index_and_own_error() {
        let item = |index, error| ItemError { index, error };
        let err = ApiError::items(
            30,
            vec![
                item(
                    3,
                    ApiError::invalid("setNumber", "`setNumber` must be a whole number"),
                ),
                item(
                    9,
                    ApiError::invalid("$", "An item must be a JSON object, not a number"),
                ),
                item(12, ApiError::conflict("duplicate_direction", "Taken")),
            ],
            "",
        );
        assert_eq!((err.status(), err.code()), (400, "invalid_items"));
        assert_eq!(
            err.body(),
            json!({"error": {
                "status": 400,
                "code": "invalid_items",
                "message": "3 of 30 items cannot be stored (2 invalid, 1 refused by what is \
                            stored); nothing was stored",
                "field": "[3].setNumber",
                "items": [
                    {"index": 3, "status": 400, "code": "invalid_field",
                     "message": "`setNumber` must be a whole number", "field": "setNumber"},
                    {"index": 9, "status": 400, "code": "invalid_field",
                     "message": "An item must be a JSON object, not a number", "field": "$"},
                    {"index": 12, "status": 409, "code": "duplicate_direction",
                     "message": "Taken"},
                ],
            }})
        );
        let one = ApiError::items(2, vec![item(1, ApiError::invalid("$", "x"))], "body");
        assert_eq!(one.field(), Some("body[1]"));
        assert_eq!(one.message(), "1 of 2 items is invalid; nothing was stored");
        let conflicts = ApiError::items(2, vec![item(0, ApiError::conflict("c", "x"))], "");
        assert_eq!(
            (conflicts.status(), conflicts.code()),
            (409, "conflicting_items")
        );
        assert_eq!(
            conflicts.message(),
            "1 of 2 items is refused by what is stored; nothing was stored"
        );
    }

    #[test]
    fn busy_is_a_503_that_names_its_limit() {
        let err = ApiError::Busy {
            limit: "2 uploads at once".into(),
            retry_after_secs: 5,
        };
        assert_eq!((err.status(), err.code()), (503, "busy"));
        assert!(
            err.message().contains("2 uploads at once"),
            "{}",
            err.message()
        );
    }
}
