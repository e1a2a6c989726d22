//! Counts held to the batch's end (`quayside::db::held`), with the real
//! writer, on a data file and on PostgreSQL: the additions of a batch's writes reach the table once,
//! summed, before its COMMIT; a write that reads a count flushes first and
//! sees every addition before it; a write that fails takes its additions
//! with it, and a batch run again counts each addition once.

use std::sync::Arc;

use quayside::db::held::{self, Counter};
use quayside::db::{Conn, Db, Location};
use quayside::error::{ApiError, ApiResult};

use super::cluster;
use super::writer::{hold, queued, runtime};

static COUNTS: Counter = Counter::new("test_counts", "k", "n");

/// A store on a fresh data file (in `dir`) and one on a fresh PostgreSQL
/// database (opened outside any runtime: the driver connects at once).
fn stores(dir: &tempfile::TempDir) -> [Db; 2] {
    [
        Location::File(dir.path().join("held.db")),
        Location::Postgres(Box::new(cluster::cluster().database())),
    ]
    .map(|location| {
        Db::open_at(
            &location,
            2,
            None,
            Arc::new(quayside::db::writer::NoCapture),
        )
        .expect("open the store")
    })
}

/// Runs `test` on each store, with its table of counts.
fn on_both(test: impl AsyncFn(Db)) {
    let dir = tempfile::tempdir().expect("temp dir");
    for db in stores(&dir) {
        runtime().block_on(async {
            table(&db).await;
            test(db).await;
        });
    }
}

/// The table of counts.
async fn table(db: &Db) {
    db.write(|conn| {
        conn.execute_batch("CREATE TABLE test_counts (k text PRIMARY KEY, n bigint NOT NULL)")?;
        Ok(())
    })
    .await
    .expect("the table");
}

/// `amount` more for each of `keys`.
fn amounts(keys: &[&str], amount: i64) -> Vec<(String, i64)> {
    keys.iter().map(|k| (k.to_string(), amount)).collect()
}

/// A write adding `amount` to each of `keys`, which it finds held: not in
/// the table yet.
fn add(
    db: &Db,
    keys: &'static [&'static str],
    amount: i64,
) -> tokio::task::JoinHandle<ApiResult<bool>> {
    queued(db.write(move |conn| {
        held::add(conn, &COUNTS, &amounts(keys, amount))?;
        Ok(count(conn, keys[0])?.is_none())
    }))
}

fn count(conn: &Conn, key: &str) -> ApiResult<Option<i64>> {
    Ok(conn
        .prepare("SELECT n FROM test_counts WHERE k = ?1")?
        .query_row([key], |row| row.get(0))
        .ok())
}

async fn counts(db: &Db) -> Vec<(String, i64)> {
    db.read(|conn, _| {
        Ok(conn
            .prepare("SELECT k, n FROM test_counts ORDER BY k")?
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<_, _>>()?)
    })
    .await
    .expect("read the counts")
}

fn expected(rows: &[(&str, i64)]) -> Vec<(String, i64)> {
    rows.iter().map(|(k, n)| (k.to_string(), *n)).collect()
}

/// One batch: additions held, a write that reads a count after flushing
/// (it sees the additions before it, its own included), a write that fails
/// after holding (its addition is dropped), more additions after the
/// flush. The table then shows each addition once.
#[test]
fn a_batch_adds_what_its_writes_held_once_and_a_reader_sees_it_first() {
    on_both(async |db| {
        let held_writer = hold(&db).await;
        let first = add(&db, &["a", "b"], 1);
        let second = add(&db, &["a"], 2);
        let reader = queued(db.write(|conn| {
            held::add(conn, &COUNTS, &amounts(&["a"], 10))?;
            held::flush(conn)?;
            count(conn, "a")
        }));
        let failing = queued(db.write(|conn| -> ApiResult<()> {
            held::add(conn, &COUNTS, &amounts(&["c"], 1))?;
            Err(ApiError::conflict("refused", "this write fails"))
        }));
        let last = add(&db, &["d", "b"], 5);
        held_writer.await.expect("join").expect("hold");
        assert!(
            first.await.expect("join").expect("stored"),
            "held: not in the table yet"
        );
        assert!(second.await.expect("join").expect("stored"));
        assert_eq!(
            reader.await.expect("join").expect("read"),
            Some(13),
            "the reader sees 1 + 2 + its own 10"
        );
        assert!(failing.await.expect("join").is_err());
        assert!(last.await.expect("join").expect("stored"));
        assert_eq!(
            counts(&db).await,
            expected(&[("a", 13), ("b", 6), ("d", 5)])
        );
    });
}

/// One batch: an addition, a write that flushes it, writes and then fails
/// (the row's key is taken), another addition. Each addition counts once.
async fn a_batch_with_a_write_failing_after_its_flush(db: &Db) {
    let held_writer = hold(db).await;
    let first = add(db, &["a"], 1);
    let failing = queued(db.write(|conn| -> ApiResult<()> {
        held::flush(conn)?;
        conn.execute("INSERT INTO test_counts (k, n) VALUES ('a', 100)", [])?;
        Ok(())
    }));
    let last = add(db, &["a", "b"], 1);
    held_writer.await.expect("join").expect("hold");
    assert!(first.await.expect("join").expect("stored"));
    assert!(failing.await.expect("join").is_err(), "the key was taken");
    assert!(last.await.expect("join").expect("stored"));
    assert_eq!(counts(db).await, expected(&[("a", 2), ("b", 1)]));
}

/// A write that fails after it flushed the batch's counts and wrote, in a
/// batch whose writes each run in a savepoint (the writer's batches after
/// one was run again): its savepoint's rollback takes back what it flushed
/// of the writes before it, which is held again and added at the batch's
/// end.
#[test]
fn a_write_rolled_back_to_its_savepoint_gives_back_what_it_flushed() {
    on_both(async |db| {
        // A write that fails after writing: its batch runs again, and the
        // next batches run each write in a savepoint.
        let twice = db
            .write(|conn| {
                conn.execute("INSERT INTO test_counts (k, n) VALUES ('z', 0)", [])?;
                conn.execute("INSERT INTO test_counts (k, n) VALUES ('z', 0)", [])?;
                Ok(())
            })
            .await;
        assert!(twice.is_err(), "the key was taken");
        a_batch_with_a_write_failing_after_its_flush(&db).await;
    });
}

/// The same without savepoints: the failing write rolls the whole batch
/// back, and the writes before and after it run again.
#[test]
fn a_batch_run_again_counts_each_addition_once() {
    on_both(async |db| {
        a_batch_with_a_write_failing_after_its_flush(&db).await;
    });
}
