//! hyper's own answers, given the contract's error body.
//!
//! A request hyper cannot parse never reaches a handler: hyper answers it
//! itself (`400 Bad Request` for a malformed request line or header, `414 URI
//! Too Long` past its 65,534-byte target, `431 Request Header Fields Too
//! Large` past the read buffer) with an empty body, and closes the connection.
//! Every error of ours has the contract's JSON body, so [`Answered`] wraps a
//! connection's socket and, when hyper writes one of those heads (its status
//! line, `content-length: 0` and no `content-type`, which none of our answers
//! is), writes the same answer with the contract's body instead. Everything
//! else passes through untouched: a look at the first bytes of each write.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::ApiError;

/// The status lines hyper writes for requests it cannot parse, each with the
/// error this server answers in its place.
fn replacement(head: &[u8], read_buffer: usize) -> Option<ApiError> {
    let error = if head.starts_with(b"HTTP/1.1 400 Bad Request\r\n") {
        ApiError::BadRequest {
            code: "invalid_request",
            message: "The request is not valid HTTP/1.1: its request line or a header is malformed"
                .into(),
            field: None,
        }
    } else if head.starts_with(b"HTTP/1.1 414 URI Too Long\r\n") {
        ApiError::UriTooLong { limit: URI_MAX }
    } else if head.starts_with(b"HTTP/1.1 431 Request Header Fields Too Large\r\n") {
        ApiError::HeadersTooLarge { limit: read_buffer }
    } else {
        return None;
    };
    // Only hyper's own answer: an empty body, no type. Ours always have both.
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = &head[..end];
    let lower = head.to_ascii_lowercase();
    let has = |needle: &[u8]| lower.windows(needle.len()).any(|w| w == needle);
    (has(b"\r\ncontent-length: 0\r\n") && !has(b"\r\ncontent-type:")).then_some(error)
}

/// hyper's longest request target (`MAX_URI_LEN`, `u16::MAX - 1`).
pub const URI_MAX: usize = 65_534;

/// The answer written in place of hyper's: its status line and headers, with
/// the body's type and length, then the body.
fn rewrite(head: &[u8], error: &ApiError) -> Vec<u8> {
    let end = head
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(head.len(), |p| p + 2);
    let body = error.body().to_string();
    let mut out = Vec::with_capacity(end + body.len() + 96);
    for line in head[..end].split_inclusive(|&b| b == b'\n') {
        if line.eq_ignore_ascii_case(b"content-length: 0\r\n") {
            continue;
        }
        out.extend_from_slice(line);
    }
    out.extend_from_slice(b"content-type: application/json\r\ncache-control: no-store\r\n");
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body.as_bytes());
    out
}

/// A connection's socket whose writes of hyper's own error answers are given
/// the contract's body.
pub struct Answered<S> {
    inner: S,
    read_buffer: usize,
    /// A replacement still being written, and how much of it is out; and the
    /// length of hyper's write it stands for.
    pending: Option<(Vec<u8>, usize, usize)>,
}

impl<S> Answered<S> {
    /// `read_buffer`: hyper's `max_buf_size` (the limit a 431 names).
    pub fn new(inner: S, read_buffer: usize) -> Answered<S> {
        Answered {
            inner,
            read_buffer,
            pending: None,
        }
    }

    /// The socket (hyper has flushed what it wrote, replacements included).
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Answered<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> Answered<S> {
    /// Writes what is left of a replacement; ready with the length of
    /// hyper's write it stands for once all of it is out.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        while let Some((bytes, written, stands_for)) = &mut self.pending {
            if *written == bytes.len() {
                let stands_for = *stands_for;
                self.pending = None;
                return Poll::Ready(Ok(stands_for));
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(0))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Answered<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.pending.is_none()
            && buf.starts_with(b"HTTP/1.1 4")
            && let Some(error) = replacement(buf, this.read_buffer)
        {
            this.pending = Some((rewrite(buf, &error), 0, buf.len()));
        }
        if this.pending.is_some() {
            return this.drain(cx);
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.pending.is_some() {
            return self.drain(cx);
        }
        // hyper writes an automatic answer's head as one buffer: a vectored
        // write starting with one goes the single-buffer way, to be replaced.
        let first = bufs.iter().find(|b| !b.is_empty());
        if let Some(first) = first
            && first.starts_with(b"HTTP/1.1 4")
            && replacement(first, self.read_buffer).is_some()
        {
            return self.poll_write(cx, first);
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::{replacement, rewrite};

    const HYPER_414: &[u8] =
        b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\n\
        date: Tue, 24 Nov 2026 10:13:49 GMT\r\n\r\n";

    #[test]
    fn hypers_empty_answer_gets_the_contract_body_and_ours_pass() {
        let error = replacement(HYPER_414, 65_536).expect("hyper's 414");
        let out = String::from_utf8(rewrite(HYPER_414, &error)).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{head}");
        assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
        assert!(head.contains("\r\ndate: "), "{head}");
        assert!(!head.contains("content-length: 0"), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["error"]["code"], "uri_too_long");
        assert_eq!(json["error"]["status"], 414);

        // One of ours: a body and its type.
        let ours = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n\
            content-length: 0\r\n\r\n";
        assert!(replacement(ours, 65_536).is_none());
        let with_body = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 12\r\n\r\n";
        assert!(replacement(with_body, 65_536).is_none());
        // A head not yet whole is left alone.
        assert!(replacement(b"HTTP/1.1 431 Request Header Fields Too Large\r\n", 1).is_none());
    }
}
