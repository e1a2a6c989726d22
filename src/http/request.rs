//! The request as domain code sees it: method, decoded path segments and query,
//! headers by name, and a body read under a size limit as JSON or a form.
//! Domain modules never touch hyper types; they use this.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::HeaderMap;
use serde_json::Value;

use super::BoxError;
use super::response::Response;
use super::urlencoded::{decode_pairs, decode_path_segment};
use crate::error::{ApiError, ApiResult};

pub(crate) type RequestBody = BoxBody<Bytes, BoxError>;

/// Largest JSON request body (contract section 5).
pub const JSON_BODY_LIMIT: usize = 1024 * 1024;
/// Largest JSON body holding an array of documents (a bulk create of the
/// kinds that take one, `documents::kinds::Kind::bulk`); a body holding one
/// document is still held to [`JSON_BODY_LIMIT`].
pub const ITEMS_BODY_LIMIT: usize = 8 * 1024 * 1024;
/// Largest login form body.
pub const FORM_BODY_LIMIT: usize = 16 * 1024;

/// Most bytes of an oversized body read and thrown away before answering 413.
/// A client that sends its whole body before reading the answer would otherwise
/// meet a reset connection instead of the 413; past this much, it does.
const DRAIN_LIMIT: u64 = 16 * 1024 * 1024;

/// Reads and discards what is left of a body, up to [`DRAIN_LIMIT`].
pub(crate) async fn drain(body: &mut RequestBody, declared: Option<u64>) {
    if declared.is_some_and(|length| length > DRAIN_LIMIT) {
        return;
    }
    let mut discarded = 0u64;
    while let Ok(Some(Ok(frame))) = tokio::time::timeout(DEFAULT_BODY_TIMEOUT, body.frame()).await {
        if let Ok(data) = frame.into_data() {
            discarded += data.len() as u64;
            if discarded > DRAIN_LIMIT {
                return;
            }
        }
    }
}

pub(crate) type UnreadBody = Arc<Mutex<Option<RequestBody>>>;

/// Most bytes of an unread body drained after answering, to keep the
/// connection for the client's next request.
const SETTLE_LIMIT: u64 = 1024 * 1024;

/// After a handler answered without reading the body (an early 401, 404 or
/// 400): read and drop a small remainder so the client can reuse the
/// connection, or say `Connection: close` when it is too large to bother.
pub(crate) async fn settle_unread(
    unread: &UnreadBody,
    declared: Option<u64>,
    response: Response,
) -> Response {
    let body = unread.lock().unwrap_or_else(|p| p.into_inner()).take();
    let Some(mut body) = body else {
        return response;
    };
    if declared.is_some_and(|length| length > SETTLE_LIMIT) {
        return response.header("connection", "close");
    }
    let mut read = 0u64;
    while let Ok(Some(frame)) = tokio::time::timeout(DEFAULT_BODY_TIMEOUT, body.frame()).await {
        match frame.map(|f| f.into_data()) {
            Ok(Ok(data)) => {
                read += data.len() as u64;
                if read > SETTLE_LIMIT {
                    return response.header("connection", "close");
                }
            }
            Ok(Err(_)) => {}
            Err(_) => return response.header("connection", "close"),
        }
    }
    response
}

/// HTTP methods the router knows; anything else can only ever be a 405.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Patch,
    Delete,
    Options,
    Other,
}

impl Method {
    pub fn parse(name: &str) -> Method {
        match name {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            _ => Method::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Other => "OTHER",
        }
    }
}

pub struct Request {
    method: Method,
    path: String,
    /// The decoded path segments, as `(start, end)` in `decoded`, or in
    /// `path` itself when no segment has a `%` (no copy, one allocation).
    segments: Vec<(u32, u32)>,
    /// The decoded segments one after another, when some segment had a `%`
    /// (empty otherwise: a segment with a `%` never decodes to nothing).
    decoded: String,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    /// Shared with [`App::handle`](crate::app::App::handle), which drains what
    /// a handler left unread so the connection stays usable.
    body: UnreadBody,
    params: Vec<(&'static str, String)>,
    remote: Option<SocketAddr>,
    /// Longest wait for the next piece of the body.
    body_timeout: Duration,
}

/// Longest wait for the next piece of a body, unless the server says otherwise.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

impl Request {
    /// Builds a request from its parts. The path and query are decoded here, so a
    /// malformed one fails before routing.
    pub(crate) fn new(
        method: Method,
        path_and_query: &str,
        headers: HeaderMap,
        body: RequestBody,
        remote: Option<SocketAddr>,
        body_timeout: Duration,
    ) -> ApiResult<Request> {
        let (path, query) = path_and_query
            .split_once('?')
            .unwrap_or((path_and_query, ""));
        let mut segments = Vec::with_capacity(path.bytes().filter(|&b| b == b'/').count());
        let mut decoded = String::new();
        let encoded = path.contains('%');
        // Offsets in u32: a path longer than that is refused long before
        // (hyper's and the server's limits on a request head).
        let offset = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let mut start = 0;
        for raw in path.split('/') {
            let end = start + raw.len();
            if !raw.is_empty() {
                if encoded {
                    let at = decoded.len();
                    decoded.push_str(&decode_path_segment(raw)?);
                    segments.push((offset(at), offset(decoded.len())));
                } else {
                    segments.push((offset(start), offset(end)));
                }
            }
            start = end + 1;
        }
        let query = decode_pairs(query, "query string")?;
        Ok(Request {
            method,
            path: path.to_string(),
            segments,
            decoded,
            query,
            headers,
            body: Arc::new(Mutex::new(Some(body))),
            params: Vec::new(),
            remote,
            body_timeout,
        })
    }

    /// A request with an in-memory body, for calling the handler without a socket.
    pub fn from_bytes(
        method: &str,
        path_and_query: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> ApiResult<Request> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = hyper::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| ApiError::bad_request("invalid_header", e.to_string()))?;
            let value = hyper::header::HeaderValue::from_str(value)
                .map_err(|e| ApiError::bad_request("invalid_header", e.to_string()))?;
            map.append(name, value);
        }
        let body = Full::new(body.into())
            .map_err(|never| match never {})
            .boxed();
        Request::new(
            Method::parse(method),
            path_and_query,
            map,
            body,
            None,
            DEFAULT_BODY_TIMEOUT,
        )
    }

    pub fn method(&self) -> Method {
        self.method
    }

    /// The raw (still percent-encoded) path, without the query.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The decoded path segments, in order (empty ones skipped).
    pub fn segments(&self) -> impl ExactSizeIterator<Item = &str> {
        let text = if self.decoded.is_empty() {
            &self.path
        } else {
            &self.decoded
        };
        self.segments
            .iter()
            .map(move |&(start, end)| text.get(start as usize..end as usize).unwrap_or(""))
    }

    pub fn remote(&self) -> Option<SocketAddr> {
        self.remote
    }

    pub(crate) fn body_timeout(&self) -> Duration {
        self.body_timeout
    }

    pub(crate) fn take_body(&mut self) -> Option<RequestBody> {
        self.body.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// The body as long as nobody has read it (see [`settle_unread`]).
    pub(crate) fn unread_body(&self) -> UnreadBody {
        self.body.clone()
    }

    pub(crate) fn set_params(&mut self, params: Vec<(&'static str, String)>) {
        self.params = params;
    }

    /// A path parameter the route pattern declared (`{name}`).
    pub fn param(&self, name: &str) -> &str {
        self.params
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }

    /// Decoded query pairs in their order, repeated names included.
    pub fn query_pairs(&self) -> &[(String, String)] {
        &self.query
    }

    /// The first value of a query parameter.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A header's value, when present and visible ASCII. `name` as text, or
    /// one of the constants of `http::header`, which skip parsing the name.
    pub fn header(&self, name: impl hyper::header::AsHeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The media type of the body, lower-cased, without parameters.
    pub fn content_type(&self) -> Option<String> {
        self.header("content-type").map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
    }

    /// Reads the whole body, refusing more than `limit` bytes with a 413.
    pub async fn body_bytes(&mut self, limit: usize) -> ApiResult<Bytes> {
        let too_large = ApiError::PayloadTooLarge {
            limit: limit as u64,
        };
        let declared = self
            .header("content-length")
            .and_then(|length| length.trim().parse::<u64>().ok());
        let mut body = self
            .take_body()
            .ok_or_else(|| ApiError::internal("request body read twice"))?;
        if declared.is_some_and(|length| length > limit as u64) {
            drain(&mut body, declared).await;
            return Err(too_large);
        }
        let mut collected = bytes::BytesMut::new();
        loop {
            let Some(frame) = tokio::time::timeout(self.body_timeout, body.frame())
                .await
                .map_err(|_| ApiError::RequestTimeout)?
            else {
                break;
            };
            let frame = frame.map_err(|err| {
                ApiError::bad_request(
                    "invalid_body",
                    format!("The request body could not be read: {err}"),
                )
            })?;
            if let Ok(data) = frame.into_data() {
                if collected.len() + data.len() > limit {
                    drain(&mut body, None).await;
                    return Err(too_large);
                }
                collected.extend_from_slice(&data);
            }
        }
        Ok(collected.freeze())
    }

    /// Reads a JSON body (`Content-Type: application/json`, at most 1 MiB),
    /// strictly: a key given twice or an integer a double cannot hold is a 400
    /// naming the field (see [`super::json`]).
    pub async fn json(&mut self) -> ApiResult<Value> {
        self.json_up_to(JSON_BODY_LIMIT)
            .await
            .map(|(value, _)| value)
    }

    /// [`Request::json`] with a body of at most `limit` bytes; also answers
    /// the body's size, for a handler whose limit depends on what the body
    /// holds.
    pub async fn json_up_to(&mut self, limit: usize) -> ApiResult<(Value, usize)> {
        match self.content_type() {
            Some(t) if t == "application/json" || t.ends_with("+json") => {}
            other => {
                return Err(ApiError::UnsupportedMediaType(format!(
                    "Send the body as JSON with `Content-Type: application/json` (got {})",
                    other.map_or_else(|| "no Content-Type".to_string(), |t| format!("`{t}`"))
                )));
            }
        }
        let bytes = self.body_bytes(limit).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::bad_request(
                "invalid_json",
                "The request body is empty; a JSON object is required",
            ));
        }
        super::json::parse(&bytes).map(|value| (value, bytes.len()))
    }

    /// Reads an `application/x-www-form-urlencoded` body into pairs.
    pub async fn form(&mut self) -> ApiResult<Vec<(String, String)>> {
        if self.content_type().as_deref() != Some("application/x-www-form-urlencoded") {
            return Err(ApiError::UnsupportedMediaType(
                "Send the form with `Content-Type: application/x-www-form-urlencoded`".into(),
            ));
        }
        let bytes = self.body_bytes(FORM_BODY_LIMIT).await?;
        let text = std::str::from_utf8(&bytes).map_err(|_| {
            ApiError::bad_request("invalid_body", "The form body is not valid UTF-8")
        })?;
        decode_pairs(text, "form body")
    }
}
