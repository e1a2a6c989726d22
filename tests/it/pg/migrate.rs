//! `quayside migrate --from FILE --to DATABASE` against a data file the real
//! server filled over HTTP, into a real PostgreSQL database.

use serde_json::json;

use quayside::db::pg::{Client, ConnectOptions};
use quayside::db::value::Value;

use crate::common::{self, Server, multipart, workspace_with_job};

/// What the file holds, by id: the routes to compare read them.
struct Filled {
    workspace: String,
    job: String,
    results: Vec<(&'static str, String)>,
    product: String,
    file: String,
    attachment_doc: String,
    key: String,
}

/// A data file with a bit of everything, written by a SQLite server over
/// HTTP (this test pins the engine itself), and the server stopped: ports
/// and inland facilities, two workspaces, a job, every document kind,
/// catalog records with a synonym link, a file of several MiB on the job
/// and one on a document, accounts, sessions and their changes.
fn filled() -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>, Filled) {
    let mut server = Server::start_on_file();
    let key = server.admin_key();
    let import = server.cli(&["import-unlocode", common::UNLOCODE_SAMPLE], None);
    assert!(
        import.status.success(),
        "{}",
        String::from_utf8_lossy(&import.stderr)
    );
    let (workspace, job) = workspace_with_job(&server, &key, "Migrating Co", Some("to pg"));
    let _ = workspace_with_job(&server, &key, "Second Co", None);
    let patched = server.patch(
        &format!("/workspaces/{workspace}/jobs/{job}"),
        &key,
        &json!({"xref": "J-1", "status": "active", "eta": "2026-12-01T10:00:00Z",
                "activity": "load", "notes": "first line\nsecond"}),
    );
    assert_eq!(patched.status, 200, "{}", patched.text());
    let samples = [
        (
            "load-port-information",
            json!({
            "billOfLadingDate": "2026-11-01T12:00:00Z",
            "portOfLoading": {"xref": "SAJED", "name": "Jeddah"},
            "measurements": [{"code": "GSV", "name": "GSV",
                "uom": {"xref": "BBL", "name": "Barrels"}, "value": 500000.5}]}),
        ),
        (
            "quantity",
            json!({
            "date": "2026-11-21T08:00:00Z", "direction": "source", "activeShoreTank": false,
            "measurements": [{"code": "TCV", "name": "TCV",
                "uom": {"xref": "BBL", "name": "Barrels"}, "value": 499000}],
            "waterPerc": 0.1, "meanTemp": {"value": 15.5, "uom": {"xref": "DEGC", "name": "Celsius"}},
            "api": 32.4}),
        ),
        (
            "quality",
            json!([1, 2].map(|n| json!({
                "status": "preliminary", "setNumber": n, "testNumber": 1,
                "sample": {"location": "T1"}, "test": {"xref": "DEN", "name": "Density"},
                "method": {"xref": "D4052", "name": "ASTM D4052"},
                "uom": {"xref": "KGM3", "name": "kg/m3"}, "result": format!("845.{n}"),
                "resultOperator": "eq"
            }))),
        ),
        (
            "timelog",
            json!({
            "type": {"xref": "NOR", "name": "Notice of readiness"}, "category": "event",
            "start": "2026-11-21T06:00:00Z", "end": "2026-11-21T07:00:00Z"}),
        ),
    ];
    let mut results = Vec::new();
    for (path, body) in samples {
        let made = server.post(
            &format!("/workspaces/{workspace}/jobs/{job}/{path}"),
            &key,
            &body,
        );
        assert_eq!(made.status, 201, "{path}: {}", made.text());
        let made = made.json();
        for one in made
            .as_array()
            .cloned()
            .unwrap_or_else(|| vec![made.clone()])
        {
            results.push((path, one["id"].as_str().unwrap().to_string()));
        }
    }
    let catalog = format!("/workspaces/{workspace}/catalogs/products");
    let mut products = Vec::new();
    for (name, xref) in [("Gasoil", "GO"), ("Diesel", "DSL")] {
        let made = server.post(&catalog, &key, &json!({"name": name, "xref": xref}));
        assert_eq!(made.status, 201, "{}", made.text());
        products.push(made.json()["id"].as_str().unwrap().to_string());
    }
    let link = server.post(
        &format!("{catalog}/{}/synonyms/{}", products[0], products[1]),
        &key,
        &json!({}),
    );
    assert!(link.status < 300, "{}", link.text());
    // Files of more than one chunk (1 MiB each): on the job, and on a result.
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
    let file = upload.json()["id"].as_str().unwrap().to_string();
    let attachment_doc = results[0].1.clone();
    let small = multipart(
        "b0undary",
        &[("file", Some("note.txt"), Some("text/plain"), b"seal intact")],
    );
    let attached = server.post_multipart(
        &format!("/v2/workspaces/{workspace}/documents/{attachment_doc}/attachments"),
        Some(&key),
        "b0undary",
        &small,
    );
    assert_eq!(attached.status, 201, "{}", attached.text());
    let add = server.add_user("inspector", &[]);
    assert!(!add.is_empty());
    server.stop();
    let data = server.data.clone();
    let filled = Filled {
        workspace,
        job,
        results,
        product: products[0].clone(),
        file,
        attachment_doc,
        key,
    };
    (server.take_dir(), data, bytes, filled)
}

/// Every read route over what the file holds, with the admin's key: lists
/// (with their totals), records, files' bytes, synonyms, the change feeds.
fn routes(f: &Filled) -> Vec<String> {
    let ws = &f.workspace;
    let job = &f.job;
    let mut routes = vec![
        "/api/rest/1.0/ports?resultsPerPage=200".to_string(),
        "/api/rest/1.0/inland_facilities?resultsPerPage=200".to_string(),
        "/api/rest/1.0/ports?name=a&countryCode=DE".to_string(),
        "/v2/organizations".to_string(),
        "/v2/workspaces".to_string(),
        "/workspaces".to_string(),
        format!("/workspaces/{ws}"),
        format!("/v2/workspaces/{ws}"),
        format!("/workspaces/{ws}/jobs"),
        format!("/workspaces/{ws}/jobs?status=active&sort=eta:desc"),
        format!("/workspaces/{ws}/jobs/{job}"),
        format!("/workspaces/{ws}/jobs/{job}/files"),
        format!("/workspaces/{ws}/jobs/{job}/files/{}/content", f.file),
        format!(
            "/v2/workspaces/{ws}/documents/{}/attachments",
            f.attachment_doc
        ),
        format!("/workspaces/{ws}/catalogs/products/{}/synonyms", f.product),
        "/v2/changes?since=0&limit=1000".to_string(),
        format!("/v2/workspaces/{ws}/changes?since=0&limit=1000"),
        "/api/rest/1.0/changes?since=0&limit=1000".to_string(),
    ];
    for kind in ["load-port-information", "quantity", "quality", "timelog"] {
        routes.push(format!("/workspaces/{ws}/jobs/{job}/{kind}"));
    }
    for (kind, id) in &f.results {
        routes.push(format!("/workspaces/{ws}/jobs/{job}/{kind}/{id}"));
    }
    for catalog in [
        "products",
        "locations",
        "uom",
        "tests",
        "testMethods",
        "eventTypes",
    ] {
        routes.push(format!("/workspaces/{ws}/catalogs/{catalog}"));
    }
    routes
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
    let (_dir, data, bytes, filled) = filled();
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
        progress.contains("2 files (2098397 bytes) read back"),
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
        "catalog_item_uses",
        "blobs",
        "blob_chunks",
        "attachments",
        "changes",
    ] {
        assert_eq!(count(&client, table), sqlite_count(&data, table), "{table}");
    }
    assert!(count(&client, "locations") > 100);
    assert_eq!(count(&client, "blob_chunks"), 4);
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

    // The data file still serves, and a server on the database answers
    // every read route exactly as the one on the file: status, totals, body
    // (the admin's session was copied too: the same key works on both).
    let file_server = Server::spawn_on_file(&data, &[]);
    let pg_server = Server::start_on_database(&target);
    let inspector = file_server.login("inspector", "inspector-password");
    assert!(!inspector.is_empty());
    for route in routes(&filled) {
        let here = file_server.get(&route, &filled.key);
        let there = pg_server.get(&route, &filled.key);
        assert_eq!(here.status, 200, "{route}: {}", here.text());
        assert_eq!(there.status, here.status, "{route}: {}", there.text());
        for header in ["X-Total-Count", "Content-Type", "Content-Length", "ETag"] {
            assert_eq!(
                there.header(header),
                here.header(header),
                "{route}: {header}"
            );
        }
        assert!(
            there.body == here.body,
            "{route}:\n{}\n{}",
            here.text(),
            there.text()
        );
    }
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

/// `backup` copies a data file; on a database it refuses and names the
/// engine's own tools instead.
#[test]
fn backup_on_a_database_names_postgresql_s_own_tools() {
    let target = super::cluster::cluster().database_string();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(common::binary())
        .arg("backup")
        .arg(dir.path().join("copy.db"))
        .args(["--database", &target])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("pg_dump") && said.contains("pg_basebackup"),
        "{said}"
    );
    assert!(!dir.path().join("copy.db").exists());
}
