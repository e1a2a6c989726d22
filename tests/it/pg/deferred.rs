//! The writer's deferred writes on PostgreSQL (`changes::capture::defer`):
//! in a batch run without a savepoint per write, a write that offered every
//! row it changed through its store has its change entries rendered from
//! those offers at once, and its notes (the triggers') are taken and checked
//! later, with a later write's or at the batch's end: a round trip less per
//! write. What the tests hold to: every entry is the one the write would
//! have recorded without the deferral (its own record, type, actor and
//! order); a check that fails, or a statement sent ahead that fails while
//! writes are deferred, runs the batch again with a savepoint per write, and
//! its answers and entries are those of that run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use quayside::changes::Capture;
use quayside::db::{Conn, Db, Location};
use quayside::documents::store as documents;
use quayside::error::ApiResult;
use quayside::locations::Catalog;
use quayside::locations::store as locations;
use quayside::organizations::store as organizations;
use quayside::workspaces::store as workspaces;

use super::capture::{org, workspace};
use super::writer::{hold, queued, runtime};
use super::{cluster, port};

/// A store on a fresh PostgreSQL database, with the change log's capture.
fn open() -> (Db, Arc<Capture>) {
    let capture = Arc::new(Capture::default());
    let location = Location::Postgres(Box::new(cluster::cluster().database()));
    let db = Db::open_at(&location, 2, None, capture.clone()).expect("open the store");
    (db, capture)
}

type Runs = Arc<AtomicUsize>;

/// A port `code` named `name`, stored by `actor` (through the store, which
/// offers what it wrote), then `also` run in the same write; queued at once.
fn put(
    db: &Db,
    actor: &str,
    code: &'static str,
    name: &'static str,
    also: impl Fn(&Conn) -> ApiResult<()> + Send + 'static,
) -> (Runs, tokio::task::JoinHandle<ApiResult<()>>) {
    let runs = Runs::default();
    let counted = runs.clone();
    let write = db.write_as(Arc::from(actor), move |conn| {
        counted.fetch_add(1, Ordering::SeqCst);
        let mut fields = port(name);
        if name.ends_with("(closed)") {
            fields.status_code = "INACTIVE".into();
        }
        locations::upsert(conn, Catalog::Ports, code, &fields, "someone", 1_000)?;
        also(conn)
    });
    (runs, queued(write))
}

fn nothing(_: &Conn) -> ApiResult<()> {
    Ok(())
}

/// `(type, entity_id, actor, record's body name)` of every entry, in
/// sequence order, and whether the sequence numbers are dense from 1.
async fn entries(db: &Db) -> (Vec<(String, String, String, String)>, bool) {
    db.read(|conn, _| {
        let rows: Vec<(i64, String, String, String, String)> = conn
            .prepare("SELECT seq, type, entity_id, actor, record FROM changes ORDER BY seq")?
            .query_map([], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                ))
            })?
            .collect::<Result<_, _>>()?;
        let dense = rows
            .iter()
            .enumerate()
            .all(|(i, row)| row.0 == i as i64 + 1);
        let entries = rows
            .into_iter()
            .map(|(_, kind, id, actor, record)| {
                let record: serde_json::Value = serde_json::from_str(&record).expect("JSON");
                let name = record["body"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                (kind, id, actor, name)
            })
            .collect();
        Ok((entries, dense))
    })
    .await
    .expect("read the log")
}

fn expected(rows: &[(&str, &str, &str, &str)]) -> Vec<(String, String, String, String)> {
    rows.iter()
        .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string()))
        .collect()
}

fn runs(runs: &Runs) -> usize {
    runs.load(Ordering::SeqCst)
}

/// Writes of one batch that offer what they change are deferred and
/// confirmed at the batch's end, each run once; each entry shows its own
/// write's version of the record (the same port changed three times in the
/// batch), with its own type (created, updated, deactivated) and actor, in
/// write order. A write that changed nothing records nothing.
#[test]
fn deferred_writes_record_each_entry_from_their_own_offer() {
    let (db, capture) = open();
    runtime().block_on(async {
        let held = hold(&db).await;
        let writes = [
            put(&db, "ann", "NLAAA", "first", nothing),
            put(&db, "bob", "NLAAA", "second", nothing),
            put(&db, "ann", "NLBBB", "other", nothing),
            put(&db, "cat", "NLAAA", "second (closed)", nothing),
            // The same again: it changes nothing, and records nothing.
            put(&db, "ann", "NLBBB", "other", nothing),
        ];
        held.await.expect("join").expect("hold");
        for (count, write) in writes {
            write.await.expect("join").expect("stored");
            assert_eq!(runs(&count), 1, "no write ran twice");
        }
        let (log, dense) = entries(&db).await;
        assert!(dense, "sequences 1, 2, 3, …");
        assert_eq!(
            log,
            expected(&[
                ("port.created", "NLAAA", "ann", "first"),
                ("port.updated", "NLAAA", "bob", "second"),
                ("port.created", "NLBBB", "ann", "other"),
                ("port.deactivated", "NLAAA", "cat", "second (closed)"),
            ])
        );
        assert_eq!(capture.confirmed(), 4, "all four were deferred");
    });
    db.close().expect("close");
}

/// A raw `INSERT` of a port (a covered row changed without its store: not
/// offered, and not known to the write).
fn raw_port(code: &'static str) -> impl Fn(&Conn) -> ApiResult<()> + Send + 'static {
    move |conn| {
        conn.execute(
            "INSERT INTO locations (catalog, client_code, name, name_folded, status_code, \
             created_at, creator, modified_at, modifier) \
             VALUES ('ports', ?1, 'raw', 'raw', 'ACTIVE', 1000, 'someone', 1000, 'someone')",
            [code],
        )?;
        Ok(())
    }
}

/// A deferred write whose notes show a change it did not offer (a row it
/// wrote past its store) fails the check at the batch's end: the batch runs
/// again, each write with a savepoint and its own notes, and every entry is
/// still there, right, in write order.
#[test]
fn a_deferred_write_that_changed_more_than_it_offered_runs_its_batch_again() {
    let (db, capture) = open();
    runtime().block_on(async {
        let held = hold(&db).await;
        let first = put(&db, "ann", "NLAAA", "one", nothing);
        let second = put(&db, "bob", "NLBBB", "two", raw_port("NLCCC"));
        let third = put(&db, "cat", "NLAAA", "again", nothing);
        held.await.expect("join").expect("hold");
        for (count, write) in [first, second, third] {
            write.await.expect("join").expect("stored");
            assert_eq!(runs(&count), 2, "the batch ran again");
        }
        let (log, dense) = entries(&db).await;
        assert!(dense);
        assert_eq!(
            log,
            expected(&[
                ("port.created", "NLAAA", "ann", "one"),
                ("port.created", "NLBBB", "bob", "two"),
                ("port.created", "NLCCC", "bob", "raw"),
                ("port.updated", "NLAAA", "cat", "again"),
            ])
        );
        assert_eq!(
            capture.confirmed(),
            0,
            "the batch that ran again deferred none"
        );
    });
    db.close().expect("close");
}

/// A statement sent ahead by a deferred write that fails (its answer read
/// only later, on a transaction already aborted) fails that write alone,
/// with its own error, however it is found: by the next write's statement,
/// or by the notes' take at the batch's end. The batch runs again with a
/// savepoint per write, the failing write then fails in its own, and the
/// writes around it commit with their entries.
#[test]
fn a_deferred_write_whose_statement_sent_ahead_fails_fails_alone() {
    let refused = |conn: &Conn| -> ApiResult<()> {
        conn.prepare(
            "INSERT INTO locations (catalog, client_code, name, name_folded, status_code, \
             created_at, creator, modified_at, modifier) \
             VALUES ('nowhere', 'X', 'x', 'x', 'ACTIVE', 1, 'x', 1, 'x')",
        )?
        .execute_ahead([])?;
        Ok(())
    };
    for last in [false, true] {
        let (db, _capture) = open();
        runtime().block_on(async {
            let held = hold(&db).await;
            let first = put(&db, "ann", "NLAAA", "one", nothing);
            let third = (!last).then(|| put(&db, "cat", "NLCCC", "three", nothing));
            let failing = put(&db, "bob", "NLBBB", "two", refused);
            let fourth = (!last).then(|| put(&db, "dan", "NLDDD", "four", nothing));
            held.await.expect("join").expect("hold");
            first.1.await.expect("join").expect("first stored");
            let error = failing
                .1
                .await
                .expect("join")
                .expect_err("the CHECK refuses");
            assert_eq!(error.status(), 500, "{error:?}");
            assert_eq!(runs(&first.0), 2, "run again with the batch");
            assert_eq!(runs(&failing.0), 2, "failed again in its own savepoint");
            let mut want = vec![("port.created", "NLAAA", "ann", "one")];
            if let (Some(third), Some(fourth)) = (third, fourth) {
                third.1.await.expect("join").expect("third stored");
                fourth.1.await.expect("join").expect("fourth stored");
                assert_eq!(runs(&third.0), 2, "deferred before the failing one");
                assert_eq!(runs(&fourth.0), 2, "its statement found the failure");
                want.push(("port.created", "NLCCC", "cat", "three"));
                want.push(("port.created", "NLDDD", "dan", "four"));
            }
            let (log, dense) = entries(&db).await;
            assert!(dense);
            assert_eq!(log, expected(&want), "last: {last}");
            let gone = db
                .read(|conn, _| Ok(locations::get(conn, Catalog::Ports, "NLBBB")?.is_none()))
                .await
                .expect("read");
            assert!(gone, "the failed write left nothing");
        });
        db.close().expect("close");
    }
}

/// One write's work, boxed.
type Step = Box<dyn Fn(&Conn) -> ApiResult<()> + Send>;

/// A job `id` in workspace `w1`, stored and offered as the routes do.
fn job(id: &'static str) -> impl Fn(&Conn) -> ApiResult<()> + Send + 'static {
    move |conn| {
        let body = serde_json::json!({"title": format!("Survey {id}")});
        let doc = quayside::documents::Document {
            id: id.into(),
            workspace_id: "w1".into(),
            kind: &quayside::documents::kinds::JOB,
            job_id: None,
            body: body.as_object().cloned().unwrap_or_default(),
            created_at: 100,
            updated_at: 100,
        };
        documents::insert(conn, &doc)?;
        documents::shown(conn, doc, Vec::new())?;
        Ok(())
    }
}

/// `(type, entity_id, client_tenant, vendor_tenant)` of every entry from
/// `seq` on.
async fn tenants(db: &Db, seq: i64) -> Vec<(String, String, Option<String>, Option<String>)> {
    db.read(move |conn, _| {
        Ok(conn
            .prepare(
                "SELECT type, entity_id, client_tenant, vendor_tenant FROM changes \
                 WHERE seq >= ?1 ORDER BY seq",
            )?
            .query_map([seq], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?
            .collect::<Result<_, _>>()?)
    })
    .await
    .expect("read the log")
}

/// Deferred writes in a batch with writes that are not (a change of the
/// workspace's vendor, a delete): each entry carries the parties of its
/// own time (a job created before the vendor changed is the old vendor's
/// to see, one after it the new one's), in write order, and no write runs
/// twice.
#[test]
fn deferred_writes_among_others_record_the_parties_of_their_own_time() {
    let (db, capture) = open();
    runtime().block_on(async {
        db.write(|conn| {
            for (id, tenant) in [("client", "t-a"), ("vendor", "t-b"), ("vendor2", "t-c")] {
                organizations::insert(conn, &org(id, &format!("{id} Co"), tenant))?;
            }
            workspaces::insert(conn, &workspace())?;
            Ok(())
        })
        .await
        .expect("the parties and the workspace");
        db.write(job("r0")).await.expect("a job to delete");
        let first = tenants(&db, 1).await.len() as i64 + 1;
        let confirmed = capture.confirmed();
        let held = hold(&db).await;
        let counted = |write: Step| {
            let runs = Runs::default();
            let count = runs.clone();
            let handle = queued(db.write(move |conn| {
                count.fetch_add(1, Ordering::SeqCst);
                write(conn)
            }));
            (runs, handle)
        };
        let writes = [
            counted(Box::new(job("r1"))),
            counted(Box::new(|conn: &Conn| {
                conn.execute(
                    "UPDATE workspaces SET vendor_id = 'vendor2', updated_at = 200 WHERE id = 'w1'",
                    [],
                )?;
                Ok(())
            })),
            counted(Box::new(job("r2"))),
            counted(Box::new(|conn: &Conn| {
                conn.execute("DELETE FROM documents WHERE id = 'r0'", [])?;
                Ok(())
            })),
            counted(Box::new(job("r3"))),
        ];
        held.await.expect("join").expect("hold");
        for (runs, write) in writes {
            write.await.expect("join").expect("written");
            assert_eq!(runs.load(Ordering::SeqCst), 1, "no write ran twice");
        }
        let owned = |t: &str| Some(t.to_string());
        let row = |kind: &str, id: &str, vendor: &str| {
            (
                kind.to_string(),
                id.to_string(),
                owned("t-a"),
                owned(vendor),
            )
        };
        assert_eq!(
            tenants(&db, first).await,
            [
                row("job.created", "r1", "t-b"),
                row("workspace.updated", "w1", "t-c"),
                row("job.created", "r2", "t-c"),
                row("job.deleted", "r0", "t-c"),
                row("job.created", "r3", "t-c"),
            ]
        );
        assert_eq!(
            capture.confirmed() - confirmed,
            3,
            "the three jobs were deferred"
        );
    });
    db.close().expect("close");
}

/// Pages of the writer's temp table `table` (another session's: PostgreSQL
/// extends a temp table's file as its pages are added, so its size is read
/// from outside).
async fn temp_pages(db: &Db, table: &'static str) -> i64 {
    db.read(move |conn, _| {
        Ok(conn
            .prepare(
                "SELECT coalesce(max(pg_relation_size(c.oid)), -1) / 8192 FROM pg_class c \
                 WHERE c.relname = $1 AND c.relpersistence = 't'",
            )?
            .query_row([table], |row| row.get::<_, i64>(0))?)
    })
    .await
    .expect("read the temp table's size")
}

/// The triggers' notes are deleted as they are taken, but nothing vacuums a
/// temp table by itself: without the writer's `tidy` its file would grow with
/// every write it ever recorded, and every take read it all. After a delete
/// (a row copied into `gone_locations`) and more than `TIDY_AFTER_NOTES`
/// notes, the writer vacuums both between two batches: the notes' table
/// keeps at most the page of the write after, the copies' none; the change
/// log is complete before and after.
#[test]
fn the_writer_vacuums_the_taken_notes_between_batches() {
    use quayside::changes::capture::TIDY_AFTER_NOTES;
    let (db, _capture) = open();
    let many = TIDY_AFTER_NOTES as usize + 100;
    let code = |i: usize| -> String {
        let a = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        let (x, y, z) = (i / 676 % 26, i / 26 % 26, i % 26);
        format!("ZZ{}{}{}", a[x] as char, a[y] as char, a[z] as char)
    };
    runtime().block_on(async {
        let put_one = |code: String, name: &'static str| {
            db.write_as(Arc::from("ann"), move |conn| {
                locations::upsert(conn, Catalog::Ports, &code, &port(name), "ann", 1_000)?;
                Ok(())
            })
        };
        put_one("NLGON".into(), "gone soon").await.expect("stored");
        db.write_as(Arc::from("ann"), |conn| {
            conn.execute("DELETE FROM locations WHERE client_code = 'NLGON'", [])?;
            Ok(())
        })
        .await
        .expect("deleted");
        assert!(temp_pages(&db, "gone_locations").await >= 1, "a row copied");
        db.write_as(Arc::from("ann"), move |conn| {
            for i in 0..many {
                locations::upsert(conn, Catalog::Ports, &code(i), &port("many"), "ann", 1_000)?;
            }
            Ok(())
        })
        .await
        .expect("stored");
        // The writer tidies after a batch, before it takes the next: once
        // this one is answered, the one before was tidied.
        put_one("NLAFT".into(), "after").await.expect("stored");
        let notes = temp_pages(&db, "change_notes").await;
        assert!(
            (0..=1).contains(&notes),
            "change_notes vacuumed: {notes} pages"
        );
        assert_eq!(
            temp_pages(&db, "gone_locations").await,
            0,
            "copies vacuumed"
        );
        // And the capture goes on as before.
        put_one("NLAFT".into(), "after, renamed")
            .await
            .expect("stored");
        let (log, dense) = entries(&db).await;
        assert!(dense, "sequences 1, 2, 3, …");
        assert_eq!(log.len(), 2 + many + 2);
        assert_eq!(log[1].0, "port.deleted");
        assert_eq!(
            log[log.len() - 2..],
            expected(&[
                ("port.created", "NLAFT", "ann", "after"),
                ("port.updated", "NLAFT", "ann", "after, renamed"),
            ])
        );
    });
}
