//! The caches' commit position on PostgreSQL (`db::pg::position`), through
//! `Db::stamp` as the caches ask it: a position read after the call began,
//! moved by any writing transaction of any connection, and one query shared
//! by the calls that arrive together.

use std::sync::Arc;

use quayside::db::pg::Client;
use quayside::db::{Db, Location};

use super::cluster;

fn open(location: &Location) -> Db {
    Db::open_at(
        location,
        2,
        None,
        Arc::new(quayside::changes::Capture::default()),
    )
    .expect("open the store on PostgreSQL")
}

#[test]
fn the_position_moves_with_every_commit_anywhere_and_calls_together_share_a_query() {
    let options = cluster::cluster().database();
    let location = Location::Postgres(Box::new(options.clone()));
    let db = open(&location);
    let other = Client::connect(&options).expect("connect");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
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

/// `calls` stamps asked at once (each polled before any is answered).
async fn futures_join(db: &Db, calls: u64) -> Vec<Option<quayside::db::stamp::Stamp>> {
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..calls {
        let db = db.clone();
        set.spawn(async move { db.stamp().await });
    }
    set.join_all().await
}
