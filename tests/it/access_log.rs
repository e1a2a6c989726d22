//! The access log: a line per request, keys redacted, written in the
//! background and flushed at shutdown; a full queue drops lines and says how
//! many; `--access-log FILE` appends to a file that SIGHUP reopens.

use std::process::Command;

use crate::common::{Server, wait_for_file};

/// Access lines of a log: `TIME [INFO] access: REMOTE METHOD TARGET STATUS MSms`.
fn access_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains(" [INFO] access: 127.0.0.1:") && l.ends_with("ms"))
        .collect()
}

fn healthz(server: &Server, n: usize) {
    for i in 0..n {
        let reply = server.request("GET", &format!("/healthz?n={i}"), None, &[], None);
        assert_eq!(reply.status, 200);
    }
}

#[test]
fn every_request_gets_one_whole_line_with_its_key_redacted() {
    let server = Server::start();
    let key = server.admin_key();
    for i in 0..40 {
        let reply = server.request(
            "GET",
            &format!("/api/rest/1.0/ports?page={}&api_key={key}", i + 1),
            None,
            &[],
            None,
        );
        assert_eq!(reply.status, 200);
    }
    assert_eq!(server.get("/api/rest/1.0/ports/NOPE1", &key).status, 404);
    let log = server.log_when(|log| log.contains("GET /api/rest/1.0/ports/NOPE1 404 "));
    assert!(!log.contains(&key), "a key reached the log:\n{log}");
    let lines = access_lines(&log);
    // The admin_key login, 40 searches, one 404.
    assert_eq!(lines.len(), 42, "{log}");
    for (i, line) in lines[1..41].iter().enumerate() {
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields.len(), 8, "{line}");
        assert_eq!(fields[0].len(), "2026-11-24T01:06:19.123Z".len(), "{line}");
        assert!(fields[0].ends_with('Z'), "{line}");
        assert_eq!(fields[1], "[INFO]");
        assert_eq!(fields[2], "access:");
        assert_eq!(fields[4], "GET");
        assert_eq!(
            fields[5],
            format!("/api/rest/1.0/ports?page={}&api_key=REDACTED", i + 1)
        );
        assert_eq!(fields[6], "200");
        assert!(
            fields[7].trim_end_matches("ms").parse::<f64>().is_ok(),
            "{line}"
        );
    }
}

#[test]
fn queued_lines_are_written_at_a_clean_shutdown() {
    // The writer's clock never comes round: only the shutdown writes.
    let mut server = Server::start_with(&["--access-log-flush-ms", "600000"]);
    healthz(&server, 5);
    assert!(server.stop().success());
    let log = server.log_text();
    let lines = access_lines(&log);
    assert_eq!(lines.len(), 5, "{log}");
    for (i, line) in lines.iter().enumerate() {
        assert!(
            line.contains(&format!(" GET /healthz?n={i} 200 ")),
            "{line}"
        );
    }
    assert!(!log.contains("dropped"), "{log}");
}

#[test]
fn a_full_queue_drops_lines_and_reports_how_many() {
    let mut server = Server::start_with(&[
        "--access-log-flush-ms",
        "600000",
        "--access-log-queue-lines",
        "3",
    ]);
    healthz(&server, 10);
    assert!(server.stop().success());
    let log = server.log_text();
    let lines = access_lines(&log);
    assert_eq!(lines.len(), 3, "{log}");
    for (i, line) in lines.iter().enumerate() {
        assert!(
            line.contains(&format!(" GET /healthz?n={i} 200 ")),
            "{line}"
        );
    }
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("dropped")).collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(warnings[0].contains("[WARN]"), "{log}");
    assert!(warnings[0].contains("access log: 7 lines dropped"), "{log}");
}

#[test]
fn off_and_warn_write_no_access_line() {
    for flags in [&["--access-log", "off"][..], &["--log-level", "warn"][..]] {
        let mut server = Server::start_with(flags);
        healthz(&server, 3);
        let status = server.stop();
        let log = server.log_text();
        assert!(status.success(), "{flags:?}: {status}: {log}");
        assert!(access_lines(&log).is_empty(), "{flags:?}: {log}");
        assert!(!log.contains("/healthz"), "{flags:?}: {log}");
    }
}

#[test]
fn a_file_target_gets_the_lines_and_sighup_reopens_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("access.log");
    let rotated = dir.path().join("access.log.1");
    let mut server = Server::start_with(&["--access-log", file.to_str().unwrap()]);
    healthz(&server, 2);
    wait_for_file(&file, |text| text.contains("GET /healthz?n=1 200 "));
    // logrotate: move the file away, then SIGHUP.
    std::fs::rename(&file, &rotated).unwrap();
    let pid = server.pid().to_string();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    server.log_when(|log| log.contains("SIGHUP: reopening the access log"));
    // The reopen happens at the writer's next drain: wait for the new file,
    // which the first line after it creates.
    let mut n = 0;
    let fresh = loop {
        let reply = server.request("GET", &format!("/healthz?after={n}"), None, &[], None);
        assert_eq!(reply.status, 200);
        n += 1;
        if file.exists() {
            break wait_for_file(&file, |text| text.contains("GET /healthz?after="));
        }
        assert!(n < 500, "the access log was not reopened");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(!fresh.contains("?n="), "{fresh}");
    assert!(server.stop().success());
    let old = std::fs::read_to_string(&rotated).unwrap();
    assert_eq!(
        access_lines(&old).len(),
        2 + old.matches("?after=").count(),
        "{old}"
    );
    let fresh = std::fs::read_to_string(&file).unwrap();
    // Every request made after the move is in one of the two files.
    let after = old.matches("?after=").count() + fresh.matches("?after=").count();
    assert_eq!(after, n, "old:\n{old}\nnew:\n{fresh}");
    // Nothing went to the server's own log.
    assert!(access_lines(&server.log_text()).is_empty());
}
