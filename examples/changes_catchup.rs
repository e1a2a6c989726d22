//! A consumer of the change log catching up from 0, for `bench/run`: pages
//! `GET PATH?since=N&limit=1000` over one keep-alive HTTP/1.1 connection
//! (`support/http1.rs`, plain `std::net`) from 0 to the head it read first,
//! and parses every answer completely with serde_json, as a real consumer
//! would (each change's `record` into a `serde_json::Value`). Checks that the
//! sequences only grow and that `next` moves on.
//!
//! Usage: changes_catchup BASE KEY [PATH]   (PATH default /api/rest/1.0/changes)
//! Prints `changes N pages P seconds S bytes B request_seconds R parse_seconds Q head H`.

#[path = "support/http1.rs"]
mod http1;

use std::time::{Duration, Instant};

use serde::Deserialize;

#[derive(Deserialize)]
struct Page {
    changes: Vec<Change>,
    next: u64,
}

#[derive(Deserialize)]
struct Change {
    seq: u64,
    #[serde(rename = "type")]
    event_type: String,
    #[allow(dead_code)]
    record: serde_json::Value,
}

fn main() {
    let usage = "usage: changes_catchup BASE KEY [PATH]";
    let mut args = std::env::args().skip(1);
    let base = args.next().expect(usage);
    let key = args.next().expect(usage);
    let path = args
        .next()
        .unwrap_or_else(|| "/api/rest/1.0/changes".to_string());
    let bearer = format!("Bearer {key}");
    let headers = [("Authorization", bearer.as_str())];
    let mut conn = http1::Conn::connect(&base).expect("connect");
    let mut body = Vec::new();

    // The head now: where catching up ends.
    let status = conn
        .call(
            "GET",
            &format!("{path}?since=now&limit=1"),
            &headers,
            b"",
            &mut body,
        )
        .expect("head");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let head = serde_json::from_slice::<Page>(&body)
        .expect("head page")
        .next;

    let started = Instant::now();
    let mut request_time = Duration::ZERO;
    let mut parse_time = Duration::ZERO;
    let (mut since, mut changes, mut pages, mut bytes) = (0u64, 0u64, 0u64, 0u64);
    let mut types = std::collections::BTreeMap::<String, u64>::new();
    while since < head {
        let t0 = Instant::now();
        let status = conn
            .call(
                "GET",
                &format!("{path}?since={since}&limit=1000"),
                &headers,
                b"",
                &mut body,
            )
            .expect("page");
        let t1 = Instant::now();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let page: Page = serde_json::from_slice(&body).expect("a page of changes");
        parse_time += t1.elapsed();
        request_time += t1 - t0;
        let mut last = since;
        for change in &page.changes {
            assert!(change.seq > last, "sequence {} after {last}", change.seq);
            last = change.seq;
            *types.entry(change.event_type.clone()).or_default() += 1;
        }
        assert!(page.next > since, "the cursor did not move past {since}");
        changes += page.changes.len() as u64;
        bytes += body.len() as u64;
        pages += 1;
        since = page.next;
    }
    let seconds = started.elapsed().as_secs_f64();
    eprintln!("types: {types:?}");
    eprintln!(
        "{changes} changes in {pages} pages, {seconds:.2} s: {:.0} changes/s, {:.1} MB/s",
        changes as f64 / seconds,
        bytes as f64 / seconds / 1e6
    );
    println!(
        "changes {changes} pages {pages} seconds {seconds:.3} bytes {bytes} request_seconds {:.3} \
         parse_seconds {:.3} head {head}",
        request_time.as_secs_f64(),
        parse_time.as_secs_f64()
    );
}
