//! `quayside migrate --from FILE --to DATABASE` against a data file the real
//! server filled over HTTP, into a real PostgreSQL database.

use serde_json::json;

use quayside::db::pg::{Client, ConnectOptions};
use quayside::db::value::Value;

use crate::common::{self, Server, multipart, workspace_with_job};

/// A data file with a bit of everything, written by a SQLite server (this
/// test sets the engine itself), and the server stopped.
fn filled() -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
    let mut server = Server::start_on_file();
    let key = server.admin_key();
    let import = server.cli(&["import-unlocode", common::UNLOCODE_SAMPLE], None);
    assert!(
        import.status.success(),
        "{}",
        String::from_utf8_lossy(&import.stderr)
    );
    let (workspace, job) = workspace_with_job(&server, &key, "Migrating Co", Some("to pg"));
    let results = server.post(
        &format!("/workspaces/{workspace}/jobs/{job}/quality"),
        &key,
        &json!([1, 2].map(|n| json!({
            "status": "preliminary", "setNumber": n, "testNumber": 1,
            "sample": {"location": "T1"}, "test": {"xref": "DEN", "name": "Density"},
            "method": {"xref": "D4052", "name": "ASTM D4052"},
            "uom": {"xref": "KGM3", "name": "kg/m3"}, "result": format!("845.{n}"),
            "resultOperator": "eq"
        }))),
    );
    assert_eq!(results.status, 201, "{}", results.text());
    // A file of more than one chunk (1 MiB each).
    let bytes: Vec<u8> = (0..(2 * 1024 * 1024 + 1234))
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let body = multipart("b0undary", &[("file", Some("survey.bin"), None, &bytes)]);
    let upload = server.post_multipart(
        &format!("/workspaces/{workspace}/jobs/{job}/files"),
        Some(&key),
        "b0undary",
        &body,
    );
    assert_eq!(upload.status, 201, "{}", upload.text());
    let add = server.add_user("inspector", &[]);
    assert!(!add.is_empty());
    server.stop();
    let data = server.data.clone();
    (server.take_dir(), data, bytes)
}

fn count(client: &Client, table: &str) -> i64 {
    client
        .query_row(&format!("SELECT count(*) FROM {table}"), &[])
        .unwrap()
        .and_then(|row| row[0].as_i64())
        .unwrap()
}

fn sqlite_count(data: &std::path::Path, table: &str) -> i64 {
    let conn = rusqlite::Connection::open(data).unwrap();
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
        row.get(0)
    })
    .unwrap()
}

#[test]
fn a_data_file_moves_into_an_empty_database_checked_and_keeps_working() {
    let (_dir, data, bytes) = filled();
    let target: String = super::cluster::cluster().database_string();
    let out = std::process::Command::new(common::binary())
        .args(["migrate", "--from"])
        .arg(&data)
        .args(["--to", &target])
        .output()
        .unwrap();
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{progress}");
    assert!(progress.contains("copying documents"), "{progress}");
    assert!(
        progress.contains("1 files (2098386 bytes) read back"),
        "{progress}"
    );
    assert!(progress.contains("migrated "), "{progress}");

    let client = Client::connect(&ConnectOptions::parse(&target).unwrap()).unwrap();
    for table in [
        "accounts",
        "sessions",
        "locations",
        "organizations",
        "workspaces",
        "workspace_members",
        "documents",
        "catalog_items",
        "document_refs",
        "blobs",
        "blob_chunks",
        "attachments",
        "changes",
    ] {
        assert_eq!(count(&client, table), sqlite_count(&data, table), "{table}");
    }
    assert!(count(&client, "locations") > 100);
    assert_eq!(count(&client, "blob_chunks"), 3);
    // The bytes, byte for byte, in chunk order.
    let mut stored = Vec::new();
    for seq in 0..3 {
        let row = client
            .query_row(
                "SELECT data FROM blob_chunks WHERE seq = ?1",
                &[Value::Integer(seq)],
            )
            .unwrap()
            .unwrap();
        match &row[0] {
            Value::Blob(chunk) => stored.extend_from_slice(chunk),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(stored, bytes);
    // A new account gets the next id, not one already taken.
    let ids = client
        .query("SELECT id FROM accounts ORDER BY id", &[])
        .unwrap();
    let next = client
        .query_row(
            "SELECT nextval(pg_get_serial_sequence('accounts', 'id'))",
            &[],
        )
        .unwrap()
        .unwrap();
    assert!(next[0].as_i64().unwrap() > ids.last().unwrap()[0].as_i64().unwrap());

    // Once more into the same database: refused, nothing changed.
    let again = std::process::Command::new(common::binary())
        .args(["migrate", "--from"])
        .arg(&data)
        .args(["--to", &target])
        .output()
        .unwrap();
    assert!(!again.status.success());
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(said.contains("is not empty"), "{said}");
    assert_eq!(
        count(&client, "documents"),
        sqlite_count(&data, "documents")
    );

    // The data file still serves.
    let server = Server::spawn_on_file(&data, &[]);
    let key = server.login("inspector", "inspector-password");
    let ports = server.get(&format!("{}?resultsPerPage=5", common::PORTS), &key);
    assert_eq!(ports.status, 200, "{}", ports.text());
}

#[test]
fn migrate_refuses_a_file_that_does_not_exist_and_a_target_that_is_not_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.db");
    let target = super::cluster::cluster().database_string();
    let out = std::process::Command::new(common::binary())
        .args(["migrate", "--from"])
        .arg(&missing)
        .args(["--to", &target])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    let out = std::process::Command::new(common::binary())
        .args(["migrate", "--from"])
        .arg(&missing)
        .args(["--to", "/tmp/other.db"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be a PostgreSQL database"));
}
