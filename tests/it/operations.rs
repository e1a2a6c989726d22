//! Operating a data file: backup while writing, check, clean shutdown,
//! migration forward and refusal, UN/LOCODE import, a full disk.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::common::{self, Server, UNLOCODE_CODE_LIST, UNLOCODE_SAMPLE, run_cli};
use rusqlite::Connection;
use serde_json::json;

fn codes_in(file: &std::path::Path) -> Vec<String> {
    let conn = Connection::open(file).unwrap();
    conn.prepare("SELECT client_code FROM locations WHERE catalog = 'ports'")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn backup_while_writing_holds_every_write_acknowledged_before_it() {
    let server = Arc::new(Server::start());
    let key = server.admin_key();
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (server, key, acknowledged, stop) =
                (server.clone(), key.clone(), acknowledged.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let code = format!("W{w}N{n}");
                    let reply = server.put(
                        &format!("/api/rest/1.0/ports/{code}"),
                        &key,
                        &json!({"name": format!("Port {code}"), "generalComments": "x".repeat(2000)}),
                    );
                    assert_eq!(reply.status, 201, "{}", reply.text());
                    acknowledged.lock().unwrap().push(code);
                    n += 1;
                }
            })
        })
        .collect();
    // Enough writes acknowledged to prove something, however slowly the
    // writers run: a fixed pause may see too few on a busy machine.
    let before: Vec<String> = common::wait_for("more than ten acknowledged writes", 60, || {
        let acknowledged = acknowledged.lock().unwrap();
        (acknowledged.len() > 10).then(|| acknowledged.clone())
    });
    let copy = server.dir().join("copy.db");
    let out = server.cli(&["backup", copy.to_str().unwrap()], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    assert!(
        before.len() > 10,
        "too few writes to prove anything: {}",
        before.len()
    );
    let check = run_cli(&copy, &["check"], None);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let in_copy = codes_in(&copy);
    for code in &before {
        assert!(
            in_copy.contains(code),
            "{code} acknowledged before the backup is missing"
        );
    }
    // The copy is a working data file.
    let served = Server::spawn(&copy, &[]);
    let key = served.admin_key();
    assert_eq!(
        served
            .get(&format!("/api/rest/1.0/ports/{}", before[0]), &key)
            .status,
        200
    );
    // A backup never overwrites.
    let again = server.cli(&["backup", copy.to_str().unwrap()], None);
    assert!(!again.status.success());
}

#[test]
fn clean_shutdown_leaves_one_complete_file() {
    let mut server = Server::start();
    let dir = server.take_dir();
    let key = server.admin_key();
    for i in 0..20 {
        let reply = server.put(
            &format!("/api/rest/1.0/ports/P{i}"),
            &key,
            &json!({"name": "p"}),
        );
        assert_eq!(reply.status, 201);
    }
    assert!(server.stop().success());
    let wal = server.data.with_extension("db-wal");
    assert!(
        !wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0,
        "the WAL still holds data after a clean stop"
    );
    // The .db file alone is the whole store.
    let alone = dir.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    let copied = alone.join("copy.db");
    std::fs::copy(&server.data, &copied).unwrap();
    assert_eq!(codes_in(&copied).len(), 20);
    assert!(run_cli(&copied, &["check"], None).status.success());
}

#[test]
fn check_finds_a_broken_reference() {
    let server = Server::start();
    let key = server.admin_key();
    assert_eq!(
        server
            .put("/api/rest/1.0/ports/OK1", &key, &json!({"name": "ok"}))
            .status,
        201
    );
    let ok = server.cli(&["check"], None);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    {
        let conn = Connection::open(&server.data).unwrap();
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF; INSERT INTO sessions VALUES (x'00', 999, 0, 0);",
        )
        .unwrap();
    }
    let broken = server.cli(&["check"], None);
    assert!(!broken.status.success());
    assert!(String::from_utf8_lossy(&broken.stdout).contains("foreign key: sessions"));
}

#[test]
fn a_file_from_the_first_release_is_migrated_forward() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("old.db");
    {
        let conn = Connection::open(&data).unwrap();
        conn.execute_batch(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/schema-v1.sql"
        )))
        .unwrap();
        conn.execute(
            "INSERT INTO locations (catalog, client_code, name, name_folded, status_code, created_at, \
             creator, modified_at, modifier) VALUES ('ports', 'OLD1', 'Old Port', 'old port', 'ACTIVE', \
             0, 'admin', 0, 'admin')",
            [],
        )
        .unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
    }
    let server = Server::spawn(&data, &[]);
    let key = server.admin_key();
    let port = server.get("/api/rest/1.0/ports/OLD1", &key);
    assert_eq!(port.status, 200);
    assert_eq!(port.json()["dateCreated"], "1970-01-01T00:00:00.000Z");
    // The workspace service's tables are there.
    assert_eq!(server.get("/workspaces", &key).status, 200);
    let current = quayside::db::migrate::CURRENT_VERSION;
    assert!(server.log_text().contains(&format!(
        "migrated the data file from schema version 1 to {current}"
    )));
    let version: i64 = Connection::open(&data)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, current);
}

#[test]
fn a_file_from_a_newer_binary_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("future.db");
    {
        let conn = Connection::open(&data).unwrap();
        conn.execute_batch("CREATE TABLE future (x)").unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let out = std::process::Command::new(common::binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("schema version 99, newer than this binary"),
        "{stderr}"
    );
    // Nothing was changed.
    let version: i64 = Connection::open(&data)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 99);
}

#[test]
fn unlocode_import_is_idempotent_and_served() {
    let server = Server::start();
    let first = server.cli(&["import-unlocode", UNLOCODE_SAMPLE], None);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let report = String::from_utf8_lossy(&first.stderr).to_string();
    assert!(report.contains("ports 82 created"), "{report}");
    assert!(report.contains("inland facilities 44 created"), "{report}");
    assert!(
        report.contains("line 8: skipped AOKOT, marked for deletion"),
        "{report}"
    );
    assert!(
        report.contains("line 19: skipped BEBRU, repeats an earlier row"),
        "{report}"
    );
    let key = server.admin_key();
    let rotterdam = server.get("/api/rest/1.0/ports/NLRTM", &key).json();
    assert_eq!(rotterdam["name"], "Rotterdam");
    assert_eq!(rotterdam["latitudeDeg"], 51);
    assert_eq!(rotterdam["latitudeNs"], "N");
    assert_eq!(rotterdam["creator"], "unlocode-import");
    let before = rotterdam["dateModified"].clone();

    let second = server.cli(&["import-unlocode", UNLOCODE_SAMPLE], None);
    assert!(second.status.success());
    let report = String::from_utf8_lossy(&second.stderr).to_string();
    assert!(
        report.contains("ports 0 created, 0 updated, 82 unchanged"),
        "{report}"
    );
    let search = server
        .get("/api/rest/1.0/ports?resultsPerPage=1", &key)
        .json();
    assert_eq!(search["totalResultsAvailable"], 82);
    let inland = server
        .get("/api/rest/1.0/inland_facilities?resultsPerPage=1", &key)
        .json();
    assert_eq!(inland["totalResultsAvailable"], 44);
    assert_eq!(
        server.get("/api/rest/1.0/ports/NLRTM", &key).json()["dateModified"],
        before
    );
}

#[test]
fn a_full_disk_answers_507_keeps_reads_and_loses_nothing() {
    let mut server = Server::start();
    let dir = server.take_dir();
    let key = server.admin_key();
    assert_eq!(
        server
            .put("/api/rest/1.0/ports/KEEP", &key, &json!({"name": "Kept"}))
            .status,
        201
    );
    assert!(server.stop().success());
    let pages: i64 = Connection::open(&server.data)
        .unwrap()
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    let capped = Server::spawn(
        &server.data,
        &["--max-page-count", &(pages + 12).to_string()],
    );
    let key = capped.admin_key();
    let mut stored = Vec::new();
    let mut full = None;
    for i in 0..200 {
        let code = format!("FILL{i}");
        let reply = capped.put(
            &format!("/api/rest/1.0/ports/{code}"),
            &key,
            &json!({"name": code, "generalComments": "z".repeat(9000)}),
        );
        match reply.status {
            201 => stored.push(code),
            _ => {
                full = Some(reply);
                break;
            }
        }
    }
    let full = full.expect("the capped file never filled up");
    full.assert_error(507, "insufficient_storage");
    // Reads go on.
    assert_eq!(capped.get("/api/rest/1.0/ports/KEEP", &key).status, 200);
    for code in &stored {
        assert_eq!(
            capped
                .get(&format!("/api/rest/1.0/ports/{code}"), &key)
                .status,
            200
        );
    }
    drop(capped);
    let check = run_cli(&server.data, &["check"], None);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    // Without the cap, writes work again and nothing acknowledged was lost.
    let again = Server::spawn(&server.data, &[]);
    let key = again.admin_key();
    assert_eq!(
        again
            .put("/api/rest/1.0/ports/AFTER", &key, &json!({"name": "a"}))
            .status,
        201
    );
    let codes = codes_in(&server.data);
    for code in stored.iter().chain(["KEEP".to_string()].iter()) {
        assert!(codes.contains(code), "{code} was lost");
    }
    drop(dir);
}

#[test]
fn the_full_unlocode_list_imports_and_reimports_in_place() {
    let server = Server::start();
    let list = UNLOCODE_CODE_LIST;
    let first = server.cli(&["import-unlocode", list], None);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let report = String::from_utf8_lossy(&first.stderr).to_string();
    // 17,616 port rows and 22,075 narrow-inland rows in edition 2024-2, less the rows
    // marked for deletion and the repeated codes, each reported by line.
    assert!(report.contains("imported 116129 rows"), "{report}");
    assert!(report.contains("ports 17534 created"), "{report}");
    assert!(
        report.contains("inland facilities 22051 created"),
        "{report}"
    );
    assert!(report.contains("rows done"), "no progress lines: {report}");
    let key = server.admin_key();
    let ports = server
        .get("/api/rest/1.0/ports?resultsPerPage=1", &key)
        .json();
    assert_eq!(ports["totalResultsAvailable"], 17534);
    let again = server.cli(&["import-unlocode", list], None);
    let report = String::from_utf8_lossy(&again.stderr).to_string();
    assert!(
        report.contains("ports 0 created, 0 updated, 17534 unchanged"),
        "{report}"
    );
    assert!(server.cli(&["check"], None).status.success());
}
