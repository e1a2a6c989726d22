//! The change log's capture (`quayside::changes::Capture`) on PostgreSQL:
//! the triggers `install` makes from `SOURCES`, `record` in the writer's
//! transaction as docs/design/postgresql.md 3.4 has it (BEGIN; the
//! `change_log` row lock; a savepoint per write; record; COMMIT), the
//! sequence numbers under that lock, and the same entries as on SQLite.

use std::sync::mpsc;

use quayside::changes::Capture;
use quayside::changes::sources::{SHADOWED, SOURCES};
use quayside::db::pg::{Client, ConnectOptions, apply_schema};
use quayside::db::writer::Capture as _;
use quayside::db::{Conn, params};
use quayside::error::{ApiError, ApiResult};
use quayside::locations::Catalog;
use quayside::locations::store as locations;
use quayside::organizations::{Organization, store as organizations};
use quayside::workspaces::{Party, State, Workspace, store as workspaces};

use super::{fresh, port};

/// A fresh database with the schema; its options, for more connections.
fn database() -> ConnectOptions {
    let (options, client): (_, Client) = fresh();
    apply_schema(&client).expect("apply the schema");
    options
}

fn connect(options: &ConnectOptions) -> Conn {
    Conn::Pg(Box::new(Client::connect(options).expect("connect")))
}

/// A connection with the capture installed, as the writer's is.
fn capturing(options: &ConnectOptions) -> (Conn, Capture) {
    let conn = connect(options);
    let capture = Capture::default();
    capture.install(&conn).expect("install the capture");
    (conn, capture)
}

type Write<'a> = Box<dyn FnOnce(&Conn) -> ApiResult<()> + 'a>;

/// One writer transaction with `writes` (each by its actor), as the writer
/// runs a batch: on PostgreSQL `BEGIN` and the `change_log` row lock first
/// (SQLite: `BEGIN IMMEDIATE`), each write in `SAVEPOINT request`, released
/// and recorded when it succeeded, rolled back and discarded when it failed;
/// then `COMMIT`. The last sequence recorded.
fn transaction(conn: &Conn, capture: &Capture, writes: Vec<(&str, Write<'_>)>) -> Option<u64> {
    begin(conn);
    let mut last = None;
    for (actor, write) in writes {
        conn.execute_batch("SAVEPOINT request").unwrap();
        if write(conn).is_ok() {
            conn.execute_batch("RELEASE request").unwrap();
            last = capture.record(conn, actor).expect("record").or(last);
        } else {
            capture.discard();
            conn.execute_batch("ROLLBACK TO request; RELEASE request")
                .unwrap();
        }
    }
    conn.execute_batch("COMMIT").unwrap();
    last
}

/// The writer's `BEGIN`: on PostgreSQL with the row lock every writing
/// transaction takes first (3.4); the head and the commit count it answers.
fn begin(conn: &Conn) -> (i64, i64) {
    match conn {
        Conn::Pg(_) => {
            conn.execute_batch("BEGIN").unwrap();
            let counted = conn
                .query_row(
                    "UPDATE change_log SET commits = commits + 1 WHERE id = 1 RETURNING head, commits",
                    [],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .unwrap();
            // Counted: the tables' triggers count no more (as the writer's
            // own beginning says).
            conn.execute_batch("SET LOCAL quayside.counted = 'yes'")
                .unwrap();
            counted
        }
        Conn::Sqlite(_) => {
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            (0, 0)
        }
    }
}

/// One write by `actor` in a transaction of its own.
fn write<'a>(
    conn: &Conn,
    capture: &Capture,
    actor: &str,
    f: impl FnOnce(&Conn) -> ApiResult<()> + 'a,
) -> Option<u64> {
    transaction(conn, capture, vec![(actor, Box::new(f))])
}

/// An entry of the log, less what differs from run to run (`event_id`,
/// `occurred_at`).
#[derive(Debug, PartialEq, Clone)]
struct Logged {
    seq: i64,
    kind: String,
    entity_type: String,
    entity_id: String,
    feed: String,
    workspace_id: Option<String>,
    client_tenant: Option<String>,
    vendor_tenant: Option<String>,
    actor: String,
    record: serde_json::Value,
}

fn log(conn: &Conn) -> Vec<Logged> {
    conn.prepare(
        "SELECT seq, type, entity_type, entity_id, feed, workspace_id, client_tenant, \
         vendor_tenant, actor, record, event_id, occurred_at FROM changes ORDER BY seq",
    )
    .unwrap()
    .query_map([], |row| {
        let record: String = row.get(9)?;
        let event_id: String = row.get(10)?;
        let occurred_at: i64 = row.get(11)?;
        assert_eq!(event_id.len(), 36, "a UUID: {event_id}");
        assert!(occurred_at > 1_700_000_000_000, "now, in ms: {occurred_at}");
        Ok(Logged {
            seq: row.get(0)?,
            kind: row.get(1)?,
            entity_type: row.get(2)?,
            entity_id: row.get(3)?,
            feed: row.get(4)?,
            workspace_id: row.get(5)?,
            client_tenant: row.get(6)?,
            vendor_tenant: row.get(7)?,
            actor: row.get(8)?,
            record: serde_json::from_str(&record).expect("the record is JSON"),
        })
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// `(seq, type, entity_id, actor)` of every entry.
fn summary(conn: &Conn) -> Vec<(i64, String, String, String)> {
    log(conn)
        .into_iter()
        .map(|e| (e.seq, e.kind, e.entity_id, e.actor))
        .collect()
}

fn expected(rows: &[(i64, &str, &str, &str)]) -> Vec<(i64, String, String, String)> {
    rows.iter()
        .map(|(seq, kind, id, actor)| (*seq, kind.to_string(), id.to_string(), actor.to_string()))
        .collect()
}

/// The writing transactions counted so far (`change_log.commits`).
fn commits(conn: &Conn) -> i64 {
    conn.query_row("SELECT commits FROM change_log", [], |row| row.get(0))
        .unwrap()
}

fn head(conn: &Conn) -> i64 {
    conn.query_row("SELECT head FROM change_log", [], |row| row.get(0))
        .unwrap()
}

pub(super) fn org(id: &str, name: &str, audience: &str) -> Organization {
    Organization {
        id: id.into(),
        name: name.into(),
        audience: audience.into(),
        category: None,
        created_at: 1_000,
        updated_at: 2_000,
    }
}

fn delete_org(conn: &Conn, id: &str) -> ApiResult<()> {
    conn.execute("DELETE FROM organizations WHERE id = ?1", [id])?;
    Ok(())
}

/// Every covered table (and the shadowed ones) has the trigger, and no
/// other table has: they are made from `SOURCES`, by every process that
/// starts at once, and a second install changes nothing.
#[test]
fn install_puts_one_trigger_on_each_covered_table_even_from_processes_starting_at_once() {
    let options = database();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let options = options.clone();
            std::thread::spawn(move || {
                let conn = connect(&options);
                Capture::default().install(&conn)?;
                Capture::default().install(&conn)
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap().expect("install");
    }
    let conn = connect(&options);
    let mut tables: Vec<String> = conn
        .prepare(
            "SELECT tgrelid::regclass::text FROM pg_trigger \
             WHERE tgname = 'quayside_change' ORDER BY 1",
        )
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut covered: Vec<String> = SOURCES
        .iter()
        .map(|s| s.table)
        .chain(SHADOWED)
        .map(String::from)
        .collect();
    covered.sort();
    tables.sort();
    assert_eq!(tables, covered);
    // Nothing is noted in a session that did not install the capture.
    let noted: bool = conn
        .query_row(
            "SELECT to_regclass('pg_temp.change_notes') IS NOT NULL",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(!noted);
}

/// Types, actors, the record as it last was for a delete, `deactivated` by
/// the status column, and sequences 1, 2, 3, … in commit order, with the
/// head moved to the last.
#[test]
fn writes_are_recorded_with_their_types_actors_and_dense_sequences() {
    let options = database();
    let (conn, capture) = capturing(&options);
    assert_eq!(capture.head(&conn).unwrap(), 0);

    let last = write(&conn, &capture, "alice", |c| {
        organizations::insert(c, &org("o1", "Acme Shipping", "tenant-a"))
    });
    assert_eq!(last, Some(1));
    // Two writes of one batch, by two actors.
    let last = transaction(
        &conn,
        &capture,
        vec![
            (
                "bob",
                Box::new(|c: &Conn| {
                    locations::upsert(c, Catalog::Ports, "NLRTM", &port("Rotterdam"), "bob", 10)?;
                    Ok(())
                }),
            ),
            (
                "carol",
                Box::new(|c: &Conn| {
                    let mut fields = port("Rotterdam");
                    fields.general_comments = Some("deep water".into());
                    locations::upsert(c, Catalog::Ports, "NLRTM", &fields, "carol", 20)?;
                    Ok(())
                }),
            ),
        ],
    );
    assert_eq!(last, Some(3));
    // DELETE of an active record deactivates it; of an inactive one, removes it.
    write(&conn, &capture, "bob", |c| {
        locations::delete_or_deactivate(c, Catalog::Ports, "NLRTM", "bob", 30)?;
        Ok(())
    });
    write(&conn, &capture, "bob", |c| {
        locations::delete_or_deactivate(c, Catalog::Ports, "NLRTM", "bob", 40)?;
        Ok(())
    });
    write(&conn, &capture, "alice", |c| {
        let mut renamed = org("o1", "Acme Tankers", "tenant-a");
        renamed.updated_at = 3_000;
        organizations::update(c, &renamed)?;
        delete_org(c, "o1")
    });
    // A write that changes nothing appends nothing.
    assert_eq!(write(&conn, &capture, "alice", |_| Ok(())), None);

    assert_eq!(
        summary(&conn),
        expected(&[
            (1, "organization.created", "o1", "alice"),
            (2, "port.created", "NLRTM", "bob"),
            (3, "port.updated", "NLRTM", "carol"),
            (4, "port.deactivated", "NLRTM", "bob"),
            (5, "port.deleted", "NLRTM", "bob"),
            (6, "organization.deleted", "o1", "alice"),
        ])
    );
    let entries = log(&conn);
    // A delete carries the record as it was last, here renamed in the same write.
    assert_eq!(entries[5].record["body"]["name"], "Acme Tankers");
    assert_eq!(entries[5].record["type"], "svc.hub.organization");
    assert_eq!(entries[4].record["body"]["statusCode"], "INACTIVE");
    assert_eq!(entries[4].record["body"]["generalComments"], "deep water");
    assert_eq!(entries[4].feed, "locations");
    assert_eq!(entries[0].feed, "workspaces");
    assert_eq!(head(&conn), 6);
    assert_eq!(capture.head(&conn).unwrap(), 6);
    // The copies of deleted rows and the notes are cleared after each write.
    for table in ["gone_organizations", "gone_locations", "change_notes"] {
        let rows: i64 = conn
            .query_row(
                &format!("SELECT count(*) FROM pg_temp.{table}"),
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(rows, 0, "{table}");
    }
}

/// A write that fails is rolled back to its savepoint with its notes and
/// copies, and a batch rolled back after recording leaves neither entries
/// nor notes nor a moved head: the next transaction numbers on from the
/// last committed entry.
#[test]
fn a_write_rolled_back_leaves_no_entry_and_no_gap() {
    let options = database();
    let (conn, capture) = capturing(&options);
    // Creating the schema was a writing transaction too.
    let start = commits(&conn);
    write(&conn, &capture, "alice", |c| {
        organizations::insert(c, &org("keep", "Kept", "tenant-a"))
    });
    let last = transaction(
        &conn,
        &capture,
        vec![
            (
                "alice",
                Box::new(|c: &Conn| {
                    organizations::insert(c, &org("o2", "Refused", "tenant-a"))?;
                    delete_org(c, "keep")?;
                    Err(ApiError::conflict("test", "refused"))
                }),
            ),
            (
                "bob",
                Box::new(|c: &Conn| organizations::insert(c, &org("o3", "Accepted", "tenant-b"))),
            ),
        ],
    );
    assert_eq!(last, Some(2));

    // Recorded, then the whole batch rolled back (as when COMMIT fails).
    begin(&conn);
    conn.execute_batch("SAVEPOINT request").unwrap();
    organizations::insert(&conn, &org("o4", "Lost", "tenant-a")).unwrap();
    conn.execute_batch("RELEASE request").unwrap();
    assert_eq!(capture.record(&conn, "alice").unwrap(), Some(3));
    conn.execute_batch("ROLLBACK").unwrap();
    capture.discard();

    write(&conn, &capture, "carol", |c| {
        organizations::insert(c, &org("o5", "Later", "tenant-c"))
    });
    assert_eq!(
        summary(&conn),
        expected(&[
            (1, "organization.created", "keep", "alice"),
            (2, "organization.created", "o3", "bob"),
            (3, "organization.created", "o5", "carol"),
        ])
    );
    assert_eq!(head(&conn), 3);
    assert_eq!(
        commits(&conn),
        start + 3,
        "the rolled back transaction's count went with it"
    );
}

/// One entry per record with the net effect of the write: created and
/// updated is one `created` as it ended; created and deleted is nothing;
/// updated then deactivated is `deactivated`.
#[test]
fn one_entry_per_record_with_the_net_effect_of_the_write() {
    let options = database();
    let (conn, capture) = capturing(&options);
    write(&conn, &capture, "bob", |c| {
        locations::upsert(c, Catalog::Ports, "NLRTM", &port("Rotterdam"), "bob", 10)?;
        Ok(())
    });
    let last = write(&conn, &capture, "alice", |c| {
        organizations::insert(c, &org("a", "First", "tenant-a"))?;
        let mut renamed = org("a", "Renamed", "tenant-a");
        renamed.updated_at = 5_000;
        organizations::update(c, &renamed)?;
        organizations::insert(c, &org("b", "Fleeting", "tenant-a"))?;
        delete_org(c, "b")?;
        let mut fields = port("Rotterdam Europoort");
        locations::upsert(c, Catalog::Ports, "NLRTM", &fields, "alice", 20)?;
        fields.status_code = "INACTIVE".into();
        locations::upsert(c, Catalog::Ports, "NLRTM", &fields, "alice", 30)?;
        Ok(())
    });
    assert_eq!(last, Some(3));
    assert_eq!(
        summary(&conn),
        expected(&[
            (1, "port.created", "NLRTM", "bob"),
            (2, "organization.created", "a", "alice"),
            (3, "port.deactivated", "NLRTM", "alice"),
        ])
    );
    let entries = log(&conn);
    assert_eq!(entries[1].record["body"]["name"], "Renamed");
    assert_eq!(entries[2].record["body"]["name"], "Rotterdam Europoort");
    // The copy of the fleeting row was cleared.
    let copies: i64 = conn
        .query_row(
            "SELECT count(*) FROM pg_temp.gone_organizations",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(copies, 0);
}

/// A session that did not install the capture (psql, another tool) writes
/// through the same triggers, which note nothing there: no entry, and
/// nothing for the capturing session to pick up.
#[test]
fn a_write_by_a_session_without_the_capture_is_not_recorded() {
    let options = database();
    let (conn, capture) = capturing(&options);
    let other = connect(&options);
    organizations::insert(&other, &org("psql", "Typed By Hand", "tenant-a")).unwrap();
    other
        .execute(
            "UPDATE organizations SET name = 'x' WHERE id = ?1",
            ["psql"],
        )
        .unwrap();
    delete_org(&other, "psql").unwrap();
    // Set to anything but `on`, it is still off.
    other.execute_batch("SET quayside.capture = 'off'").unwrap();
    organizations::insert(&other, &org("off", "Off", "tenant-a")).unwrap();

    assert_eq!(write(&conn, &capture, "alice", |_| Ok(())), None);
    write(&conn, &capture, "alice", |c| {
        organizations::insert(c, &org("mine", "Mine", "tenant-a"))
    });
    assert_eq!(
        summary(&conn),
        expected(&[(1, "organization.created", "mine", "alice")])
    );
}

/// Two connections (two processes) writing: the second one's transaction
/// waits for the first one's row lock, and numbers on from its entries, so
/// the sequence is dense and in commit order; the head each reads is the
/// other's last. Then several writers at once: 1..N with no gap.
#[test]
fn sequences_are_dense_and_in_commit_order_across_connections() {
    let options = database();
    let (first, first_capture) = capturing(&options);
    let start = commits(&first);
    begin(&first);
    conn_insert(&first, "a1");
    assert_eq!(first_capture.record(&first, "first").unwrap(), Some(1));

    let (sender, receiver) = mpsc::channel();
    let second_options = options.clone();
    let second = std::thread::spawn(move || {
        let (second, capture) = capturing(&second_options);
        sender.send(()).unwrap();
        // Blocks on the row until the first transaction ends.
        let (head, commits) = begin(&second);
        conn_insert(&second, "b1");
        let last = capture.record(&second, "second").unwrap();
        second.execute_batch("COMMIT").unwrap();
        (head, commits, last)
    });
    receiver.recv().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        !second.is_finished(),
        "the second writer waits for the lock"
    );
    conn_insert(&first, "a2");
    assert_eq!(first_capture.record(&first, "first").unwrap(), Some(2));
    first.execute_batch("COMMIT").unwrap();
    let (head_seen, commits, last) = second.join().unwrap();
    assert_eq!((head_seen, commits, last), (2, start + 2, Some(3)));

    // Four writers at once, ten transactions each.
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let options = options.clone();
            std::thread::spawn(move || {
                let (conn, capture) = capturing(&options);
                let mut seqs = Vec::new();
                for i in 0..10 {
                    let id = format!("w{w}-{i}");
                    let last = write(&conn, &capture, &format!("writer{w}"), |c| {
                        conn_insert(c, &id);
                        Ok(())
                    });
                    seqs.push(last.unwrap());
                }
                seqs
            })
        })
        .collect();
    let mut all = Vec::new();
    for writer in writers {
        let seqs = writer.join().unwrap();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
        all.extend(seqs);
    }
    all.sort();
    assert_eq!(all, (4..=43).collect::<Vec<u64>>());
    let seqs: Vec<i64> = log(&first).into_iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=43).collect::<Vec<i64>>());
    assert_eq!(head(&first), 43);
}

fn conn_insert(conn: &Conn, id: &str) {
    organizations::insert(conn, &org(id, &format!("Org {id}"), "tenant-a")).unwrap();
}

/// The same writes on SQLite and on PostgreSQL append the same entries:
/// sequences, types, actors, tenants, feeds and records alike (only
/// `event_id` and `occurred_at` differ, as between any two runs). Covers a
/// workspace's tenants (also read from the copy of a deleted workspace),
/// a document, an attachment deleted with its blob (the shadowed `blobs`'
/// copy), and fifty entries of one write with text that needs escaping.
#[test]
fn the_same_writes_record_the_same_entries_as_on_sqlite() {
    let options = database();
    let (pg, pg_capture) = capturing(&options);
    let sqlite = Conn::memory().unwrap();
    let sqlite_capture = Capture::default();
    sqlite_capture.install(&sqlite).unwrap();

    for (conn, capture) in [(&sqlite, &sqlite_capture), (&pg, &pg_capture)] {
        write(conn, capture, "alice", |c| {
            organizations::insert(c, &org("client", "Client Co", "tenant-a"))?;
            organizations::insert(c, &org("vendor", "Vendor Co", "tenant-b"))
        });
        write(conn, capture, "alice", |c| {
            workspaces::insert(c, &workspace())?;
            c.execute(
                "INSERT INTO documents (id, workspace_id, kind, body, created_at, updated_at) \
                 VALUES ('job1', 'w1', 'job', ?1, 100, 200)",
                [r#"{"title":"Survey","client":"client"}"#],
            )?;
            c.execute(
                "INSERT INTO blobs (id, size, sha256, complete, created_at) \
                 VALUES ('blob1', 42, 'abc123', 1, 100)",
                [],
            )?;
            c.execute(
                "INSERT INTO attachments (id, workspace_id, document_id, blob_id, caption, \
                 format, created_at, updated_at) \
                 VALUES ('att1', 'w1', 'job1', 'blob1', 'Photo', 'jpg', 100, 100)",
                [],
            )?;
            Ok(())
        });
        write(conn, capture, "bob", |c| {
            c.execute("DELETE FROM attachments WHERE id = 'att1'", [])?;
            c.execute("DELETE FROM blobs WHERE id = 'blob1'", [])?;
            c.execute(
                "UPDATE documents SET body = ?1, updated_at = 300 WHERE id = 'job1'",
                [r#"{"title":"Survey 2","client":"client"}"#],
            )?;
            Ok(())
        });
        write(conn, capture, "bob", |c| {
            c.execute("DELETE FROM documents WHERE id = 'job1'", [])?;
            workspaces::delete(c, "w1")
        });
        write(conn, capture, "carol", |c| {
            locations::upsert(c, Catalog::Ports, "NLRTM", &port("Rotterdam"), "carol", 10)?;
            locations::delete_or_deactivate(c, Catalog::Ports, "NLRTM", "carol", 20)?;
            Ok(())
        });
        write(conn, capture, "carol", |c| {
            locations::delete_or_deactivate(c, Catalog::Ports, "NLRTM", "carol", 30)?;
            delete_org(c, "vendor")
        });
        // Many entries of one write, with text that needs escaping.
        write(conn, capture, "erin", |c| {
            for i in 0..50 {
                let name = format!("Ĳmuiden \"{i}\" \\ tab\t ✓");
                locations::upsert(
                    c,
                    Catalog::Ports,
                    &format!("NL{i:03}"),
                    &port(&name),
                    "erin",
                    50,
                )?;
            }
            Ok(())
        });
        // Deleted, made again and deleted again in one write: the entry
        // carries the newest copy.
        write(conn, capture, "dave", |c| {
            organizations::insert(c, &org("twice", "Twice One", "tenant-c"))
        });
        write(conn, capture, "dave", |c| {
            delete_org(c, "twice")?;
            organizations::insert(c, &org("twice", "Twice Two", "tenant-c"))?;
            delete_org(c, "twice")
        });
    }
    let on_sqlite = log(&sqlite);
    let on_pg = log(&pg);
    let types: Vec<&str> = on_pg.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        types,
        [
            "organization.created",
            "organization.created",
            "workspace.created",
            "job.created",
            "attachment.created",
            "attachment.deleted",
            "job.updated",
            "job.deleted",
            "workspace.deleted",
            "port.created",
            "port.deleted",
            "organization.deleted",
        ]
        .into_iter()
        .chain(std::iter::repeat_n("port.created", 50))
        .chain(["organization.created", "organization.deleted"])
        .collect::<Vec<_>>()
    );
    assert_eq!(on_pg, on_sqlite);
    assert_eq!(on_pg[12].record["body"]["name"], "Ĳmuiden \"0\" \\ tab\t ✓");
    assert_eq!(on_pg[63].record["body"]["name"], "Twice Two");
    // The deleted attachment's size and digest come from the blob's copy.
    assert_eq!(on_pg[5].record["body"]["size"], 42, "{:?}", on_pg[5].record);
    // The deleted workspace's entry is still seen by its parties.
    assert_eq!(
        (
            on_pg[8].client_tenant.as_deref(),
            on_pg[8].vendor_tenant.as_deref()
        ),
        (Some("tenant-a"), Some("tenant-b"))
    );
    assert_eq!(head(&pg), 64);
    assert_eq!(sqlite_capture.head(&sqlite).unwrap(), 64);
    assert_eq!(pg_capture.head(&pg).unwrap(), 64);
}

pub(super) fn workspace() -> Workspace {
    Workspace {
        id: "w1".into(),
        description: Some("Survey of MV Example".into()),
        client: Party {
            id: Some("client".into()),
            xref: Some("C-1".into()),
        },
        vendor: Party {
            id: Some("vendor".into()),
            xref: None,
        },
        created_at: 100,
        updated_at: 100,
        client_audience: None,
        vendor_audience: None,
        state: State::Active,
        invited: None,
    }
}

/// The head is `change_log.head`, whatever moved it (a database restored,
/// or retention's rule "never reused"), and the next entry follows it.
#[test]
fn the_capture_reads_a_head_it_did_not_move() {
    let options = database();
    let (conn, capture) = capturing(&options);
    conn.execute(
        "UPDATE change_log SET head = ?1 WHERE id = 1",
        params![41i64],
    )
    .unwrap();
    assert_eq!(capture.head(&conn).unwrap(), 41);
    let last = write(&conn, &capture, "alice", |c| {
        organizations::insert(c, &org("o", "O", "tenant-a"))
    });
    assert_eq!(last, Some(42));
}
