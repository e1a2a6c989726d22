//! `Value` to and from PostgreSQL's types, through real columns.

use quayside::db::pg::Error;
use quayside::db::value::Value;

use super::fresh;

fn text(s: &str) -> Value {
    Value::Text(s.into())
}

#[test]
fn every_mapped_type_stores_and_reads_back() {
    let (_, client) = fresh();
    client
        .batch_execute(
            "CREATE TABLE t (
                 i8 bigint, i4 integer, i2 smallint, f8 double precision, f4 real,
                 tx text, vc varchar(20), js json, jb jsonb, by bytea, fl boolean
             )",
        )
        .unwrap();
    let insert = "INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
    let rows = [
        [
            Value::Integer(i64::MIN),
            Value::Integer(i64::from(i32::MAX)),
            Value::Integer(-32768),
            Value::Real(-1.5e300),
            Value::Real(0.25),
            text("it's ✓"),
            text(""),
            text(r#"{"b":1, "a":[true,null]}"#),
            text(r#"{"b":1, "a":[true,null]}"#),
            Value::Blob(vec![0, 1, 255, 0]),
            Value::Integer(1),
        ],
        [
            Value::Integer(i64::MAX),
            Value::Integer(i64::from(i32::MIN)),
            Value::Integer(7),
            // An integer into a real column is converted, as SQLite does.
            Value::Integer(3),
            Value::Integer(-2),
            text("x"),
            text("y"),
            text("[]"),
            text("null"),
            Value::Blob(Vec::new()),
            Value::Integer(0),
        ],
        std::array::from_fn(|_| Value::Null),
    ];
    for row in &rows {
        assert_eq!(client.execute(insert, row).unwrap(), 1);
    }
    let read = client
        .query("SELECT * FROM t ORDER BY i8 NULLS LAST", &[])
        .unwrap();
    let values: Vec<Vec<Value>> = read.into_iter().map(|r| r.into_values()).collect();
    assert_eq!(
        values[0],
        [
            Value::Integer(i64::MIN),
            Value::Integer(i64::from(i32::MAX)),
            Value::Integer(-32768),
            Value::Real(-1.5e300),
            Value::Real(0.25),
            text("it's ✓"),
            text(""),
            // json keeps the text as given; jsonb normalizes it.
            text(r#"{"b":1, "a":[true,null]}"#),
            text(r#"{"a": [true, null], "b": 1}"#),
            Value::Blob(vec![0, 1, 255, 0]),
            Value::Integer(1),
        ]
    );
    assert_eq!(
        values[1],
        [
            Value::Integer(i64::MAX),
            Value::Integer(i64::from(i32::MIN)),
            Value::Integer(7),
            Value::Real(3.0),
            Value::Real(-2.0),
            text("x"),
            text("y"),
            text("[]"),
            text("null"),
            Value::Blob(Vec::new()),
            Value::Integer(0),
        ]
    );
    assert_eq!(values[2], vec![Value::Null; 11]);
}

#[test]
fn expressions_read_as_values_booleans_as_zero_or_one() {
    let (_, client) = fresh();
    let row = client
        .query_row(
            "SELECT 1 < 2, 2 < 1, NULL::boolean, 'pg_class'::regclass::oid, \
             relkind, relname, pg_sleep(0), 2.5::float4, 'x'::char(3) \
             FROM pg_class WHERE relname = 'pg_class'",
            &[],
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        row.values(),
        [
            Value::Integer(1),
            Value::Integer(0),
            Value::Null,
            Value::Integer(1259),
            text("r"),
            text("pg_class"),
            Value::Null,
            Value::Real(2.5),
            text("x  "),
        ]
    );
    // A flag binds to a boolean parameter.
    let row = client
        .query_row(
            "SELECT NOT ?1::boolean, ?2::boolean",
            &[Value::Integer(1), Value::Integer(0)],
        )
        .unwrap()
        .unwrap();
    assert_eq!(row.values(), [Value::Integer(0), Value::Integer(0)]);
}

#[test]
fn values_that_do_not_fit_are_refused_with_the_types_named() {
    let (_, client) = fresh();
    client
        .batch_execute("CREATE TABLE t (i4 integer, i8 bigint, by bytea, fl boolean)")
        .unwrap();
    let refused = |sql: &str, value: Value, expected: &str| {
        let error = client.execute(sql, &[value]).unwrap_err();
        assert!(matches!(error, Error::Other(_)), "{error:?}");
        let chain = format!("{error} / {:?}", std::error::Error::source(&error));
        assert!(chain.contains(expected), "{sql}: {chain}");
    };
    refused(
        "INSERT INTO t (i4) VALUES (?1)",
        Value::Integer(1 << 40),
        "out of range for integer",
    );
    refused(
        "INSERT INTO t (i8) VALUES (?1)",
        Value::Real(1.5),
        "cannot bind real to a parameter of type int8",
    );
    refused(
        "INSERT INTO t (by) VALUES (?1)",
        text("x"),
        "cannot bind text to a parameter of type bytea",
    );
    refused(
        "INSERT INTO t (fl) VALUES (?1)",
        Value::Integer(2),
        "2 is not a flag",
    );
    let count = client
        .query_row("SELECT count(*) FROM t", &[])
        .unwrap()
        .unwrap();
    assert_eq!(count[0], Value::Integer(0));
    // A result column of an unmapped type names it and says what to do.
    let error = client.query("SELECT 1.5::numeric", &[]).unwrap_err();
    let chain = format!("{error} / {:?}", std::error::Error::source(&error));
    assert!(
        chain.contains("numeric are not mapped") && chain.contains("cast it"),
        "{chain}"
    );
}
