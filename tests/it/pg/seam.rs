//! The service's own store code run over the seam's PostgreSQL arm
//! (`db::Conn::Pg`) on a real database with the PostgreSQL schema: the same
//! functions the routes call on SQLite, with their parameters, rows, errors
//! and `RETURNING`.

use quayside::auth::{accounts, password};
use quayside::db::pg::{Client, apply_schema};
use quayside::db::{Conn, OptionalExtension, params};
use quayside::locations::Catalog;
use quayside::locations::store as locations;
use quayside::organizations::{Organization, store as organizations};

use super::{fresh, port};

/// A fresh database with the schema, behind the seam.
fn conn() -> Conn {
    let (_, client): (_, Client) = fresh();
    apply_schema(&client).expect("apply the schema");
    Conn::Pg(Box::new(client))
}

fn org(id: &str, name: &str) -> Organization {
    Organization {
        id: id.into(),
        name: name.into(),
        audience: "tenant-a".into(),
        category: None,
        created_at: 1,
        updated_at: 2,
    }
}

#[test]
fn organizations_are_stored_read_and_refused_as_on_sqlite() {
    let conn = conn();
    organizations::insert(&conn, &org("o1", "Acme Shipping")).unwrap();
    let read = organizations::get(&conn, "o1").unwrap().expect("stored");
    assert_eq!(read.name, "Acme Shipping");
    assert_eq!((read.created_at, read.updated_at), (1, 2));
    assert_eq!(read.category, None);
    // The same name, folded, is the store's own 409.
    let err = organizations::insert(&conn, &org("o2", "ACME shipping")).unwrap_err();
    assert_eq!((err.status(), err.code()), (409, "duplicate_name"));
    assert!(organizations::get(&conn, "nope").unwrap().is_none());
}

#[test]
fn an_account_insert_answers_its_new_id() {
    let conn = conn();
    let hash = password::hash("a long enough password", 1000);
    let first = accounts::insert(&conn, "alice", "tenant-a", true, &hash, 5).unwrap();
    let second = accounts::insert(&conn, "bob", "tenant-b", false, &hash, 6).unwrap();
    assert_eq!(second, first + 1);
    let alice = accounts::find(&conn, "alice").unwrap().expect("alice");
    assert_eq!((alice.id, alice.is_admin), (first, true));
    assert_eq!(alice.password.hash, hash.hash, "bytes round trip");
    assert_eq!(accounts::count(&conn).unwrap(), 2);
    assert!(accounts::remove(&conn, "bob").unwrap());
    assert!(!accounts::remove(&conn, "bob").unwrap());
}

#[test]
fn a_location_upsert_creates_then_updates_then_is_unchanged() {
    let conn = conn();
    let mut fields = port("Rotterdam");
    let first = locations::upsert(&conn, Catalog::Ports, "NLRTM", &fields, "alice", 10).unwrap();
    fields.general_comments = Some("deep water".into());
    let second = locations::upsert(&conn, Catalog::Ports, "NLRTM", &fields, "alice", 20).unwrap();
    let third = locations::upsert(&conn, Catalog::Ports, "NLRTM", &fields, "alice", 30).unwrap();
    assert_eq!(
        format!("{first:?} {second:?} {third:?}"),
        "Created Updated Unchanged"
    );
    let stored = locations::get(&conn, Catalog::Ports, "NLRTM")
        .unwrap()
        .expect("stored");
    assert_eq!(
        stored.fields.general_comments.as_deref(),
        Some("deep water")
    );
    assert_eq!(stored.fields.latitude_deg, Some(51));
}

#[test]
fn no_row_is_none_and_a_failed_statement_keeps_its_source() {
    let conn = conn();
    let none: Option<i64> = conn
        .query_row("SELECT 1 FROM accounts WHERE username = ?1", ["x"], |row| {
            row.get(0)
        })
        .optional()
        .unwrap();
    assert_eq!(none, None);
    let err = conn
        .execute("INSERT INTO no_such_table (x) VALUES (?1)", params![1])
        .unwrap_err();
    assert!(err.to_string().contains("no_such_table"), "{err}");
    assert!(std::error::Error::source(&err).is_some());
    // Parameters of every storage class go in and come out as they were.
    let (i, x, t, b, n): (i64, f64, String, Vec<u8>, Option<String>) = conn
        .query_row(
            "SELECT ?1::bigint, ?2::float8, ?3::text, ?4::bytea, ?5::text",
            params![7i64, 2.5f64, "text", vec![0u8, 255], None::<String>],
            |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                ))
            },
        )
        .unwrap();
    assert_eq!(
        (i, x, t.as_str(), b, n),
        (7, 2.5, "text", vec![0, 255], None)
    );
}
