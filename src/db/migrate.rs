//! Schema versions. `schema.sql` is the whole current schema; a new file gets
//! it in one go. A file made by an older binary is brought forward by the steps
//! below, all in one transaction; a file made by a newer binary is refused.

use rusqlite::{Connection, TransactionBehavior};

/// The full current schema.
pub const SCHEMA: &str = include_str!("../../schema.sql");

/// The version `schema.sql` describes. Raise it with every schema change and add
/// the step that takes version `CURRENT_VERSION - 1` to it.
pub const CURRENT_VERSION: i64 = 2;

/// Step `i` takes a file from version `i + 1` to `i + 2`.
const STEPS: &[&str] = &[include_str!("migrations/0002_workspaces.sql")];

const _: () = assert!(STEPS.len() as i64 == CURRENT_VERSION - 1);

pub fn schema_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Creates or upgrades the schema. Errors are sentences for an administrator.
pub fn migrate(conn: &mut Connection) -> Result<(), String> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| format!("cannot start the schema transaction: {e}"))?;
    let version =
        schema_version(&tx).map_err(|e| format!("cannot read the schema version: {e}"))?;
    if version > CURRENT_VERSION {
        return Err(format!(
            "this data file has schema version {version}, newer than this binary understands \
             (version {CURRENT_VERSION}); use a newer quayside binary"
        ));
    }
    if version == CURRENT_VERSION {
        return Ok(());
    }
    if version == 0 {
        let tables: i64 = tx
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
                [],
                |row| row.get(0),
            )
            .map_err(|e| e.to_string())?;
        if tables > 0 {
            return Err(
                "this file holds an SQLite database that is not a Quayside data file \
                 (it has tables but no Quayside schema version)"
                    .into(),
            );
        }
        tx.execute_batch(SCHEMA)
            .map_err(|e| format!("cannot create the schema: {e}"))?;
    } else {
        for (step, sql) in STEPS.iter().enumerate().skip((version - 1) as usize) {
            tx.execute_batch(sql)
                .map_err(|e| format!("migration to version {} failed: {e}", step as i64 + 2))?;
        }
    }
    tx.pragma_update(None, "user_version", CURRENT_VERSION)
        .map_err(|e| e.to_string())?;
    tx.commit()
        .map_err(|e| format!("cannot commit the schema: {e}"))?;
    if version > 0 {
        log::info!("migrated the data file from schema version {version} to {CURRENT_VERSION}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_file_gets_current_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        assert_eq!(schema_version(&conn).unwrap(), CURRENT_VERSION);
        // Running again is a no-op.
        migrate(&mut conn).unwrap();
    }

    /// A file made by the first release, migrated step by step, must end with
    /// exactly the schema a new file gets from `schema.sql`.
    #[test]
    fn migrated_v1_file_matches_a_new_file() {
        let mut old = Connection::open_in_memory().unwrap();
        old.execute_batch(include_str!("../../tests/fixtures/schema-v1.sql"))
            .unwrap();
        old.pragma_update(None, "user_version", 1).unwrap();
        migrate(&mut old).unwrap();
        let mut new = Connection::open_in_memory().unwrap();
        migrate(&mut new).unwrap();
        let schema = |c: &Connection| -> Vec<(String, String)> {
            c.prepare("SELECT name, sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY name")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(schema(&old), schema(&new));
        assert_eq!(schema_version(&old).unwrap(), CURRENT_VERSION);
    }

    #[test]
    fn newer_file_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", CURRENT_VERSION + 1)
            .unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(err.contains("newer"), "{err}");
    }

    #[test]
    fn foreign_database_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (x)").unwrap();
        assert!(migrate(&mut conn).unwrap_err().contains("not a Quayside"));
    }
}
