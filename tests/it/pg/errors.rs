//! The server's errors sorted into `db::pg::Error`: each provoked on the real
//! server as it happens in use where that can be done in a test (a duplicate
//! key, a serialization failure, a deadlock, a lock not available, a
//! terminated session, no server at all). A full disk and a class-08 code
//! sent by the server are raised with `RAISE … USING ERRCODE`: the code
//! still comes from the server, through the same path.

use std::time::{Duration, Instant};

use quayside::db::pg::{Client, ConnectOptions, Error};
use quayside::db::value::Value;

use super::fresh;

fn table(client: &Client) {
    client
        .batch_execute(
            "CREATE TABLE t (id bigint PRIMARY KEY, name text CONSTRAINT t_name_unique UNIQUE, \
             v bigint); INSERT INTO t VALUES (1, 'a', 0), (2, 'b', 0)",
        )
        .unwrap();
}

#[test]
fn a_duplicate_key_is_unique_with_the_constraint_named() {
    let (_, client) = fresh();
    table(&client);
    let error = client
        .execute(
            "INSERT INTO t (id, name) VALUES (?1, ?2)",
            &[Value::Integer(3), Value::Text("a".into())],
        )
        .unwrap_err();
    match &error {
        Error::Unique { constraint, .. } => {
            assert_eq!(constraint.as_deref(), Some("t_name_unique"))
        }
        other => panic!("expected Unique, got {other:?}"),
    }
    assert_eq!(error.code(), Some("23505"));
    assert!(error.to_string().contains("t_name_unique"), "{error}");
    // The source is kept: the server's own message is reachable.
    let source = std::error::Error::source(&error).expect("a source");
    let driver = source
        .downcast_ref::<tokio_postgres::Error>()
        .expect("the driver's error");
    assert!(
        driver
            .as_db_error()
            .unwrap()
            .message()
            .contains("duplicate key"),
        "{driver:?}"
    );
    let error = client
        .execute("UPDATE t SET id = 1 WHERE id = ?1", &[Value::Integer(2)])
        .unwrap_err();
    assert!(
        matches!(&error, Error::Unique { constraint: Some(c), .. } if c == "t_pkey"),
        "{error:?}"
    );
}

#[test]
fn a_serialization_failure_is_busy() {
    let (options, first) = fresh();
    table(&first);
    let second = Client::connect(&options).unwrap();
    first
        .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT v FROM t WHERE id = 1")
        .unwrap();
    second
        .execute("UPDATE t SET v = 2 WHERE id = 1", &[])
        .unwrap();
    let error = first
        .execute("UPDATE t SET v = 3 WHERE id = 1", &[])
        .unwrap_err();
    assert!(matches!(error, Error::Busy(_)), "{error:?}");
    assert_eq!(error.code(), Some("40001"));
    first.batch_execute("ROLLBACK").unwrap();
}

#[test]
fn a_lock_not_available_is_busy() {
    let (options, first) = fresh();
    table(&first);
    let second = Client::connect(&options).unwrap();
    first
        .batch_execute("BEGIN; SELECT * FROM t WHERE id = 1 FOR UPDATE")
        .unwrap();
    let error = second
        .query("SELECT * FROM t WHERE id = 1 FOR UPDATE NOWAIT", &[])
        .unwrap_err();
    assert!(matches!(error, Error::Busy(_)), "{error:?}");
    assert_eq!(error.code(), Some("55P03"));
    first.batch_execute("ROLLBACK").unwrap();
}

#[test]
fn a_deadlock_is_busy_for_the_transaction_the_server_picks() {
    let (options, first) = fresh();
    table(&first);
    let second = Client::connect(&options).unwrap();
    let watcher = Client::connect(&options).unwrap();
    for client in [&first, &second] {
        client
            .batch_execute("SET deadlock_timeout = '100ms'")
            .unwrap();
    }
    first
        .batch_execute("BEGIN; UPDATE t SET v = 1 WHERE id = 1")
        .unwrap();
    second
        .batch_execute("BEGIN; UPDATE t SET v = 1 WHERE id = 2")
        .unwrap();
    let pid = first
        .query_row("SELECT pg_backend_pid()", &[])
        .unwrap()
        .unwrap()[0]
        .clone();
    // The first waits for row 2 on a thread of its own...
    let waiting = std::thread::spawn(move || {
        let result = first.execute("UPDATE t SET v = 2 WHERE id = 2", &[]);
        let _ = first.batch_execute("ROLLBACK");
        result
    });
    // ...and once the server shows it waiting, the second asks for row 1.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let row = watcher
            .query_row(
                "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = ?1::integer",
                std::slice::from_ref(&pid),
            )
            .unwrap();
        if row.is_some_and(|r| r[0] == Value::Integer(1)) {
            break;
        }
        assert!(Instant::now() < deadline, "the first update never waited");
        std::thread::sleep(Duration::from_millis(10));
    }
    let second_result = second.execute("UPDATE t SET v = 2 WHERE id = 1", &[]);
    let _ = second.batch_execute("ROLLBACK");
    let first_result = waiting.join().unwrap();
    let results = [first_result, second_result];
    let busy: Vec<&Error> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(
        busy.len(),
        1,
        "exactly one is chosen as the victim: {results:?}"
    );
    assert!(matches!(busy[0], Error::Busy(_)), "{:?}", busy[0]);
    assert_eq!(busy[0].code(), Some("40P01"));
}

#[test]
fn a_terminated_session_is_lost_and_the_client_knows_it() {
    let (options, victim) = fresh();
    let other = Client::connect(&options).unwrap();
    let pid = victim
        .query_row("SELECT pg_backend_pid()", &[])
        .unwrap()
        .unwrap()[0]
        .clone();
    let terminated = other
        .query_row("SELECT pg_terminate_backend(?1::integer)", &[pid])
        .unwrap()
        .unwrap();
    assert_eq!(terminated[0], Value::Integer(1));
    // The server's FATAL (57P01) may or may not reach the client before the
    // socket closes: either way the next statement reports a lost connection.
    let deadline = Instant::now() + Duration::from_secs(30);
    let error = loop {
        match victim.query_row("SELECT 1", &[]) {
            Err(error) => break error,
            Ok(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(_) => panic!("the terminated session still answers"),
        }
    };
    assert!(matches!(error, Error::Lost(_)), "{error:?}");
    assert!(victim.query_row("SELECT 1", &[]).is_err());
    assert!(victim.is_closed());
}

#[test]
fn no_server_at_the_address_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let options = ConnectOptions::parse(&format!(
        "host={} user=nobody dbname=nothing",
        dir.path().display()
    ))
    .unwrap();
    match Client::connect(&options) {
        Err(error) => assert!(matches!(error, Error::Lost(_)), "{error:?}"),
        Ok(_) => panic!("connected to an empty directory"),
    }
}

#[test]
fn server_codes_of_a_lost_connection_and_a_full_disk_are_sorted() {
    let (_, client) = fresh();
    let raise = |code: &str| {
        client
            .batch_execute(&format!(
                "DO $$ BEGIN RAISE EXCEPTION 'raised' USING ERRCODE = '{code}'; END $$"
            ))
            .unwrap_err()
    };
    let error = raise("53100");
    assert!(matches!(error, Error::DiskFull(_)), "{error:?}");
    let error = raise("08006");
    assert!(matches!(error, Error::Lost(_)), "{error:?}");
    let error = raise("40001");
    assert!(matches!(error, Error::Busy(_)), "{error:?}");
    // The session is still usable: only the statement failed.
    assert_eq!(
        client.query_row("SELECT 1", &[]).unwrap().unwrap()[0],
        Value::Integer(1)
    );
}

#[test]
fn anything_else_is_other_with_its_code_and_source() {
    let (_, client) = fresh();
    let error = client.execute("SELEC 1", &[]).unwrap_err();
    assert!(matches!(error, Error::Other(_)), "{error:?}");
    assert_eq!(error.code(), Some("42601"));
    assert!(error.to_string().contains("syntax error"), "{error}");
    let error = client.execute("SELECT ?0", &[]).unwrap_err();
    assert!(matches!(error, Error::Placeholder { .. }), "{error:?}");
    assert!(error.to_string().contains("out of range"), "{error}");
}
