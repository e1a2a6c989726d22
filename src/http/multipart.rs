//! Streaming `multipart/form-data` reading (multer underneath): parts arrive
//! one at a time and their bytes in chunks, so an upload is never held whole
//! in memory. Multer's errors become the contract's errors here.

use bytes::Bytes;
use http_body_util::BodyDataStream;

use super::request::Request;
use crate::error::{ApiError, ApiResult};

pub struct Multipart {
    inner: multer::Multipart<'static>,
    limit: u64,
}

pub struct Part {
    inner: multer::Field<'static>,
    limit: u64,
}

/// The body's bytes as a stream that fails with `TimedOut` when the client
/// stops sending for longer than `timeout`.
fn timed(
    body: super::request::RequestBody,
    timeout: std::time::Duration,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    futures_util::stream::unfold(Some(BodyDataStream::new(body)), move |state| async move {
        let mut data = state?;
        match tokio::time::timeout(timeout, futures_util::StreamExt::next(&mut data)).await {
            Err(_) => Some((
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the body stopped arriving",
                )),
                None,
            )),
            Ok(None) => None,
            Ok(Some(Ok(bytes))) => Some((Ok(bytes), Some(data))),
            Ok(Some(Err(err))) => Some((Err(std::io::Error::other(err)), None)),
        }
    })
}

fn map_error(err: multer::Error, limit: u64) -> ApiError {
    match err {
        multer::Error::StreamReadFailed(cause)
            if cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::TimedOut) =>
        {
            ApiError::RequestTimeout
        }
        multer::Error::FieldSizeExceeded { .. } | multer::Error::StreamSizeExceeded { .. } => {
            ApiError::PayloadTooLarge { limit }
        }
        other => ApiError::bad_request(
            "invalid_multipart",
            format!("The multipart/form-data body is malformed: {other}"),
        ),
    }
}

impl Request {
    /// Opens a `multipart/form-data` body; the whole body may hold at most
    /// `limit` bytes (413 beyond). Another Content-Type answers 415.
    pub async fn multipart(&mut self, limit: u64) -> ApiResult<Multipart> {
        let content_type = self.header("content-type").unwrap_or("").to_string();
        if self.content_type().as_deref() != Some("multipart/form-data") {
            return Err(ApiError::UnsupportedMediaType(
                "Send the file as multipart/form-data with one part named `file`".into(),
            ));
        }
        let boundary = multer::parse_boundary(&content_type).map_err(|e| map_error(e, limit))?;
        let declared = self
            .header("content-length")
            .and_then(|l| l.trim().parse::<u64>().ok());
        let mut body = self
            .take_body()
            .ok_or_else(|| ApiError::internal("request body read twice"))?;
        if declared.is_some_and(|length| length > limit) {
            // Read what is cheap to read, so the client hears the 413.
            super::request::drain(&mut body, declared).await;
            return Err(ApiError::PayloadTooLarge { limit });
        }
        let body = timed(body, self.body_timeout());
        let constraints =
            multer::Constraints::new().size_limit(multer::SizeLimit::new().whole_stream(limit));
        Ok(Multipart {
            inner: multer::Multipart::with_constraints(body, boundary, constraints),
            limit,
        })
    }
}

impl Multipart {
    pub async fn next_part(&mut self) -> ApiResult<Option<Part>> {
        let limit = self.limit;
        match self.inner.next_field().await {
            Ok(Some(inner)) => Ok(Some(Part { inner, limit })),
            Ok(None) => Ok(None),
            Err(err) => Err(map_error(err, limit)),
        }
    }
}

impl Part {
    pub fn name(&self) -> Option<&str> {
        self.inner.name()
    }

    pub fn file_name(&self) -> Option<&str> {
        self.inner.file_name()
    }

    /// The part's media type, as sent.
    pub fn content_type(&self) -> Option<String> {
        self.inner
            .content_type()
            .map(|m| m.essence_str().to_string())
    }

    /// The next piece of the part's bytes; `None` at its end.
    pub async fn chunk(&mut self) -> ApiResult<Option<Bytes>> {
        let limit = self.limit;
        self.inner.chunk().await.map_err(|e| map_error(e, limit))
    }
}
