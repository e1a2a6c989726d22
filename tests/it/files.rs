//! Files on jobs (older paths) and attachments on documents (v2): streamed
//! upload and download over real HTTP, headers, limits, and the two views of
//! one record.

use crate::common::{Reply, Server, multipart, workspace_with_job};
use serde_json::{Value, json};

const BOUNDARY: &str = "quaysideTestBoundary7MA4YWxkTrZu0gW";

/// A workspace with one job, owned by the admin's tenant.
struct Fixture {
    server: Server,
    key: String,
    workspace: String,
    job: String,
}

impl Fixture {
    fn new(extra: &[&str]) -> Fixture {
        let server = Server::start_with(extra);
        let key = server.admin_key();
        let (workspace, job) = workspace_with_job(&server, &key, "Owner Co", Some("files"));
        Fixture {
            server,
            key,
            workspace,
            job,
        }
    }

    fn files(&self) -> String {
        format!("/workspaces/{}/jobs/{}/files", self.workspace, self.job)
    }

    fn attachments(&self, document: &str) -> String {
        format!(
            "/v2/workspaces/{}/documents/{document}/attachments",
            self.workspace
        )
    }

    fn upload(&self, path: &str, name: &str, content_type: Option<&str>, bytes: &[u8]) -> Reply {
        let body = multipart(BOUNDARY, &[("file", Some(name), content_type, bytes)]);
        self.upload_raw(path, &body)
    }

    fn upload_raw(&self, path: &str, body: &[u8]) -> Reply {
        self.server
            .post_multipart(path, Some(&self.key), BOUNDARY, body)
    }

    /// [`Fixture::upload_raw`] for a body the server refuses before it has
    /// all arrived (see [`Server::exchange_raw`]).
    fn upload_early(&self, path: &str, body: &[u8]) -> Reply {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
             Authorization: Bearer {}\r\n\
             Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\
             Content-Length: {}\r\n\r\n",
            self.server.address(),
            self.key,
            body.len()
        );
        self.server.exchange_raw(&[head.as_bytes(), body].concat())
    }

    fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        self.server
            .request("GET", path, Some(&self.key), headers, None)
    }
}

/// Deterministic bytes that are not a repeating pattern of the chunk size.
fn pseudo_random(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    // The server's hash is checked against an independent one: sha256sum.
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

#[test]
fn a_50_mib_file_round_trips_byte_identical_with_a_range_in_the_middle() {
    let fx = Fixture::new(&[]);
    let data = pseudo_random(50 * 1024 * 1024 + 12_345);
    let reply = fx.upload(&fx.files(), "survey.bin", None, &data);
    assert_eq!(reply.status, 201, "{}", reply.text());
    let descriptor = reply.json();
    let id = descriptor["id"].as_str().unwrap().to_string();
    assert_eq!(descriptor["caption"], "survey.bin");
    assert!(
        descriptor["location"]
            .as_str()
            .is_some_and(|l| !l.is_empty())
    );
    assert_eq!(descriptor["body"]["format"], "application/octet-stream");
    assert_eq!(descriptor["body"]["size"], data.len());
    let sha = sha256_hex(&data);
    assert_eq!(descriptor["body"]["sha256"], sha.as_str());

    let content = format!("{}/{id}/content", fx.files());
    let full = fx.get(&content, &[]);
    assert_eq!(full.status, 200);
    assert_eq!(full.body.len(), data.len());
    assert!(full.body == data, "downloaded bytes differ");
    assert_eq!(full.header("etag"), Some(format!("\"{sha}\"").as_str()));
    assert_eq!(
        full.header("content-length"),
        Some(data.len().to_string().as_str())
    );
    assert_eq!(full.header("accept-ranges"), Some("bytes"));

    // A range across a chunk boundary in the middle of the file.
    let (start, end) = (25 * 1024 * 1024 - 100, 25 * 1024 * 1024 + 99_999);
    let part = fx.get(&content, &[("Range", &format!("bytes={start}-{end}"))]);
    assert_eq!(part.status, 206);
    assert!(part.body == data[start..=end], "range bytes differ");
    assert_eq!(
        part.header("content-range"),
        Some(format!("bytes {start}-{end}/{}", data.len()).as_str())
    );
}

#[test]
fn content_headers_etag_and_ranges() {
    let fx = Fixture::new(&[]);
    let data = b"hello, inspector".to_vec();
    let reply = fx.upload(&fx.files(), "Łódź report.pdf", None, &data);
    assert_eq!(reply.status, 201);
    assert_eq!(reply.json()["body"]["format"], "application/pdf");
    let id = reply.json()["id"].as_str().unwrap().to_string();
    let content = format!("{}/{id}/content", fx.files());

    let full = fx.get(&content, &[]);
    assert_eq!(full.body, data);
    assert_eq!(full.header("content-type"), Some("application/pdf"));
    let disposition = full.header("content-disposition").unwrap();
    assert!(
        disposition.starts_with("attachment; filename=\""),
        "{disposition}"
    );
    assert!(
        disposition.contains("filename*=UTF-8''%C5%81%C3%B3d%C5%BA%20report.pdf"),
        "{disposition}"
    );

    let etag = full.header("etag").unwrap().to_string();
    let cached = fx.get(&content, &[("If-None-Match", &etag)]);
    assert_eq!(cached.status, 304);
    assert!(cached.body.is_empty());
    assert_eq!(
        fx.get(&content, &[("If-None-Match", "\"other\"")]).status,
        200
    );

    let suffix = fx.get(&content, &[("Range", "bytes=-9")]);
    assert_eq!(
        (suffix.status, suffix.body.as_slice()),
        (206, &b"inspector"[..])
    );
    let open = fx.get(&content, &[("Range", "bytes=7-")]);
    assert_eq!(
        (open.status, open.body.as_slice()),
        (206, &b"inspector"[..])
    );
    let outside = fx.get(&content, &[("Range", "bytes=100-200")]);
    outside.assert_error(416, "range_not_satisfiable");
    assert_eq!(outside.header("content-range"), Some("bytes */16"));
    // Several ranges are not served piecemeal: the whole file comes back.
    let several = fx.get(&content, &[("Range", "bytes=0-1,3-4")]);
    assert_eq!((several.status, several.body.len()), (200, 16));

    // The part's own media type wins over the name.
    let typed = fx.upload(&fx.files(), "data.bin", Some("text/csv"), b"a,b\n");
    assert_eq!(typed.json()["body"]["format"], "text/csv");
}

#[test]
fn an_empty_file_is_a_file() {
    let fx = Fixture::new(&[]);
    let reply = fx.upload(&fx.files(), "empty.txt", None, b"");
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(reply.json()["body"]["size"], 0);
    let id = reply.json()["id"].as_str().unwrap().to_string();
    let got = fx.get(&format!("{}/{id}/content", fx.files()), &[]);
    assert_eq!((got.status, got.body.len()), (200, 0));
}

#[test]
fn list_descriptor_and_delete_on_the_older_path() {
    let fx = Fixture::new(&[]);
    let a = fx.upload(&fx.files(), "a.txt", None, b"aaa").json();
    let b = fx.upload(&fx.files(), "b.txt", None, b"bbbb").json();
    let list = fx.get(&fx.files(), &[]);
    assert_eq!(list.status, 200);
    assert_eq!(list.header("x-total-count"), Some("2"));
    let listed = list.json();
    let ids: Vec<&Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["id"])
        .collect();
    assert_eq!(ids, vec![&a["id"], &b["id"]]);
    let one = fx.get(
        &format!("{}/{}", fx.files(), a["id"].as_str().unwrap()),
        &[],
    );
    assert_eq!(one.json(), a);

    let path = format!("{}/{}", fx.files(), b["id"].as_str().unwrap());
    let deleted = fx.server.delete(&path, &fx.key);
    assert_eq!(deleted.status, 200);
    assert_eq!(deleted.json(), b);
    fx.get(&path, &[]).assert_error(404, "not_found");
    fx.get(&format!("{path}/content"), &[])
        .assert_error(404, "not_found");
    assert_eq!(fx.get(&fx.files(), &[]).header("x-total-count"), Some("1"));
}

#[test]
fn a_job_with_a_file_is_not_empty() {
    let fx = Fixture::new(&[]);
    let file = fx.upload(&fx.files(), "a.txt", None, b"x").json();
    let job_path = format!("/workspaces/{}/jobs/{}", fx.workspace, fx.job);
    fx.server
        .delete(&job_path, &fx.key)
        .assert_error(409, "job_not_empty");
    assert_eq!(fx.get(&job_path, &[]).status, 200);
    let file_path = format!("{}/{}", fx.files(), file["id"].as_str().unwrap());
    assert_eq!(fx.server.delete(&file_path, &fx.key).status, 200);
    assert_eq!(fx.server.delete(&job_path, &fx.key).status, 200);
}

#[test]
fn older_files_and_v2_attachments_are_one_record() {
    let fx = Fixture::new(&[]);
    // Older upload, v2 read and delete.
    let older = fx
        .upload(&fx.files(), "old.txt", None, b"from the older path")
        .json();
    let id = older["id"].as_str().unwrap();
    let v2_list = fx.get(&fx.attachments(&fx.job), &[]);
    assert_eq!(v2_list.status, 200);
    let envelope = &v2_list.json()[0];
    assert_eq!(envelope["type"], "svc.hub.attachment");
    assert_eq!(envelope["id"], id);
    assert_eq!(envelope["body"]["document"], fx.job.as_str());
    assert_eq!(envelope["body"]["workspace"], fx.workspace.as_str());
    assert_eq!(envelope["body"]["caption"], "old.txt");
    assert_eq!(envelope["body"]["location"], older["location"]);
    let v2_content = fx.get(&format!("{}/{id}/content", fx.attachments(&fx.job)), &[]);
    assert_eq!(v2_content.body, b"from the older path");
    let gone = fx
        .server
        .delete(&format!("{}/{id}", fx.attachments(&fx.job)), &fx.key);
    assert_eq!(gone.status, 200);
    assert_eq!(gone.json()["id"], id);
    fx.get(&format!("{}/{id}", fx.files()), &[])
        .assert_error(404, "not_found");

    // v2 upload with references, older read.
    let path = format!(
        "{}?clientReferenceNumber=C-1&vendorReferenceNumber=V-9&description=Draft+survey",
        fx.attachments(&fx.job)
    );
    let v2 = fx.upload(&path, "new.txt", Some("text/plain"), b"from v2");
    assert_eq!(v2.status, 201, "{}", v2.text());
    let body = v2.json()["body"].clone();
    assert_eq!(body["clientReferenceNumber"], "C-1");
    assert_eq!(body["vendorReferenceNumber"], "V-9");
    assert_eq!(body["description"], "Draft survey");
    assert_eq!(body["size"], 7);
    let id = v2.json()["id"].as_str().unwrap().to_string();
    let descriptor = fx.get(&format!("{}/{id}", fx.files()), &[]).json();
    assert_eq!(descriptor["caption"], "new.txt");
    assert_eq!(descriptor["body"]["format"], "text/plain");
    assert_eq!(
        fx.get(&format!("{}/{id}/content", fx.files()), &[]).body,
        b"from v2"
    );
}

#[test]
fn attachments_hang_on_any_document() {
    let fx = Fixture::new(&[]);
    let timelog = fx.server.post(
        &format!("/workspaces/{}/jobs/{}/timelog", fx.workspace, fx.job),
        &fx.key,
        &json!({"type": {"name": "Arrived"}, "category": "event", "start": "2026-11-21T08:00:00Z"}),
    );
    assert_eq!(timelog.status, 201, "{}", timelog.text());
    let doc = timelog.json()["id"].as_str().unwrap().to_string();
    let reply = fx.upload(&fx.attachments(&doc), "nor.pdf", None, b"%PDF-1.7");
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(reply.json()["body"]["document"], doc.as_str());
    // It is not a file of the job.
    assert_eq!(fx.get(&fx.files(), &[]).header("x-total-count"), Some("0"));
    // The time log now cannot be deleted before its attachment.
    let timelog_path = format!("/workspaces/{}/jobs/{}/timelog/{doc}", fx.workspace, fx.job);
    fx.server
        .delete(&timelog_path, &fx.key)
        .assert_error(409, "document_has_attachments");
    // Unknown documents answer 404.
    fx.upload(&fx.attachments("no-such-doc"), "x.txt", None, b"x")
        .assert_error(404, "not_found");
}

#[test]
fn malformed_uploads_are_refused_and_store_nothing() {
    let fx = Fixture::new(&["--max-upload-mb", "1"]);
    let json = fx.server.post(&fx.files(), &fx.key, &json!({"file": "x"}));
    json.assert_error(415, "unsupported_media_type");
    fx.upload_raw(&fx.files(), &multipart(BOUNDARY, &[]))
        .assert_error(400, "missing_field");
    let two = multipart(
        BOUNDARY,
        &[
            ("file", Some("a.txt"), None, b"a"),
            ("file", Some("b.txt"), None, b"b"),
        ],
    );
    fx.upload_raw(&fx.files(), &two)
        .assert_error(400, "invalid_field");
    let other = multipart(BOUNDARY, &[("note", None, None, b"hello")]);
    let reply = fx.upload_raw(&fx.files(), &other);
    reply.assert_error(400, "invalid_field");
    assert_eq!(reply.error_field().as_deref(), Some("note"));
    let truncated = b"--quaysideTestBoundary7MA4YWxkTrZu0gW\r\nContent-Disposition: form-data; name=\"file\"; filename=\"t.txt\"\r\n\r\nno end";
    assert_eq!(fx.upload_raw(&fx.files(), truncated).status, 400);
    let too_big = pseudo_random(1024 * 1024 + 1);
    fx.upload(&fx.files(), "big.bin", None, &too_big)
        .assert_error(413, "payload_too_large");
    fx.upload_raw(
        &format!("{}?colour=red", fx.attachments(&fx.job)),
        &multipart(BOUNDARY, &[("file", Some("a"), None, b"a")]),
    )
    .assert_error(400, "invalid_query");
    // Nothing of the refused uploads was recorded.
    assert_eq!(fx.get(&fx.files(), &[]).json(), Value::Array(vec![]));
}

#[test]
fn a_foreign_tenant_sees_no_files() {
    let fx = Fixture::new(&[]);
    let file = fx
        .upload(&fx.files(), "secret.txt", None, b"commercial")
        .json();
    let id = file["id"].as_str().unwrap();
    let stranger = fx.server.add_user("stranger", &[]);
    let paths = [
        fx.files(),
        format!("{}/{id}", fx.files()),
        format!("{}/{id}/content", fx.files()),
        fx.attachments(&fx.job),
        format!("{}/{id}", fx.attachments(&fx.job)),
        format!("{}/{id}/content", fx.attachments(&fx.job)),
    ];
    for path in &paths {
        fx.server
            .get(path, &stranger)
            .assert_error(404, "not_found");
    }
    fx.server
        .delete(&format!("{}/{id}", fx.files()), &stranger)
        .assert_error(404, "not_found");
    let body = multipart(BOUNDARY, &[("file", Some("x.txt"), None, b"x")]);
    fx.server
        .post_multipart(&fx.files(), Some(&stranger), BOUNDARY, &body)
        .assert_error(404, "not_found");
    // Still there for its owner.
    assert_eq!(
        fx.get(&format!("{}/{id}/content", fx.files()), &[]).body,
        b"commercial"
    );
}

#[test]
fn files_survive_a_restart() {
    let mut fx = Fixture::new(&[]);
    let data = pseudo_random(3 * 1024 * 1024 + 7);
    let id = fx.upload(&fx.files(), "keep.bin", None, &data).json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let _dir = fx.server.take_dir();
    assert!(fx.server.stop().success());
    let again = Server::spawn(&fx.server.data, &[]);
    let key = again.admin_key();
    let got = again.request(
        "GET",
        &format!("{}/{id}/content", fx.files()),
        Some(&key),
        &[],
        None,
    );
    assert_eq!(got.status, 200);
    assert!(got.body == data);
}

#[test]
fn uploaded_html_svg_and_javascript_are_served_as_sent() {
    let fx = Fixture::new(&[]);
    let mut contents = Vec::new();
    for (name, content_type) in [
        ("page.html", Some("text/html")),
        ("guessed.html", None),
        ("drawing.svg", Some("image/svg+xml")),
        ("script.js", Some("text/javascript")),
        ("feed.xml", Some("application/xml")),
        ("report.pdf", Some("application/pdf")),
    ] {
        let reply = fx.upload(
            &fx.files(),
            name,
            content_type,
            b"<script>alert(1)</script>",
        );
        assert_eq!(reply.status, 201, "{}", reply.text());
        let format = reply.json()["body"]["format"].as_str().unwrap().to_string();
        let id = reply.json()["id"].as_str().unwrap().to_string();
        contents.push((format, format!("{}/{id}/content", fx.files())));
    }
    for (format, content) in &contents {
        let reply = fx.get(content, &[]);
        assert_eq!(reply.status, 200);
        let expected = if format == "application/pdf" {
            "application/pdf"
        } else {
            "application/octet-stream"
        };
        // The record keeps the type as given; the download is inert bytes.
        assert_eq!(reply.header("content-type"), Some(expected), "{format}");
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(
            reply.header("content-security-policy"),
            Some("sandbox; default-src 'none'")
        );
        assert_eq!(reply.header("cache-control"), Some("private, no-cache"));
    }
    // Answers of /content that are not the bytes are protected alike.
    let etag = fx
        .get(&contents[0].1, &[])
        .header("etag")
        .unwrap()
        .to_string();
    let not_modified = fx.get(&contents[0].1, &[("If-None-Match", &etag)]);
    assert_eq!(not_modified.status, 304);
    assert_eq!(
        not_modified.header("x-content-type-options"),
        Some("nosniff")
    );
    let missing = fx.get(
        &format!(
            "{}/00000000-0000-0000-0000-000000000000/content",
            fx.files()
        ),
        &[],
    );
    missing.assert_error(404, "not_found");
    assert_eq!(missing.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(missing.header("cache-control"), Some("no-store"));

    // The option keeps active types as they were sent, still sandboxed.
    let allowing = Fixture::new(&["--serve-active-content"]);
    let reply = allowing.upload(
        &allowing.files(),
        "page.html",
        Some("text/html"),
        b"<p>hi</p>",
    );
    let id = reply.json()["id"].as_str().unwrap().to_string();
    let served = allowing.get(&format!("{}/{id}/content", allowing.files()), &[]);
    assert_eq!(served.header("content-type"), Some("text/html"));
    assert_eq!(
        served.header("content-security-policy"),
        Some("sandbox; default-src 'none'")
    );
}

#[test]
fn head_on_content_is_405() {
    let fx = Fixture::new(&[]);
    let data = b"0123456789".to_vec();
    let reply = fx.upload(&fx.attachments(&fx.job), "digits.txt", None, &data);
    assert_eq!(reply.status, 201, "{}", reply.text());
    let id = reply.json()["id"].as_str().unwrap().to_string();
    for content in [
        format!("{}/{id}/content", fx.files()),
        format!("{}/{id}/content", fx.attachments(&fx.job)),
    ] {
        let full = fx.get(&content, &[]);
        let head = fx
            .server
            .request("HEAD", &content, Some(&fx.key), &[], None);
        assert_eq!(head.status, 200);
        assert!(head.body.is_empty());
        for header in [
            "content-type",
            "content-length",
            "etag",
            "content-disposition",
        ] {
            assert_eq!(head.header(header), full.header(header), "{header}");
        }
        assert_eq!(head.header("content-length"), Some("10"));
        assert_eq!(head.header("x-content-type-options"), Some("nosniff"));
        let part = fx.server.request(
            "HEAD",
            &content,
            Some(&fx.key),
            &[("Range", "bytes=2-4")],
            None,
        );
        assert_eq!(part.status, 206);
        assert_eq!(part.header("content-range"), Some("bytes 2-4/10"));
        assert_eq!(part.header("content-length"), Some("3"));
        let etag = full.header("etag").unwrap();
        let cached = fx.server.request(
            "HEAD",
            &content,
            Some(&fx.key),
            &[("If-None-Match", etag)],
            None,
        );
        assert_eq!(cached.status, 304);
        assert_eq!(
            fx.server.request("HEAD", &content, None, &[], None).status,
            401
        );
        let allow = fx
            .server
            .request("POST", &content, Some(&fx.key), &[], None);
        allow.assert_error(405, "method_not_allowed");
        assert_eq!(allow.header("allow"), Some("GET, HEAD, OPTIONS"));
    }
}

#[test]
fn range_numbers_past_64_bits_are_answered_with_the_whole_file() {
    let fx = Fixture::new(&[]);
    let reply = fx.upload(&fx.files(), "a.txt", None, b"abcdef");
    let id = reply.json()["id"].as_str().unwrap().to_string();
    let content = format!("{}/{id}/content", fx.files());
    let huge = "99999999999999999999999";
    for range in [
        format!("bytes={huge}-"),
        format!("bytes=0-{huge}"),
        format!("bytes=-{huge}"),
    ] {
        let reply = fx.get(&content, &[("Range", &range)]);
        reply.assert_error(416, "range_not_satisfiable");
        assert_eq!(reply.header("content-range"), Some("bytes */6"), "{range}");
    }
    // The largest 64-bit position is still a position: clamped to the file.
    let reply = fx.get(&content, &[("Range", "bytes=2-18446744073709551615")]);
    assert_eq!((reply.status, reply.body.as_slice()), (206, &b"cdef"[..]));
}

#[test]
fn a_3_mb_file_name_is_stored() {
    let fx = Fixture::new(&[]);
    let listed = || fx.get(&fx.files(), &[]).json();
    // 255 bytes of UTF-8 is the most a name may hold.
    let longest = format!("{}.pdf", "ł".repeat(125) + "x");
    assert_eq!(longest.len(), 255);
    let reply = fx.upload(&fx.files(), &longest, None, b"ok");
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(reply.json()["caption"], longest);
    let too_long = format!("{}.pdf", "a".repeat(252));
    let reply = fx.upload(&fx.files(), &too_long, None, b"no");
    reply.assert_error(400, "invalid_field");
    assert_eq!(reply.error_field().as_deref(), Some("file"));
    // Control characters that header syntax lets through: a tab, C1 codes.
    for name in ["tab\there.txt", "next\u{85}line.txt"] {
        let reply = fx.upload(&fx.files(), name, None, b"no");
        reply.assert_error(400, "invalid_field");
        assert_eq!(reply.error_field().as_deref(), Some("file"));
    }

    // Part headers past 8 KiB (a 3 MB name, a long header of another name)
    // are refused while they arrive, before they are held whole.
    for header in [
        format!(
            "Content-Disposition: form-data; name=\"file\"; filename=\"{}\"",
            "n".repeat(3 * 1024 * 1024)
        ),
        format!(
            "Content-Disposition: form-data; name=\"file\"; filename=\"a\"\r\nX-Padding: {}",
            "p".repeat(9000)
        ),
    ] {
        let body = format!("--{BOUNDARY}\r\n{header}\r\n\r\nbytes\r\n--{BOUNDARY}--\r\n");
        let reply = fx.upload_early(&fx.files(), body.as_bytes());
        reply.assert_error(400, "invalid_multipart");
    }
    // A preamble is held like headers, and limited alike.
    let body = format!(
        "{}\r\n{}",
        "p".repeat(9000),
        String::from_utf8(multipart(BOUNDARY, &[("file", Some("a"), None, b"a")])).unwrap()
    );
    fx.upload_raw(&fx.files(), body.as_bytes())
        .assert_error(400, "invalid_multipart");
    // Headers just under the limit are fine.
    let header = format!(
        "Content-Disposition: form-data; name=\"file\"; filename=\"ok.txt\"\r\nX-Padding: {}",
        "p".repeat(8000)
    );
    let body = format!("--{BOUNDARY}\r\n{header}\r\n\r\nbytes\r\n--{BOUNDARY}--\r\n");
    assert_eq!(fx.upload_raw(&fx.files(), body.as_bytes()).status, 201);
    // Only the two accepted files were recorded.
    assert_eq!(listed().as_array().map(Vec::len), Some(2), "{}", listed());
}
