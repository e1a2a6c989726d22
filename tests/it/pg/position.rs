//! The caches' commit position on PostgreSQL (`db::pg::position`), through
//! `Db::stamp` as the caches ask it: a position read after the call began,
//! moved by any writing transaction of any connection, and one query shared
//! by the calls that arrive together.

use std::sync::Arc;

use quayside::db::pg::Client;
use quayside::db::{Db, Location};

use super::cluster;

/// A store on a fresh database of the test cluster, another connection to
/// that database, and a runtime to ask positions on.
fn set_up() -> (Db, Client, tokio::runtime::Runtime) {
    let options = cluster::cluster().database();
    let location = Location::Postgres(Box::new(options.clone()));
    let db = Db::open_at(
        &location,
        2,
        None,
        Arc::new(quayside::changes::Capture::default()),
    )
    .expect("open the store on PostgreSQL");
    let other = Client::connect(&options).expect("connect");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    (db, other, runtime)
}

#[test]
fn the_position_moves_with_every_commit_anywhere_and_calls_together_share_a_query() {
    let (db, other, runtime) = set_up();
    runtime.block_on(async {
        let first = db.stamp().await.expect("a position");
        assert_eq!(db.stamp().await, Some(first), "nothing committed");
        // The driver blocks on a runtime of its own: off this one's workers.
        use tokio::task::block_in_place as sync;
        sync(|| other.query("SELECT * FROM organizations", &[]).unwrap());
        assert_eq!(db.stamp().await, Some(first), "a read is not a commit");

        // A statement of another connection, committed on its own (the
        // CLI's way, or an operator's psql): the very next call sees it.
        sync(|| {
            other
                .execute(
                    "INSERT INTO organizations (id, name, name_folded, audience, created_at, \
                     updated_at) VALUES ('o', 'O', 'o', 't', 1, 1)",
                    &[],
                )
                .unwrap()
        });
        let second = db.stamp().await.expect("a position");
        assert_ne!(second, first, "another connection's commit");

        // This server's own writer.
        db.write(|conn| {
            conn.execute("UPDATE organizations SET name = 'P' WHERE id = 'o'", [])?;
            Ok(())
        })
        .await
        .unwrap();
        let third = db.stamp().await.expect("a position");
        assert_ne!(third, second, "the writer's commit");

        // Calls made together are answered by far fewer queries than calls,
        // all with the same position.
        let before = db.position_queries();
        let calls = 64;
        let answers = futures_join(&db, calls).await;
        let queries = db.position_queries() - before;
        assert!(answers.iter().all(|a| *a == Some(third)), "{answers:?}");
        assert!(
            queries <= calls / 2,
            "{queries} queries answered {calls} calls made together"
        );
    });
}

/// Holds the counter's table behind `locker`'s lock: a position query then
/// waits until `locker` commits.
fn lock_the_counter(locker: &Client) {
    tokio::task::block_in_place(|| {
        locker
            .batch_execute("BEGIN; LOCK TABLE change_log IN ACCESS EXCLUSIVE MODE")
            .unwrap()
    });
}

/// `calls` stamps asked at once (each polled before any is answered).
async fn futures_join(db: &Db, calls: u64) -> Vec<Option<quayside::db::stamp::Stamp>> {
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..calls {
        let db = db.clone();
        set.spawn(async move { db.stamp().await });
    }
    set.join_all().await
}

/// A position query that does not come back (here: blocked behind another
/// connection's lock on the counter's table) leaves no request waiting past
/// the limit: each is answered "unknown" (its caller then reads the store),
/// and the positions come back with the next query once the lock is gone.
#[test]
fn a_position_that_cannot_be_read_in_time_is_unknown_and_comes_back() {
    let (db, locker, runtime) = set_up();
    runtime.block_on(async {
        let before = db.stamp().await.expect("a position");
        lock_the_counter(&locker);
        use tokio::task::block_in_place as sync;
        // Requests taken while the query hangs, one after another and
        // several at once: every one answered "unknown", none waiting much
        // past the 2 s limit.
        let started = std::time::Instant::now();
        assert_eq!(db.stamp().await, None, "a position read behind the lock");
        let waited = started.elapsed();
        assert!(
            waited >= std::time::Duration::from_millis(1500)
                && waited < std::time::Duration::from_secs(10),
            "answered after {waited:?}"
        );
        let together = futures_join(&db, 8).await;
        assert!(together.iter().all(Option::is_none), "{together:?}");

        sync(|| locker.batch_execute("COMMIT").unwrap());
        // The query that hung comes back now; a request taken in the moment
        // before it does may still be answered "unknown", so wait for the
        // first known answer.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let again = loop {
            if let Some(position) = db.stamp().await {
                break position;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no position after the lock went"
            );
        };
        assert_eq!(again, before, "nothing was committed meanwhile");
    });
}

/// A request dropped while its query is out (its client gone, its own
/// timeout) leaves no one holding the asking: the next request asks, and is
/// answered.
#[test]
fn a_request_dropped_while_asking_leaves_the_next_to_ask() {
    let (db, locker, runtime) = set_up();
    runtime.block_on(async {
        let before = db.stamp().await.expect("a position");
        lock_the_counter(&locker);
        use tokio::task::block_in_place as sync;
        let sent = db.position_queries();
        let asking = tokio::spawn({
            let db = db.clone();
            async move { db.stamp().await }
        });
        // Its query is out (and held behind the lock) before it is dropped.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while db.position_queries() == sent {
            assert!(std::time::Instant::now() < deadline, "no query was sent");
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        asking.abort();
        assert!(asking.await.unwrap_err().is_cancelled());
        sync(|| locker.batch_execute("COMMIT").unwrap());

        // Were the asking still held, this call would wait out the limit
        // and be answered "unknown".
        assert_eq!(db.stamp().await, Some(before), "nothing was committed");
    });
}

/// `Db::same` on PostgreSQL: a copy of a group's rows (a cached session, a
/// workspace's scope, the read cache's locations) holds across commits that
/// changed no row of that group, whichever connection made them, and no
/// longer once one did. A document's write leaves every group; bookkeeping
/// (a session's sliding expiry) moves no count at all.
#[test]
fn a_group_s_copy_holds_across_commits_that_left_its_tables_alone() {
    use quayside::db::Tables;
    let (db, other, runtime) = set_up();
    runtime.block_on(async {
        use tokio::task::block_in_place as sync;
        let run = |sql: &str| sync(|| other.batch_execute(sql).unwrap());
        let groups = [Tables::LOCATIONS, Tables::WORKSPACES, Tables::SESSIONS];
        // Which groups still hold from `then` to the position now.
        let holding = |then| {
            let db = db.clone();
            async move {
                let now = db.stamp().await;
                assert_ne!(now, None, "a position");
                groups.map(|g| db.same(g, then, now))
            }
        };
        run("INSERT INTO organizations (id, name, name_folded, audience, created_at, updated_at) \
             VALUES ('o', 'O', 'o', 't', 1, 1); \
             INSERT INTO workspaces (id, client_id, created_at, updated_at) VALUES ('w', 'o', 1, 1); \
             INSERT INTO accounts (username, tenant, password_hash, password_salt, \
                 password_iterations, created_at) VALUES ('u', 't', '\\x00', '\\x00', 1, 1); \
             INSERT INTO sessions (key_hash, account_id, created_at, last_used_at) \
                 SELECT '\\x01', id, 1, 1 FROM accounts");

        let start = db.stamp().await;
        run("INSERT INTO documents (id, workspace_id, kind, body, created_at, updated_at) \
             VALUES ('j1', 'w', 'job', '{}', 1, 1)");
        assert_ne!(db.stamp().await, start, "a document's write is a commit");
        assert_eq!(holding(start).await, [true, true, true], "a document");
        assert!(
            !db.same(Tables::DOCUMENTS, start, db.stamp().await),
            "the documents are not counted apart: any commit ends their copies"
        );

        // This server's bookkeeping: no count moves, not even every commit's.
        let before = db.stamp().await;
        db.write_bookkeeping(std::sync::Arc::from("test"), |conn| {
            conn.execute("UPDATE sessions SET last_used_at = 2", [])?;
            Ok(())
        })
        .await
        .unwrap();
        assert_eq!(db.stamp().await, before, "bookkeeping moved a count");

        run("UPDATE locations SET name = name");
        assert_eq!(holding(start).await, [false, true, true], "a location");
        let start = db.stamp().await;
        run("UPDATE organizations SET name = 'P'");
        assert_eq!(holding(start).await, [true, false, true], "an organization");
        let start = db.stamp().await;
        db.write(|conn| {
            conn.execute("DELETE FROM sessions", [])?;
            Ok(())
        })
        .await
        .unwrap();
        assert_eq!(holding(start).await, [true, true, false], "a logout, by the writer");
        let start = db.stamp().await;
        run("UPDATE accounts SET tenant = 'x'");
        assert_eq!(holding(start).await, [true, true, false], "an account");
    });
}
