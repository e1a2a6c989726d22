//! Resource bounds (issue 15, items 1, 5 and 9), in their short form: stalled
//! uploads beyond `--max-uploads` are answered 503 before their body; a flood
//! of idle connections beyond `--max-connections` gives way while an
//! established client and `/healthz` stay served; aborted uploads are freed at
//! once and the background vacuum gives their pages back. Each waits for the
//! state it asserts (rows in the data file, sockets closed by the server),
//! never for a time. `bench/bounds` runs the full form against the release
//! binary: 1,000 stalled uploads and 25,000 half-open connections, with RSS.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::{Server, workspace_with_job};

const BOUNDARY: &str = "boundsBoundary";

/// A server with a workspace and a job to upload files to.
struct Fixture {
    server: Server,
    key: String,
    files: String,
}

impl Fixture {
    fn new(extra: &[&str]) -> Fixture {
        let server = Server::start_with(extra);
        let key = server.admin_key();
        let (workspace, job) = workspace_with_job(&server, &key, "Bounds Co", None);
        Fixture {
            files: format!("/workspaces/{workspace}/jobs/{job}/files"),
            server,
            key,
        }
    }

    /// Opens an upload that declares `declared` bytes, sends its part header
    /// and `sent` bytes of the file, then stops (the socket stays open).
    fn stalled_upload(&self, sent: usize, declared: usize) -> TcpStream {
        let mut socket = TcpStream::connect(self.server.address()).unwrap();
        let head = format!(
            "POST {} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {}\r\n\
             Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\
             Content-Length: {declared}\r\n\r\n\
             --{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; \
             filename=\"stalled.bin\"\r\n\r\n",
            self.files, self.key
        );
        socket.write_all(head.as_bytes()).unwrap();
        socket.write_all(&vec![b's'; sent]).unwrap();
        socket
    }

    /// A small complete upload over the test's HTTP client.
    fn upload(&self) -> crate::common::Reply {
        let body = crate::common::multipart(BOUNDARY, &[("file", Some("a.txt"), None, b"abc")]);
        self.server
            .post_multipart(&self.files, Some(&self.key), BOUNDARY, &body)
    }

    fn count(&self, sql: &str) -> i64 {
        crate::common::store_count(&self.server.data, sql)
    }

    /// Uploads in progress: blobs begun and not complete.
    fn uploads_in_progress(&self) -> i64 {
        self.count("SELECT count(*) FROM blobs WHERE complete = 0")
    }

    /// Waits until `sql` answers a number that `done` accepts; panics after 20 s.
    fn wait_for(&self, what: &str, sql: &str, done: impl Fn(i64) -> bool) -> i64 {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let now = self.count(sql);
            if done(now) {
                return now;
            }
            assert!(Instant::now() < deadline, "{what}: still {now}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// An answer read off a raw socket: status line and headers, lower-cased
/// names, and the body (read to its `Content-Length`).
struct RawAnswer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl RawAnswer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn error_code(&self) -> String {
        let body: serde_json::Value = serde_json::from_str(&self.body).unwrap();
        body["error"]["code"].as_str().unwrap_or("").to_string()
    }
}

/// Reads one answer; panics when none comes within 10 s.
fn read_answer(socket: &mut TcpStream) -> RawAnswer {
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut buffer).expect("an answer");
        assert!(n > 0, "closed without an answer");
        bytes.extend_from_slice(&buffer[..n]);
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = bytes[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut buffer).expect("the body");
        assert!(n > 0, "closed inside the body");
        body.extend_from_slice(&buffer[..n]);
    }
    RawAnswer {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// `GET path` on an open connection, kept alive.
fn get(socket: &mut TcpStream, path: &str) -> RawAnswer {
    socket
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes())
        .unwrap();
    read_answer(socket)
}

/// Whether the server has closed this connection (without waiting).
fn closed_by_server(socket: &mut TcpStream) -> bool {
    socket.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let closed = match socket.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(err) => err.kind() != std::io::ErrorKind::WouldBlock,
    };
    socket.set_nonblocking(false).unwrap();
    closed
}

#[test]
fn an_upload_beyond_the_limit_is_answered_503_with_retry_after_before_its_body() {
    let fx = Fixture::new(&["--max-uploads", "2"]);
    let declared = 64 * 1024 * 1024;
    let first = fx.stalled_upload(100_000, declared);
    let _second = fx.stalled_upload(100_000, declared);
    fx.wait_for(
        "two uploads in progress",
        "SELECT count(*) FROM blobs WHERE complete = 0",
        |n| n == 2,
    );

    // A third sends only its headers: the answer comes without its body.
    let mut third = TcpStream::connect(fx.server.address()).unwrap();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\
         Content-Length: {declared}\r\n\r\n",
        fx.files, fx.key
    );
    third.write_all(head.as_bytes()).unwrap();
    let answer = read_answer(&mut third);
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert_eq!(answer.error_code(), "busy");
    assert_eq!(answer.header("retry-after"), Some("5"));
    assert!(answer.body.contains("2 uploads at once"), "{}", answer.body);
    // Its body will not be read: the connection is not kept.
    assert_eq!(answer.header("connection"), Some("close"));

    // The same through an ordinary client, which sends its whole body.
    let reply = fx.upload();
    reply.assert_error(503, "busy");
    assert_eq!(reply.header("retry-after"), Some("5"));
    // Everything else is served as usual.
    assert_eq!(fx.server.get(&fx.files, &fx.key).status, 200);

    // A client that goes away frees its slot and its chunks at once.
    drop(first);
    fx.wait_for(
        "the aborted upload removed",
        "SELECT count(*) FROM blobs WHERE complete = 0",
        |n| n == 1,
    );
    let reply = fx.upload();
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(fx.uploads_in_progress(), 1);
}

#[test]
fn idle_connections_beyond_the_limit_give_way_and_an_established_client_keeps_its_own() {
    let server = Server::start_with(&["--max-connections", "8", "--header-timeout-secs", "120"]);
    let mut established = TcpStream::connect(server.address()).unwrap();
    assert_eq!(get(&mut established, "/healthz").status, 200);

    // Twenty connections that never send a byte: only eight fit, the
    // established one among them, so at least thirteen are closed, oldest
    // first.
    let mut flood: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(server.address()).unwrap())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let closed = flood
            .iter_mut()
            .filter_map(|s| closed_by_server(s).then_some(()))
            .count();
        if closed >= 13 {
            // The newest ones hold the places left.
            assert!(!closed_by_server(flood.last_mut().unwrap()));
            break;
        }
        assert!(Instant::now() < deadline, "only {closed} closed");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The established client is still served on its own connection, and a
    // new client gets in (in the place of an idle one).
    let again = get(&mut established, "/healthz");
    assert_eq!(again.status, 200);
    assert_ne!(again.header("connection"), Some("close"));
    let mut newcomer = TcpStream::connect(server.address()).unwrap();
    assert_eq!(get(&mut newcomer, "/healthz").status, 200);
    assert_eq!(get(&mut established, "/openapi.json").status, 200);
}

#[test]
fn when_every_connection_is_working_a_new_one_is_answered_503_and_healthz_still_answers() {
    let fx = Fixture::new(&["--max-connections", "3", "--max-uploads", "10"]);
    let declared = 64 * 1024 * 1024;
    // One at a time: a connection that has not sent its request yet is idle,
    // and would give way to the next one.
    let mut working = Vec::new();
    for n in 1..=3 {
        working.push(fx.stalled_upload(10_000, declared));
        fx.wait_for(
            "the upload in progress",
            "SELECT count(*) FROM blobs WHERE complete = 0",
            |now| now == n,
        );
    }

    let mut newcomer = TcpStream::connect(fx.server.address()).unwrap();
    let answer = get(&mut newcomer, "/api/rest/1.0/ports");
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert_eq!(answer.error_code(), "busy");
    assert_eq!(answer.header("retry-after"), Some("1"));
    assert_eq!(answer.header("connection"), Some("close"));
    assert!(
        answer.body.contains("3 connections at once"),
        "{}",
        answer.body
    );

    // The liveness probe is answered all the same.
    let mut probe = TcpStream::connect(fx.server.address()).unwrap();
    let health = get(&mut probe, "/healthz");
    assert_eq!(health.status, 200, "{}", health.body);
    assert!(health.body.contains("\"ok\""), "{}", health.body);

    // Once a working connection ends, new ones are served again.
    drop(working.pop());
    fx.wait_for(
        "the aborted upload removed",
        "SELECT count(*) FROM blobs WHERE complete = 0",
        |n| n == 2,
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut client = TcpStream::connect(fx.server.address()).unwrap();
        let answer = get(&mut client, "/api/rest/1.0/ports");
        if answer.status == 401 {
            break;
        }
        // The server may not have seen the close yet.
        assert_eq!(answer.status, 503, "{}", answer.body);
        assert!(Instant::now() < deadline, "still shed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn aborted_uploads_leave_no_free_pages_once_vacuumed_and_the_file_shrinks_back() {
    let mut fx = Fixture::new(&["--max-uploads", "64", "--vacuum-every-ms", "100"]);
    let page_size = fx.count("PRAGMA page_size");
    assert_eq!(fx.count("PRAGMA auto_vacuum"), 2, "incremental auto-vacuum");
    let before = fx.count("PRAGMA page_count");

    // Fifty uploads, each with its first 1 MiB chunk stored, then cut off.
    let chunk = 1024 * 1024;
    let uploads: Vec<TcpStream> = (0..50)
        .map(|_| fx.stalled_upload(chunk + 1000, 8 * chunk))
        .collect();
    fx.wait_for(
        "fifty first chunks stored",
        "SELECT count(*) FROM blob_chunks c JOIN blobs b ON b.id = c.blob_id \
         WHERE b.complete = 0 AND length(c.data) = 1048576",
        |n| n == 50,
    );
    let grown = fx.count("PRAGMA page_count");
    assert!(
        (grown - before) * page_size >= 50 * chunk as i64,
        "{before} -> {grown} pages"
    );
    drop(uploads);

    // Their chunks are deleted at once, and the background vacuum gives the
    // pages back.
    fx.wait_for(
        "the aborted uploads removed",
        "SELECT count(*) FROM blobs WHERE complete = 0",
        |n| n == 0,
    );
    fx.wait_for("no free pages left", "PRAGMA freelist_count", |n| n == 0);
    let after = fx.count("PRAGMA page_count");
    assert!(
        (after - before) * page_size < chunk as i64,
        "{before} -> {grown} -> {after} pages"
    );

    // The file on disk is back to its size too (after the clean stop's
    // checkpoint, the .db file is the whole store).
    let _dir = fx.server.take_dir();
    assert!(fx.server.stop().success());
    let on_disk = std::fs::metadata(&fx.server.data).unwrap().len() as i64;
    assert!(
        on_disk < (before * page_size) + chunk as i64,
        "{on_disk} bytes, {before} pages before"
    );
}

#[test]
fn a_paused_upload_holds_no_chunk_and_is_stored_byte_for_byte() {
    let fx = Fixture::new(&[]);
    // No `\r`: multer holds back what may begin a boundary.
    let data: Vec<u8> = (0..1_500_000u32)
        .map(|i| match (i * 7 % 251) as u8 {
            b'\r' => 0,
            byte => byte,
        })
        .collect();
    let tail = format!("\r\n--{BOUNDARY}--\r\n");
    let part_head = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; \
         filename=\"paused.bin\"\r\n\r\n"
    );
    let declared = part_head.len() + data.len() + tail.len();
    let mut socket = fx.stalled_upload(0, declared);
    let stored = "SELECT coalesce(sum(length(c.data)), 0) FROM blob_chunks c \
                  JOIN blobs b ON b.id = c.blob_id WHERE b.complete = 0";
    // Each pause writes out what the upload holds: within a chunk, then
    // across the end of the first one (its row completed by an append).
    for (from, to) in [(0, 600_000), (600_000, 1_200_000)] {
        socket.write_all(&data[from..to]).unwrap();
        fx.wait_for("the paused upload written out", stored, |n| n == to as i64);
    }
    socket.write_all(&data[1_200_000..]).unwrap();
    socket.write_all(tail.as_bytes()).unwrap();
    let answer = read_answer(&mut socket);
    assert_eq!(answer.status, 201, "{}", answer.body);
    let created: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(created["body"]["size"], data.len());
    let id = created["id"].as_str().unwrap();
    let content = fx
        .server
        .get(&format!("{}/{id}/content", fx.files), &fx.key);
    assert_eq!(content.status, 200);
    assert!(content.body == data, "the stored bytes differ");
    // Two chunk rows, bytes: a whole one and the rest.
    assert_eq!(fx.count("SELECT count(*) FROM blob_chunks"), 2);
    if !crate::common::on_postgres() {
        // SQLite's `||` makes text of its operands: the chunks stay BLOBs
        // (a `bytea` column on PostgreSQL holds nothing else).
        assert_eq!(
            fx.count("SELECT count(*) FROM blob_chunks WHERE typeof(data) = 'blob'"),
            2
        );
    }
    assert_eq!(
        fx.count("SELECT length(data) FROM blob_chunks WHERE seq = 0"),
        1_048_576
    );
    let check = fx.server.cli(&["check"], None);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}
