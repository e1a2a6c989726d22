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

/// Most bytes of one part's headers, and of the preamble before the first part.
pub const PART_HEADERS_LIMIT: usize = 8 * 1024;

/// The body's bytes as a stream that fails with `TimedOut` when the client
/// stops sending for longer than `timeout`, and with [`PartHeadersTooLarge`]
/// when a part's headers run past [`PART_HEADERS_LIMIT`] (multer would buffer
/// them whole, however long).
fn guarded(
    body: super::request::RequestBody,
    timeout: std::time::Duration,
    boundary: &str,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let state = (BodyDataStream::new(body), Sections::new(boundary));
    futures_util::stream::unfold(Some(state), move |state| async move {
        let (mut data, mut sections) = state?;
        match tokio::time::timeout(timeout, futures_util::StreamExt::next(&mut data)).await {
            Err(_) => Some((
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the body stopped arriving",
                )),
                None,
            )),
            Ok(None) => None,
            Ok(Some(Ok(bytes))) => match sections.feed(&bytes) {
                Ok(()) => Some((Ok(bytes), Some((data, sections)))),
                Err(err) => Some((Err(std::io::Error::other(err)), None)),
            },
            Ok(Some(Err(err))) => Some((Err(std::io::Error::other(err)), None)),
        }
    })
}

/// A part's headers (or the preamble) ran past [`PART_HEADERS_LIMIT`].
#[derive(Debug)]
struct PartHeadersTooLarge;

impl std::fmt::Display for PartHeadersTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a part's headers are longer than {PART_HEADERS_LIMIT} bytes"
        )
    }
}

impl std::error::Error for PartHeadersTooLarge {}

/// Where the bytes of a multipart body are: before the first delimiter, in a
/// part's headers, in its data, or past the closing delimiter. Fed every
/// piece of the body as it passes to multer; counts header bytes only.
struct Sections {
    /// `--BOUNDARY`: the first delimiter.
    first: memchr::memmem::Finder<'static>,
    /// `\r\n--BOUNDARY`: the end of a part's data.
    next: memchr::memmem::Finder<'static>,
    /// `\r\n\r\n`: the end of a part's headers.
    blank_line: memchr::memmem::Finder<'static>,
    stage: Stage,
    /// The last bytes scanned, shorter than the pattern sought: it may begin
    /// at the end of one piece and end in the next.
    tail: Vec<u8>,
    /// Bytes of the preamble or of the current part's headers so far.
    header_bytes: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Preamble,
    /// Just past a delimiter: `--` closes the body, anything else opens a part.
    Delimited {
        dashes: u8,
    },
    Headers,
    Data,
    Closed,
}

impl Sections {
    fn new(boundary: &str) -> Sections {
        let next = format!("\r\n--{boundary}");
        Sections {
            first: memchr::memmem::Finder::new(&next.as_bytes()[2..]).into_owned(),
            next: memchr::memmem::Finder::new(next.as_bytes()).into_owned(),
            blank_line: memchr::memmem::Finder::new(b"\r\n\r\n").into_owned(),
            stage: Stage::Preamble,
            tail: Vec::new(),
            header_bytes: 0,
        }
    }

    fn feed(&mut self, mut data: &[u8]) -> Result<(), PartHeadersTooLarge> {
        loop {
            let finder = match self.stage {
                Stage::Closed => return Ok(()),
                Stage::Delimited { dashes } => {
                    let Some((&byte, rest)) = data.split_first() else {
                        return Ok(());
                    };
                    self.stage = match (byte, dashes) {
                        (b'-', 1) => Stage::Closed,
                        (b'-', _) => {
                            data = rest;
                            self.count(1)?;
                            Stage::Delimited { dashes: 1 }
                        }
                        _ => Stage::Headers,
                    };
                    continue;
                }
                Stage::Preamble => &self.first,
                Stage::Headers => &self.blank_line,
                Stage::Data => &self.next,
            };
            let keep = finder.needle().len() - 1;
            match find(finder, &self.tail, data) {
                Some(end) => {
                    self.count(end)?;
                    data = &data[end..];
                    self.tail.clear();
                    self.header_bytes = 0;
                    self.stage = match self.stage {
                        Stage::Headers => Stage::Data,
                        _ => Stage::Delimited { dashes: 0 },
                    };
                }
                None => {
                    self.count(data.len())?;
                    if data.len() >= keep {
                        self.tail.clear();
                    } else {
                        let drop = (self.tail.len() + data.len()).saturating_sub(keep);
                        self.tail.drain(..drop);
                    }
                    let from = data.len().saturating_sub(keep);
                    self.tail.extend_from_slice(&data[from..]);
                    return Ok(());
                }
            }
        }
    }

    /// Counts `n` more bytes of the stage; headers and preamble are limited.
    fn count(&mut self, n: usize) -> Result<(), PartHeadersTooLarge> {
        if matches!(
            self.stage,
            Stage::Preamble | Stage::Headers | Stage::Delimited { .. }
        ) {
            self.header_bytes += n;
            if self.header_bytes > PART_HEADERS_LIMIT {
                return Err(PartHeadersTooLarge);
            }
        }
        Ok(())
    }
}

/// Where the first match of `finder` ends in `data`, when `tail` (the end of
/// what came before, holding no match) is put in front of it.
fn find(finder: &memchr::memmem::Finder<'_>, tail: &[u8], data: &[u8]) -> Option<usize> {
    let length = finder.needle().len();
    if !tail.is_empty() {
        // A match that begins in the tail ends within the first bytes of data.
        let head = &data[..data.len().min(length - 1)];
        let joined = [tail, head].concat();
        if let Some(at) = finder.find(&joined) {
            return Some(at + length - tail.len());
        }
    }
    finder.find(data).map(|at| at + length)
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
        multer::Error::StreamReadFailed(cause)
            if cause
                .downcast_ref::<std::io::Error>()
                .and_then(|e| e.get_ref())
                .is_some_and(|e| e.is::<PartHeadersTooLarge>()) =>
        {
            ApiError::bad_request(
                "invalid_multipart",
                format!(
                    "The headers of a part of the multipart/form-data body are longer than \
                     {PART_HEADERS_LIMIT} bytes"
                ),
            )
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
        let body = guarded(body, self.body_timeout(), &boundary);
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

#[cfg(test)]
mod tests {
    use super::{PART_HEADERS_LIMIT, Sections, Stage};

    fn body(header_filler: usize) -> Vec<u8> {
        let mut body = b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"".to_vec();
        body.extend(std::iter::repeat_n(b'a', header_filler));
        body.extend_from_slice(b"\r\n\r\nsome bytes\r\n--Xy not yet\r\n--XyZ--\r\n");
        body
    }

    /// Feeds the body in pieces of `size` bytes; the stage reached, or the error.
    fn feed(body: &[u8], size: usize) -> Result<Stage, ()> {
        let mut sections = Sections::new("XyZ");
        for piece in body.chunks(size) {
            sections.feed(piece).map_err(|_| ())?;
        }
        Ok(sections.stage)
    }

    #[test]
    fn follows_the_sections_across_any_split() {
        for size in [1, 2, 3, 5, 7, 64, 100_000] {
            assert_eq!(feed(&body(0), size), Ok(Stage::Closed), "pieces of {size}");
            assert_eq!(
                feed(&body(PART_HEADERS_LIMIT - 100), size),
                Ok(Stage::Closed)
            );
        }
    }

    #[test]
    fn long_headers_and_preambles_are_refused() {
        for size in [1, 7, 4096, 100_000] {
            assert!(
                feed(&body(PART_HEADERS_LIMIT), size).is_err(),
                "pieces of {size}"
            );
            let mut preamble = vec![b'p'; PART_HEADERS_LIMIT + 1];
            preamble.extend(body(0));
            assert!(feed(&preamble, size).is_err());
        }
    }

    #[test]
    fn data_is_not_limited() {
        let mut body = b"--B\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n".to_vec();
        body.extend(std::iter::repeat_n(b'd', 10 * PART_HEADERS_LIMIT));
        body.extend_from_slice(b"\r\n--B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n");
        let mut sections = Sections::new("B");
        for piece in body.chunks(1000) {
            sections.feed(piece).unwrap();
        }
        assert_eq!(sections.stage, Stage::Data);
    }
}
