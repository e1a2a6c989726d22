//! Responses: JSON documents, empty answers, and the rendering of every
//! [`ApiError`] into the contract's error body with its extra headers.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::header::{HeaderName, HeaderValue};
use serde::Serialize;

use super::BoxError;
use crate::error::ApiError;

pub(crate) type ResponseBody = BoxBody<Bytes, BoxError>;

pub struct Response {
    status: u16,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: ResponseBody,
    /// Query parameters whose values the access log must not show (beyond
    /// `api_key` and `password`, which it never shows).
    secret_params: Vec<String>,
}

fn full(bytes: Bytes) -> ResponseBody {
    Full::new(bytes).map_err(|never| match never {}).boxed()
}

impl Response {
    /// A JSON document with the given status.
    pub fn json<T: Serialize + ?Sized>(status: u16, value: &T) -> Response {
        match super::json::to_vec(value) {
            Ok(bytes) => Response::json_bytes(status, Bytes::from(bytes)),
            Err(err) => Response::error(&ApiError::internal(format!("serialising: {err}"))),
        }
    }

    /// A JSON document already rendered (kept in a cache, for instance).
    pub fn json_bytes(status: u16, body: Bytes) -> Response {
        // Room for what the server adds to every answer (`Cache-Control`)
        // and what handlers commonly add (`ETag`, `Location`).
        let mut headers = Vec::with_capacity(4);
        headers.push((
            hyper::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ));
        Response {
            status,
            headers,
            body: full(body),
            secret_params: Vec::new(),
        }
    }

    /// A body streamed from a channel: each message is one piece; an error ends
    /// the response early (the client sees a short body, never a wrong one).
    pub fn stream(
        status: u16,
        pieces: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
    ) -> Response {
        let stream = futures_util::stream::unfold(pieces, |mut pieces| async move {
            pieces.recv().await.map(|piece| {
                (
                    piece.map(hyper::body::Frame::data).map_err(BoxError::from),
                    pieces,
                )
            })
        });
        Response {
            status,
            headers: Vec::new(),
            body: http_body_util::StreamBody::new(stream).boxed(),
            secret_params: Vec::new(),
        }
    }

    /// A status with no body.
    pub fn empty(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: full(Bytes::new()),
            secret_params: Vec::new(),
        }
    }

    /// The one rendering of an error: the contract's body, plus `Allow` on 405
    /// and `Retry-After` on 429 and on a busy 503. Internal detail goes to the log only.
    pub fn error(err: &ApiError) -> Response {
        if let ApiError::Internal(_) = err {
            // The whole chain: what failed, and what made it fail underneath.
            log::error!("{}", err.chain());
        }
        let mut response = Response::json(err.status(), &err.body());
        match err {
            ApiError::MethodNotAllowed { allow } => {
                response = response.header("allow", &allow.join(", "));
            }
            ApiError::RangeNotSatisfiable { size } => {
                response = response.header("content-range", &format!("bytes */{size}"));
            }
            _ => {}
        }
        if let Some(secs) = err.retry_after_secs() {
            response = response.header("retry-after", &secs.to_string());
        }
        response
    }

    /// Adds a header. A name or value that is not valid HTTP is a bug, logged and skipped.
    pub fn header(mut self, name: &str, value: &str) -> Response {
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            (Ok(name), Ok(value)) => self.headers.push((name, value)),
            _ => log::error!("dropped an invalid response header {name:?}"),
        }
        self
    }

    /// Adds a header unless the answer already has one of that name.
    pub fn default_header(mut self, name: HeaderName, value: HeaderValue) -> Response {
        if !self.headers.iter().any(|(n, _)| *n == name) {
            self.headers.push((name, value));
        }
        self
    }

    /// Marks a query parameter whose value the access log must hide.
    pub fn secret_param(mut self, name: &str) -> Response {
        self.secret_params.push(name.to_string());
        self
    }

    pub(crate) fn secret_params(&self) -> &[String] {
        &self.secret_params
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    /// A header's value, for tests that call the handler without a socket.
    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.as_str().eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.to_str().ok())
    }

    /// Collects the body, for tests that call the handler without a socket.
    pub async fn into_bytes(self) -> Result<Bytes, BoxError> {
        Ok(self.body.collect().await?.to_bytes())
    }

    pub(crate) fn into_hyper(self) -> hyper::Response<ResponseBody> {
        let mut response = hyper::Response::new(self.body);
        *response.status_mut() = hyper::StatusCode::from_u16(self.status)
            .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
        let mut headers = hyper::HeaderMap::with_capacity(self.headers.len());
        for (name, value) in self.headers {
            headers.append(name, value);
        }
        *response.headers_mut() = headers;
        response
    }
}

impl From<ApiError> for Response {
    fn from(err: ApiError) -> Response {
        Response::error(&err)
    }
}
