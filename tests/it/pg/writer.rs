//! The writer's batches on both engines: the invariants that one request's
//! writes are one unit and that no change is committed without its entry,
//! on a data file and on PostgreSQL. There each write's `RELEASE` is held
//! back to travel with the next write's `SAVEPOINT` (or the `COMMIT`) and its
//! changes are recorded before it (`Dialect::records_before_release`); on
//! SQLite the changes are recorded after it.

use std::sync::Arc;
use std::time::Duration;

use quayside::db::writer::{Capture, NoCapture};
use quayside::db::{Conn, Db, Location};
use quayside::error::{ApiError, ApiResult};

use super::cluster;

fn runtime() -> tokio::runtime::Runtime {
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

/// A write holding the writer for 150 ms: writes queued meanwhile join one
/// batch after it (a fresh store takes up to 256 writes in a batch; on a
/// data file only a batch of several writes followed by a wait for its flush
/// lowers that, and the tests hold one after lone writes only).
async fn hold(db: &Db) -> tokio::task::JoinHandle<ApiResult<()>> {
    let hold = tokio::spawn(db.write(|_| {
        std::thread::sleep(Duration::from_millis(150));
        Ok(())
    }));
    tokio::time::sleep(Duration::from_millis(30)).await;
    hold
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
            let a = tokio::spawn(insert("a".into(), false, true));
            let b = tokio::spawn(insert("b".into(), true, true));
            // Fails before any statement: only its held-back SAVEPOINT was sent.
            let early = tokio::spawn(insert("e".into(), true, false));
            let c = tokio::spawn(insert("c".into(), false, true));
            // Past one batch (256 writes), each a SAVEPOINT and a RELEASE.
            let many: Vec<_> = (0..300)
                .map(|i| tokio::spawn(insert(format!("m{i:03}"), false, true)))
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

/// No change is committed without its entry: a write whose changes cannot
/// be recorded (here before its savepoint is released) fails its whole
/// batch, and the batch after it commits as usual.
#[test]
fn a_write_that_cannot_be_recorded_fails_its_whole_batch() {
    let dir = tempfile::tempdir().expect("temp dir");
    for location in locations(&dir) {
        let db = open(&location, Arc::new(Refusing));
        runtime().block_on(async {
            let hold = hold(&db).await;
            let insert = |x: &'static str, actor: &'static str| {
                db.write_as(Arc::from(actor), move |conn| {
                    conn.execute("INSERT INTO t (x) VALUES (?1)", [x])?;
                    Ok(())
                })
            };
            let (a, b, c) = (
                tokio::spawn(insert("a", "alice")),
                tokio::spawn(insert("b", "refuse")),
                tokio::spawn(insert("c", "alice")),
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
