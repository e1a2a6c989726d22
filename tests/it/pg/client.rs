//! The `Client`: placeholders on a real server, the statement cache,
//! `execute`/`query`/`query_row`/`batch_execute`, transactions, and use from
//! the blocking threads the store runs on.

use quayside::db::pg::{Client, Error, STATEMENT_CACHE};
use quayside::db::value::Value;

use super::fresh;

fn text(s: &str) -> Value {
    Value::Text(s.into())
}

#[test]
fn sqlite_placeholders_run_on_the_server_and_quoted_marks_stay_text() {
    let (_, client) = fresh();
    let row = client
        .query_row(
            "SELECT ?2::bigint - ?1::bigint, 'it''s ?', \"?col\", ?::text -- what?\n \
             FROM (SELECT 1 AS \"?col\") AS t /* ?9 */",
            &[Value::Integer(1), Value::Integer(5), text("third")],
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        row.values(),
        [
            Value::Integer(4),
            text("it's ?"),
            Value::Integer(1),
            text("third")
        ]
    );
    // The same number twice binds one parameter.
    let row = client
        .query_row("SELECT ?1::text || ?1::text", &[text("ab")])
        .unwrap()
        .unwrap();
    assert_eq!(row[0], text("abab"));
}

#[test]
fn a_statement_text_is_prepared_once_and_then_served_from_the_cache() {
    let (_, client) = fresh();
    client
        .batch_execute("CREATE TABLE t (id bigint PRIMARY KEY, name text)")
        .unwrap();
    for id in 0..5 {
        let changed = client
            .execute(
                "INSERT INTO t (id, name) VALUES (?1, ?2)",
                &[Value::Integer(id), text("n")],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }
    assert_eq!(client.prepared_statements(), 1);
    assert_eq!(client.cached_statements(), 1);
    let count = client.query_row("SELECT count(*) FROM t", &[]).unwrap();
    assert_eq!(count.unwrap()[0], Value::Integer(5));
    assert_eq!(client.prepared_statements(), 2);
    assert_eq!(
        client
            .execute(
                "UPDATE t SET name = ? WHERE id >= ?",
                &[text("m"), Value::Integer(3)]
            )
            .unwrap(),
        2
    );
    assert_eq!(client.cached_statements(), 3);
}

#[test]
fn the_cache_keeps_the_most_recently_used_statements() {
    let (_, client) = fresh();
    let statement = |n: usize| format!("SELECT {n}::bigint + ?1::bigint");
    for n in 0..=STATEMENT_CACHE {
        let row = client
            .query_row(&statement(n), &[Value::Integer(1)])
            .unwrap()
            .unwrap();
        assert_eq!(row[0], Value::Integer(n as i64 + 1));
    }
    assert_eq!(client.cached_statements(), STATEMENT_CACHE);
    let prepared = client.prepared_statements();
    assert_eq!(prepared, STATEMENT_CACHE as u64 + 1);
    // The newest is still cached; the oldest made room for it.
    client
        .query_row(&statement(STATEMENT_CACHE), &[Value::Integer(1)])
        .unwrap();
    assert_eq!(client.prepared_statements(), prepared);
    client
        .query_row(&statement(0), &[Value::Integer(1)])
        .unwrap();
    assert_eq!(client.prepared_statements(), prepared + 1);
    assert_eq!(client.cached_statements(), STATEMENT_CACHE);
}

#[test]
fn a_cached_statement_whose_table_changed_is_prepared_anew() {
    let (_, client) = fresh();
    client
        .batch_execute("CREATE TABLE t (a bigint); INSERT INTO t VALUES (1)")
        .unwrap();
    let before = client.query("SELECT * FROM t", &[]).unwrap();
    assert_eq!(before[0].values(), [Value::Integer(1)]);
    client
        .batch_execute("ALTER TABLE t ADD COLUMN b text DEFAULT 'x'")
        .unwrap();
    // The server refuses the old plan once (0A000); the statement leaves the
    // cache, and the next call prepares it for the new table.
    let error = client.query("SELECT * FROM t", &[]).unwrap_err();
    assert_eq!(error.code(), Some("0A000"), "{error}");
    let after = client.query("SELECT * FROM t", &[]).unwrap();
    assert_eq!(after[0].values(), [Value::Integer(1), text("x")]);
}

#[test]
fn query_row_is_none_without_rows_and_query_reads_every_row() {
    let (_, client) = fresh();
    client
        .batch_execute(
            "CREATE TABLE t (id bigint, name text); \
             INSERT INTO t VALUES (1, 'a'), (2, NULL), (3, 'c')",
        )
        .unwrap();
    assert_eq!(
        client
            .query_row("SELECT name FROM t WHERE id = ?1", &[Value::Integer(9)])
            .unwrap(),
        None
    );
    let rows = client
        .query("SELECT id, name FROM t ORDER BY id", &[])
        .unwrap();
    let values: Vec<Vec<Value>> = rows.into_iter().map(|r| r.into_values()).collect();
    assert_eq!(
        values,
        [
            vec![Value::Integer(1), text("a")],
            vec![Value::Integer(2), Value::Null],
            vec![Value::Integer(3), text("c")],
        ]
    );
    // query_row takes the first of several rows.
    let first = client
        .query_row("SELECT id FROM t ORDER BY id DESC", &[])
        .unwrap();
    assert_eq!(first.unwrap()[0], Value::Integer(3));
    // Too few parameters is the driver's error, before anything runs.
    let error = client
        .execute(
            "DELETE FROM t WHERE id = ?1 OR id = ?2",
            &[Value::Integer(1)],
        )
        .unwrap_err();
    assert!(matches!(error, Error::Other(_)), "{error:?}");
    assert_eq!(
        client.query("SELECT id FROM t", &[]).unwrap().len(),
        3,
        "nothing was deleted"
    );
}

#[test]
fn a_failed_transaction_leaves_nothing_and_a_committed_one_stays() {
    let (_, client) = fresh();
    client
        .batch_execute("CREATE TABLE t (id bigint PRIMARY KEY)")
        .unwrap();
    let result: Result<(), Error> = client.transaction(|c| {
        c.execute("INSERT INTO t VALUES (?1)", &[Value::Integer(1)])?;
        c.execute("INSERT INTO t VALUES (?1)", &[Value::Integer(1)])?;
        Ok(())
    });
    assert!(matches!(result, Err(Error::Unique { .. })), "{result:?}");
    let count =
        |c: &Client| c.query_row("SELECT count(*) FROM t", &[]).unwrap().unwrap()[0].clone();
    assert_eq!(count(&client), Value::Integer(0));
    client
        .transaction(|c| c.execute("INSERT INTO t VALUES (?1)", &[Value::Integer(2)]))
        .unwrap();
    assert_eq!(count(&client), Value::Integer(1));
}

/// The writer's `SAVEPOINT` and `RELEASE` are held back to travel with the
/// next statement (`Conn::execute_soon`): they run before it, in the order
/// held back, within a transaction as outside one; an error of a held-back
/// statement is the next call's, and nothing of it is left for the call
/// after; a rollback drops what is held back.
#[test]
fn held_back_statements_run_before_the_next_one_in_order_and_a_rollback_drops_them() {
    let (_, client) = fresh();
    client
        .batch_execute("CREATE TABLE t (id bigint PRIMARY KEY)")
        .unwrap();
    let ids = |c: &Client| -> Vec<Value> {
        c.query("SELECT id FROM t ORDER BY id", &[])
            .unwrap()
            .into_iter()
            .map(|row| row[0].clone())
            .collect()
    };
    // A batch as the writer runs it: the second write fails and is rolled
    // back to its savepoint, the first and third stay; the last RELEASE goes
    // with the COMMIT.
    client.batch_execute("BEGIN").unwrap();
    client.defer("SAVEPOINT request");
    client
        .execute("INSERT INTO t VALUES (?1)", &[Value::Integer(1)])
        .unwrap();
    client.defer("RELEASE request");
    client.defer("SAVEPOINT request");
    let duplicate = client.execute("INSERT INTO t VALUES (?1)", &[Value::Integer(1)]);
    assert!(
        matches!(duplicate, Err(Error::Unique { .. })),
        "{duplicate:?}"
    );
    client
        .batch_execute("ROLLBACK TO request; RELEASE request")
        .unwrap();
    client.defer("SAVEPOINT request");
    client
        .execute("INSERT INTO t VALUES (?1)", &[Value::Integer(3)])
        .unwrap();
    client.defer("RELEASE request");
    client.batch_execute("COMMIT").unwrap();
    assert_eq!(ids(&client), [Value::Integer(1), Value::Integer(3)]);

    // In order, before the next statement, prepared or simple.
    client.defer("INSERT INTO t VALUES (4)");
    client.defer("UPDATE t SET id = 5 WHERE id = 4");
    assert_eq!(
        client
            .query_row("SELECT count(*) FROM t WHERE id = 5", &[])
            .unwrap()
            .unwrap()[0],
        Value::Integer(1)
    );
    client.defer("DELETE FROM t WHERE id = 5");
    assert_eq!(
        client.batch_first("SELECT count(*) FROM t").unwrap(),
        Some("2".to_string())
    );

    // A held-back statement's error is the next call's; that call's own
    // statement did not run, and nothing is held back any more.
    client.defer("INSERT INTO t VALUES (1)");
    let failed = client.execute("INSERT INTO t VALUES (?1)", &[Value::Integer(6)]);
    assert!(matches!(failed, Err(Error::Unique { .. })), "{failed:?}");
    assert_eq!(ids(&client), [Value::Integer(1), Value::Integer(3)]);

    // Forgotten, not sent.
    client.defer("INSERT INTO t VALUES (7)");
    client.forget_deferred();
    assert_eq!(ids(&client), [Value::Integer(1), Value::Integer(3)]);
}

/// The store runs its SQL on `spawn_blocking` threads of the server's Tokio
/// runtime. The driver blocks on a runtime of its own there, which Tokio
/// allows (it refuses only inside a runtime's async context).
#[test]
fn a_client_works_from_a_blocking_thread_of_a_running_runtime() {
    let (options, _) = fresh();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sums = runtime.block_on(async move {
        let tasks: Vec<_> = (0..3)
            .map(|n| {
                let options = options.clone();
                tokio::task::spawn_blocking(move || {
                    let client = Client::connect(&options).unwrap();
                    let row = client
                        .query_row("SELECT ?1::bigint * 2", &[Value::Integer(n)])
                        .unwrap()
                        .unwrap();
                    row[0].clone()
                })
            })
            .collect();
        let mut sums = Vec::new();
        for task in tasks {
            sums.push(task.await.unwrap());
        }
        sums
    });
    assert_eq!(
        sums,
        [Value::Integer(0), Value::Integer(2), Value::Integer(4)]
    );
}

#[test]
fn plan_cache_mode_is_set_on_every_connection() {
    let (_, client) = fresh();
    let row = client
        .query_row("SELECT current_setting('plan_cache_mode')", &[])
        .unwrap()
        .unwrap();
    assert_eq!(row[0], text("force_custom_plan"));
    let row = client
        .query_row("SELECT current_setting('application_name')", &[])
        .unwrap()
        .unwrap();
    assert_eq!(row[0], text("quayside"));
}
