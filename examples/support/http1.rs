//! A tiny blocking HTTP/1.1 client over `std::net`, shared by the benchmark
//! examples (`changes_catchup.rs`, `sse_latency.rs`, `scale.rs`, included with `#[path]`):
//! one keep-alive connection, `Content-Length` and chunked bodies, and a
//! line reader over a chunked stream for Server-Sent Events. No TLS, no
//! redirects, no pipelining: what a benchmark client on 127.0.0.1 needs.

#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// `HOST:PORT` of `http://HOST:PORT`.
fn host_of(base: &str) -> io::Result<String> {
    Ok(base
        .strip_prefix("http://")
        .ok_or_else(|| io::Error::other(format!("not an http:// address: {base}")))?
        .trim_end_matches('/')
        .to_string())
}

/// One keep-alive connection to `http://HOST:PORT`.
pub struct Conn {
    reader: BufReader<TcpStream>,
    host: String,
}

/// The head of an answer.
pub struct Head {
    pub status: u16,
    pub content_length: Option<usize>,
    pub chunked: bool,
    /// Every header, in order, as sent (names as the server spelled them).
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Conn {
    /// `base` is `http://HOST:PORT` (no path).
    pub fn connect(base: &str) -> io::Result<Conn> {
        let host = host_of(base)?;
        let stream = TcpStream::connect(&host)?;
        Conn::over(stream, host)
    }

    /// Like [`Conn::connect`], from the local address `local`: on Linux all
    /// of 127/8 is loopback, so `127.0.0.2` is another client address to
    /// the server (the login benchmark's clients).
    pub fn connect_from(base: &str, local: std::net::IpAddr) -> io::Result<Conn> {
        let host = host_of(base)?;
        let server: std::net::SocketAddr = host
            .parse()
            .map_err(|_| io::Error::other(format!("not IP:PORT: {host}")))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        let stream = runtime.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind((local, 0).into())?;
            socket.connect(server).await?.into_std()
        })?;
        stream.set_nonblocking(false)?;
        Conn::over(stream, host)
    }

    fn over(stream: TcpStream, host: String) -> io::Result<Conn> {
        stream.set_nodelay(true)?;
        Ok(Conn {
            reader: BufReader::with_capacity(256 * 1024, stream),
            host,
        })
    }

    /// Sends one request (the body, if any, with its length).
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<()> {
        let mut out = Vec::with_capacity(256 + body.len());
        write!(out, "{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.host)?;
        for (name, value) in headers {
            write!(out, "{name}: {value}\r\n")?;
        }
        if !body.is_empty() || method == "POST" || method == "PUT" {
            write!(out, "Content-Length: {}\r\n", body.len())?;
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);
        self.reader.get_mut().write_all(&out)
    }

    /// Reads the status line and headers of the next answer.
    pub fn read_head(&mut self) -> io::Result<Head> {
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::other(format!("bad status line {line:?}")))?;
        let mut head = Head {
            status,
            content_length: None,
            chunked: false,
            headers: Vec::new(),
        };
        loop {
            line.clear();
            if self.reader.read_line(&mut line)? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let l = line.trim_end();
            if l.is_empty() {
                return Ok(head);
            }
            if let Some((name, value)) = l.split_once(':') {
                let value = value.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    head.content_length = value.parse().ok();
                } else if name.eq_ignore_ascii_case("transfer-encoding")
                    && value.eq_ignore_ascii_case("chunked")
                {
                    head.chunked = true;
                }
                head.headers.push((name.to_string(), value.to_string()));
            }
        }
    }

    /// Reads a whole body into `body` (cleared first).
    pub fn read_body(&mut self, head: &Head, body: &mut Vec<u8>) -> io::Result<()> {
        body.clear();
        if head.chunked {
            Chunked::new(&mut self.reader).read_to_end(body)?;
        } else if let Some(n) = head.content_length {
            body.resize(n, 0);
            self.reader.read_exact(body)?;
        }
        Ok(())
    }

    /// One request and its whole answer: the status, the body in `body`.
    pub fn call(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        request_body: &[u8],
        body: &mut Vec<u8>,
    ) -> io::Result<u16> {
        self.exchange(method, path, headers, request_body, body)
            .map(|head| head.status)
    }

    /// Like [`Conn::call`], returning the whole head (its headers too).
    pub fn exchange(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        request_body: &[u8],
        body: &mut Vec<u8>,
    ) -> io::Result<Head> {
        self.send(method, path, headers, request_body)?;
        let head = self.read_head()?;
        self.read_body(&head, body)?;
        Ok(head)
    }

    /// A chunked body as a stream of lines (a Server-Sent Events stream).
    pub fn into_lines(self) -> BufReader<Chunked<BufReader<TcpStream>>> {
        BufReader::new(Chunked::new(self.reader))
    }
}

/// A chunked transfer-coded body, decoded.
pub struct Chunked<R: BufRead> {
    inner: R,
    left: usize,
    done: bool,
}

impl<R: BufRead> Chunked<R> {
    pub fn new(inner: R) -> Chunked<R> {
        Chunked {
            inner,
            left: 0,
            done: false,
        }
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut line = String::new();
            if self.inner.read_line(&mut line)? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let size = line.trim().split(';').next().unwrap_or("");
            self.left = usize::from_str_radix(size, 16)
                .map_err(|_| io::Error::other(format!("bad chunk size {line:?}")))?;
            if self.left == 0 {
                // The last chunk: an empty trailer line follows.
                line.clear();
                self.inner.read_line(&mut line)?;
                self.done = true;
                return Ok(0);
            }
        }
        let n = {
            let available = self.inner.fill_buf()?;
            if available.is_empty() {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let n = available.len().min(self.left).min(buf.len());
            buf[..n].copy_from_slice(&available[..n]);
            n
        };
        self.inner.consume(n);
        self.left -= n;
        if self.left == 0 {
            // The CRLF that ends the chunk's data.
            let mut crlf = [0u8; 2];
            self.inner.read_exact(&mut crlf)?;
        }
        Ok(n)
    }
}

/// The session key of `user` with `password`, by the login route.
pub fn login(base: &str, user: &str, password: &str) -> io::Result<String> {
    let mut conn = Conn::connect(base)?;
    let form = format!("password={password}");
    let mut body = Vec::new();
    let status = conn.call(
        "POST",
        &format!("/api/rest/1.0/sessions/{user}"),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        form.as_bytes(),
        &mut body,
    )?;
    let text = String::from_utf8_lossy(&body);
    let key = text
        .split("\"sessionId\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next());
    match (status, key) {
        (200 | 201, Some(key)) => Ok(key.to_string()),
        _ => Err(io::Error::other(format!("login answered {status}: {text}"))),
    }
}
