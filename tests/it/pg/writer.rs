//! The writer's batches on both engines: the invariants that one request's
//! writes are one unit and that no change is committed without its entry,
//! on a data file and on PostgreSQL. A batch's writes run without a savepoint
//! each until one fails after writing; the batch is then run again, each
//! write in a savepoint. On PostgreSQL a write's `RELEASE` is then held back
//! to travel with the next write's `SAVEPOINT` (or the `COMMIT`) and its
//! changes are recorded before it (`Dialect::records_before_release`); on
//! SQLite the changes are recorded after it.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use quayside::db::writer::{Capture, NoCapture};
use quayside::db::{Conn, Db, Location};
use quayside::error::{ApiError, ApiResult};

use super::cluster;

pub(super) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A data file (in `dir`) and a fresh PostgreSQL database.
fn locations(dir: &tempfile::TempDir) -> [Location; 2] {
    [
        Location::File(dir.path().join("batch.db")),
        Location::Postgres(Box::new(cluster::cluster().database())),
    ]
}

/// A store at `location` with a table `t` (opened off the runtime: the
/// PostgreSQL driver blocks on a runtime of its own).
fn open(location: &Location, capture: Arc<dyn Capture>) -> Db {
    let db = Db::open_at(location, 2, None, capture).expect("open the store");
    runtime()
        .block_on(db.write(|conn| Ok(conn.execute_batch("CREATE TABLE t (x text)")?)))
        .expect("table");
    db
}

/// A write holding the writer from when it runs until it is awaited
/// ([`Held`]): writes [`queued`] meanwhile join one batch after it, however
/// slowly the test goes (a fresh store takes up to 256 writes in a batch; on
/// a data file only a batch of several writes followed by a wait for its
/// flush lowers that, and the tests hold one after lone writes only).
/// Returns once it runs. Run again (its batch replayed), it holds nothing:
/// the release is gone by then.
pub(super) async fn hold(db: &Db) -> Held {
    let (release, held) = std::sync::mpsc::channel::<()>();
    let running = Arc::new(AtomicBool::new(false));
    let started = running.clone();
    let write = tokio::spawn(db.write(move |_| {
        started.store(true, Ordering::SeqCst);
        let _ = held.recv();
        Ok(())
    }));
    while !running.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Held { release, write }
}

/// The holding write of [`hold`]: awaiting it releases the writer, then
/// waits for the write's answer (dropped, it releases the writer too).
pub(super) struct Held {
    release: std::sync::mpsc::Sender<()>,
    write: tokio::task::JoinHandle<ApiResult<()>>,
}

impl std::future::IntoFuture for Held {
    type Output = Result<ApiResult<()>, tokio::task::JoinError>;
    type IntoFuture = tokio::task::JoinHandle<ApiResult<()>>;

    fn into_future(self) -> Self::IntoFuture {
        let _ = self.release.send(());
        self.write
    }
}

/// A write queued at once, in the order made (polled once, it joins the
/// writer's queue, which has room), while the writer is held.
pub(super) fn queued<T: Send + 'static>(
    write: impl Future<Output = ApiResult<T>> + Send + 'static,
) -> tokio::task::JoinHandle<ApiResult<T>> {
    let mut write = Box::pin(write);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(
        write.as_mut().poll(&mut cx).is_pending(),
        "the writer is held"
    );
    tokio::spawn(write)
}

async fn stored(db: &Db) -> Vec<String> {
    db.read(|conn, _| {
        Ok(conn
            .prepare("SELECT x FROM t ORDER BY x")?
            .query_map([], |row| row.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?)
    })
    .await
    .expect("read")
}

/// One request's writes are one unit: in one batch, a write that fails after
/// writing leaves nothing (its savepoint rolled back, the held-back
/// `SAVEPOINT` sent with the rollback), the writes around it are committed;
/// and more writes than one batch takes all commit.
#[test]
fn a_failing_write_rolls_back_only_its_own_savepoint_and_every_other_write_commits() {
    let dir = tempfile::tempdir().expect("temp dir");
    for location in locations(&dir) {
        let db = open(&location, Arc::new(NoCapture));
        runtime().block_on(async {
            let hold = hold(&db).await;
            let insert = |x: String, fail: bool, write_first: bool| {
                db.write(move |conn| {
                    if write_first {
                        conn.execute("INSERT INTO t (x) VALUES (?1)", [&x])?;
                    }
                    if fail {
                        return Err(ApiError::conflict("test", "refused"));
                    }
                    Ok(())
                })
            };
            let a = queued(insert("a".into(), false, true));
            let b = queued(insert("b".into(), true, true));
            // Fails before any statement: only its held-back SAVEPOINT was sent.
            let early = queued(insert("e".into(), true, false));
            let c = queued(insert("c".into(), false, true));
            // Past one batch (256 writes), each a SAVEPOINT and a RELEASE.
            let many: Vec<_> = (0..300)
                .map(|i| queued(insert(format!("m{i:03}"), false, true)))
                .collect();
            hold.await.expect("join").expect("hold");
            assert!(a.await.expect("join").is_ok());
            assert_eq!(b.await.expect("join").expect_err("b fails").code(), "test");
            assert_eq!(
                early.await.expect("join").expect_err("fails").code(),
                "test"
            );
            assert!(c.await.expect("join").is_ok());
            for write in many {
                write.await.expect("join").expect("committed");
            }
            let rows = stored(&db).await;
            assert_eq!(rows.len(), 302, "a, c and the 300");
            assert_eq!(rows[..2], ["a".to_string(), "c".to_string()]);
            assert!(!rows.contains(&"b".to_string()));
        });
        db.close().expect("close");
    }
}

/// On both engines a batch's writes run without a savepoint each: a write
/// that fails after writing is undone by rolling the batch back and running
/// the writes before it again, which answer their second run; a write that
/// failed by itself keeps its answer and is not run again; the rest of the
/// batch, and the next batches, run with a savepoint each, so a second such
/// failure replays nothing.
#[test]
fn a_write_failing_after_writing_is_undone_by_running_its_batch_again() {
    type Runs = Arc<AtomicUsize>;
    /// A write queued at once, counting its runs.
    fn insert(
        db: &Db,
        x: &'static str,
        write: bool,
        fail: bool,
    ) -> (Runs, tokio::task::JoinHandle<ApiResult<String>>) {
        let runs = Runs::default();
        let counted = runs.clone();
        let write = db.write(move |conn| {
            counted.fetch_add(1, Ordering::SeqCst);
            if write {
                conn.execute("INSERT INTO t (x) VALUES (?1)", [x])?;
            }
            if fail {
                return Err(ApiError::conflict("test", "refused"));
            }
            Ok(format!("{x} stored"))
        });
        (runs, queued(write))
    }
    let runs = |runs: &Runs| runs.load(Ordering::SeqCst);
    let dir = tempfile::tempdir().expect("temp dir");
    for location in locations(&dir) {
        let db = open(&location, Arc::new(NoCapture));
        runtime().block_on(async {
            let held = hold(&db).await;
            let (a_runs, a) = insert(&db, "a", true, false);
            let (e_runs, e) = insert(&db, "e", false, true);
            let (b_runs, b) = insert(&db, "b", true, true);
            let (c_runs, c) = insert(&db, "c", true, false);
            let (d_runs, d) = insert(&db, "d", true, true);
            held.await.expect("join").expect("hold");
            assert_eq!(a.await.expect("join").expect("a"), "a stored");
            assert_eq!(e.await.expect("join").expect_err("e").code(), "test");
            assert_eq!(b.await.expect("join").expect_err("b").code(), "test");
            assert_eq!(c.await.expect("join").expect("c"), "c stored");
            assert_eq!(d.await.expect("join").expect_err("d").code(), "test");
            assert_eq!(stored(&db).await, ["a", "c"]);
            assert_eq!(runs(&a_runs), 2, "a runs again after b");
            assert_eq!(runs(&e_runs), 1, "e keeps its answer");
            assert_eq!(runs(&b_runs), 1);
            assert_eq!(runs(&c_runs), 1, "c runs after the replay");
            assert_eq!(runs(&d_runs), 1, "d is undone by its savepoint");
            // The next batch has a savepoint per write too.
            let held = hold(&db).await;
            let (x_runs, x) = insert(&db, "x", true, false);
            let (y_runs, y) = insert(&db, "y", true, true);
            held.await.expect("join").expect("hold");
            assert_eq!(x.await.expect("join").expect("x"), "x stored");
            assert_eq!(y.await.expect("join").expect_err("y").code(), "test");
            assert_eq!(stored(&db).await, ["a", "c", "x"]);
            assert_eq!(runs(&x_runs), 1, "no replay");
            assert_eq!(runs(&y_runs), 1);
        });
        db.close().expect("close");
    }
}

/// A write whose statement fails leaves the rest of its batch whole, though
/// the statement only read and the write is the batch's last: on PostgreSQL
/// a failed statement leaves the transaction to be rolled back (its COMMIT
/// would roll back without an error), so the batch is run again, the writes
/// before it twice, with a savepoint each; on a data file it left nothing to
/// undo, and nothing runs twice.
#[test]
fn a_write_whose_statement_fails_leaves_the_rest_of_its_batch_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    for location in locations(&dir) {
        let file = matches!(location, Location::File(_));
        let db = open(&location, Arc::new(NoCapture));
        runtime().block_on(async {
            let held = hold(&db).await;
            let runs = Arc::new(AtomicUsize::new(0));
            let insert = |x: &'static str| {
                let counted = runs.clone();
                queued(db.write(move |conn| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    conn.execute("INSERT INTO t (x) VALUES (?1)", [x])?;
                    Ok(())
                }))
            };
            let (a, c) = (insert("a"), insert("c"));
            let failing = queued(db.write(|conn| {
                conn.prepare("SELECT x FROM no_such_table")?
                    .query_map([], |row| row.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(())
            }));
            held.await.expect("join").expect("hold");
            a.await.expect("join").expect("a");
            c.await.expect("join").expect("c");
            let error = failing.await.expect("join").expect_err("no such table");
            assert_eq!(error.status(), 500, "{error:?}");
            assert_eq!(stored(&db).await, ["a", "c"]);
            let runs = runs.load(Ordering::SeqCst);
            assert_eq!(runs, if file { 2 } else { 4 }, "a and c, once or twice");
        });
        db.close().expect("close");
    }
}

/// A statement sent ahead (`Statement::execute_ahead`: on PostgreSQL, in the
/// writer, sent without waiting for its answer) that fails fails its own
/// write, with its own error, however the writer comes to read its answer:
/// with a later statement of the same write (the write returns the error),
/// with the capture's first statement (the capture's notes on PostgreSQL),
/// or, when the capture sends none, by the writer itself before the next
/// write. The writes around it commit, once each but those before it in the
/// batch, which run again (it wrote, so the batch is replayed; the next
/// batch then has a savepoint per write, and its failing write is rolled
/// back to its own). On SQLite
/// the statement runs at once and the write fails there: the same answers.
#[test]
fn a_statement_sent_ahead_that_fails_fails_its_own_write_and_only_it() {
    let captures: [fn() -> Arc<dyn Capture>; 2] = [|| Arc::new(NoCapture), || Arc::new(Querying)];
    for capture in captures {
        let dir = tempfile::tempdir().expect("temp dir");
        for location in locations(&dir) {
            let db = open(&location, capture());
            runtime().block_on(async {
                db.write(|conn| {
                    Ok(conn.execute_batch("CREATE TABLE u (x text CHECK (x <> 'bad'))")?)
                })
                .await
                .expect("table u");
                for read_after in [false, true] {
                    let held = hold(&db).await;
                    let runs = Arc::new(AtomicUsize::new(0));
                    let insert = |table: &'static str, x: &'static str| {
                        let counted = runs.clone();
                        queued(db.write(move |conn| {
                            counted.fetch_add(1, Ordering::SeqCst);
                            conn.prepare(&format!("INSERT INTO {table} (x) VALUES (?1)"))?
                                .execute_ahead([x])?;
                            if read_after {
                                conn.prepare("SELECT count(*) FROM t")?
                                    .query_row([], |row| row.get::<_, i64>(0))?;
                            }
                            Ok(())
                        }))
                    };
                    let a = insert("t", "a");
                    let bad = insert("u", "bad");
                    let c = insert("t", "c");
                    held.await.expect("join").expect("hold");
                    a.await.expect("join").expect("a");
                    let error = bad.await.expect("join").expect_err("the CHECK refuses");
                    assert_eq!(error.status(), 500, "{error:?}");
                    c.await.expect("join").expect("c");
                    assert_eq!(stored(&db).await, ["a", "c"], "read after: {read_after}");
                    // The batches after a replay run with a savepoint per
                    // write: nothing runs twice there.
                    let expected = if read_after { 3 } else { 4 };
                    assert_eq!(
                        runs.load(Ordering::SeqCst),
                        expected,
                        "read after: {read_after}"
                    );
                    db.write(|conn| Ok(conn.execute_batch("DELETE FROM t")?))
                        .await
                        .expect("emptied");
                }
            });
            db.close().expect("close");
        }
    }
}

/// A capture whose record runs a statement, as the change log's does on
/// PostgreSQL (it takes the write's notes back).
struct Querying;

impl Capture for Querying {
    fn install(&self, _: &Conn) -> quayside::db::Result<()> {
        Ok(())
    }
    fn record(&self, conn: &Conn, _: &str) -> ApiResult<Option<u64>> {
        conn.prepare("SELECT 1")?
            .query_row([], |row| row.get::<_, i64>(0))?;
        Ok(None)
    }
    fn discard(&self) {}
    fn head(&self, _: &Conn) -> quayside::db::Result<u64> {
        Ok(0)
    }
}

/// A statement sent ahead for its rows (`Statement::query_ahead`) answers
/// them once the batch has committed (on PostgreSQL its answer was read
/// with a later statement, or the COMMIT), each row mapped; one that fails
/// fails its own write, and the writes around it commit with their rows.
#[test]
fn a_statement_sent_ahead_for_its_rows_answers_them_after_the_commit() {
    let dir = tempfile::tempdir().expect("temp dir");
    for location in locations(&dir) {
        let db = open(&location, Arc::new(NoCapture));
        runtime().block_on(async {
            db.write(|conn| Ok(conn.execute_batch("CREATE TABLE u (x text CHECK (x <> 'bad'))")?))
                .await
                .expect("table u");
            let held = hold(&db).await;
            let insert = |table: &'static str, x: &'static str| {
                queued(db.write(move |conn| {
                    Ok(conn
                        .prepare(&format!(
                            "INSERT INTO {table} (x) VALUES (?1), (?1 || '2') RETURNING x"
                        ))?
                        .query_ahead([x], |row| Ok(format!("{}!", row.get::<_, String>(0)?)))?)
                }))
            };
            let a = insert("t", "a");
            let bad = insert("u", "bad");
            let c = insert("t", "c");
            held.await.expect("join").expect("hold");
            let rows = |later: quayside::db::Later<String>| {
                later.take().expect("read by now").expect("mapped")
            };
            assert_eq!(rows(a.await.expect("join").expect("a")), ["a!", "a2!"]);
            let error = bad.await.expect("join").err().expect("the CHECK refuses");
            assert_eq!(error.status(), 500, "{error:?}");
            assert_eq!(rows(c.await.expect("join").expect("c")), ["c!", "c2!"]);
            assert_eq!(stored(&db).await, ["a", "a2", "c", "c2"]);
        });
        db.close().expect("close");
    }
}

/// A capture that cannot record the write of actor `refuse`.
struct Refusing;

impl Capture for Refusing {
    fn install(&self, _: &Conn) -> quayside::db::Result<()> {
        Ok(())
    }
    fn record(&self, _: &Conn, actor: &str) -> ApiResult<Option<u64>> {
        if actor == "refuse" {
            return Err(ApiError::internal("cannot record"));
        }
        Ok(None)
    }
    fn discard(&self) {}
    fn head(&self, _: &Conn) -> quayside::db::Result<u64> {
        Ok(0)
    }
}

/// A capture that holds each write's actor back until the batch's COMMIT
/// and cannot append a batch holding `refuse` (as the change log holds its
/// entries back on PostgreSQL).
#[derive(Default)]
struct HoldingBack {
    held: std::sync::Mutex<Vec<String>>,
}

impl Capture for HoldingBack {
    fn install(&self, _: &Conn) -> quayside::db::Result<()> {
        Ok(())
    }
    fn record(&self, _: &Conn, _: &str) -> ApiResult<Option<u64>> {
        Ok(None)
    }
    fn hold(&self, _: &Conn, actor: &str) -> ApiResult<Option<u64>> {
        self.held.lock().unwrap().push(actor.to_string());
        Ok(None)
    }
    fn append_held(&self, _: &Conn) -> ApiResult<Option<u64>> {
        let held = std::mem::take(&mut *self.held.lock().unwrap());
        if held.iter().any(|actor| actor == "refuse") {
            return Err(ApiError::internal("cannot append"));
        }
        Ok(None)
    }
    fn drop_held(&self) {
        self.held.lock().unwrap().clear();
    }
    fn discard(&self) {}
    fn head(&self, _: &Conn) -> quayside::db::Result<u64> {
        Ok(0)
    }
}

/// No change is committed without its entry: a write whose changes cannot
/// be recorded (here before its savepoint is released) fails its whole
/// batch, and the batch after it commits as usual.
#[test]
fn a_write_that_cannot_be_recorded_fails_its_whole_batch() {
    a_refused_write_fails_its_whole_batch(|| Arc::new(Refusing));
}

/// What a capture holds back is appended in the batch's transaction before
/// its COMMIT: when it cannot be, the whole batch fails and nothing of it is
/// stored; nothing held back outlives its transaction, so the next batch
/// commits as usual.
#[test]
fn a_batch_whose_held_back_changes_cannot_be_appended_fails_whole() {
    a_refused_write_fails_its_whole_batch(|| Arc::new(HoldingBack::default()));
}

/// On both engines: a batch holding the write of actor `refuse`, which
/// `capture` cannot record, fails whole; the next batch commits.
fn a_refused_write_fails_its_whole_batch(capture: impl Fn() -> Arc<dyn Capture>) {
    let dir = tempfile::tempdir().expect("temp dir");
    for location in locations(&dir) {
        let db = open(&location, capture());
        runtime().block_on(async {
            let hold = hold(&db).await;
            let insert = |x: &'static str, actor: &'static str| {
                db.write_as(Arc::from(actor), move |conn| {
                    conn.execute("INSERT INTO t (x) VALUES (?1)", [x])?;
                    Ok(())
                })
            };
            let (a, b, c) = (
                queued(insert("a", "alice")),
                queued(insert("b", "refuse")),
                queued(insert("c", "alice")),
            );
            let held = hold.await.expect("join").expect_err("the batch failed");
            assert_eq!(held.status(), 500);
            for answer in [a, b, c] {
                let err = answer.await.expect("join").expect_err("the batch failed");
                assert_eq!(err.status(), 500);
            }
            assert!(
                stored(&db).await.is_empty(),
                "nothing of the batch was stored"
            );
            insert("d", "alice").await.expect("the next batch commits");
            assert_eq!(stored(&db).await, ["d".to_string()]);
        });
        db.close().expect("close");
    }
}

/// The writer's statements may keep their plans (`plan_cache_mode = auto`:
/// they find rows by key, and planning every execution took a quarter of the
/// writing backend's time); the readers' are planned for their values at
/// every execution (a partial index on a parameter).
#[test]
fn the_writer_keeps_its_plans_and_the_readers_plan_for_their_values() {
    let location = Location::Postgres(Box::new(cluster::cluster().database()));
    let db = Db::open_at(&location, 2, None, Arc::new(NoCapture)).expect("open the store");
    let rt = runtime();
    let setting = "SELECT current_setting('plan_cache_mode')";
    let written: String = rt
        .block_on(db.write(move |conn| Ok(conn.query_row(setting, [], |row| row.get(0))?)))
        .unwrap();
    assert_eq!(written, "auto");
    let read: String = rt
        .block_on(db.read(move |conn, _| Ok(conn.query_row(setting, [], |row| row.get(0))?)))
        .unwrap();
    assert_eq!(read, "force_custom_plan");
}
