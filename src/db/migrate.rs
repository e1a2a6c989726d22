//! Schema versions. `schema.sql` is the whole current schema; a new file gets
//! it in one go. A file made by an older binary is brought forward by the steps
//! below, all in one transaction; a file made by a newer binary is refused.
//!
//! Version 6 is a file in incremental auto-vacuum mode (free pages can be
//! handed back to the file system by `PRAGMA incremental_vacuum`, see
//! [`super::vacuum`]). That mode can only be chosen before the first table
//! exists or by rebuilding the file with `VACUUM`, which cannot run inside a
//! transaction: so after the schema transaction, a file not yet in that mode
//! (a new one too: WAL mode has already written its first page) is rebuilt
//! once ([`ensure_incremental_vacuum`]).

use rusqlite::{Connection, TransactionBehavior};

/// The full current schema.
pub const SCHEMA: &str = include_str!("../../schema.sql");

/// The version `schema.sql` describes. Raise it with every schema change and add
/// the step that takes version `CURRENT_VERSION - 1` to it.
pub const CURRENT_VERSION: i64 = 14;

/// Step `i` takes a file from version `i + 1` to `i + 2`.
const STEPS: &[&str] = &[
    include_str!("migrations/0002_workspaces.sql"),
    include_str!("migrations/0003_changes.sql"),
    include_str!("migrations/0004_webhooks.sql"),
    include_str!("migrations/0005_consent.sql"),
    include_str!("migrations/0006_auto_vacuum.sql"),
    include_str!("migrations/0007_list_indexes.sql"),
    include_str!("migrations/0008_synonyms_order.sql"),
    include_str!("migrations/0009_tenant_workspaces.sql"),
    include_str!("migrations/0010_catalog_item_uses.sql"),
    include_str!("migrations/0011_documents_kind_check.sql"),
    include_str!("migrations/0012_location_domains.sql"),
    include_str!("migrations/0013_location_commits.sql"),
    include_str!("migrations/0014_group_commits.sql"),
];

const _: () = assert!(STEPS.len() as i64 == CURRENT_VERSION - 1);

pub fn schema_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Why a data file's schema could not be created or brought forward. The
/// messages are sentences for an administrator.
#[derive(Debug)]
pub enum MigrateError {
    /// SQLite failed while doing `what` ("read the schema version", ...).
    Sql {
        what: &'static str,
        source: rusqlite::Error,
    },
    /// The step to schema version `to` failed.
    Step { to: i64, source: rusqlite::Error },
    /// The file was made by a newer binary; nothing was changed.
    Newer { found: i64 },
    /// The file is an SQLite database, but not a Quayside data file.
    Foreign,
    /// The one-time rebuild into incremental auto-vacuum mode failed.
    Vacuum(rusqlite::Error),
}

impl std::fmt::Display for MigrateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MigrateError::Sql { what, .. } => write!(f, "cannot {what}"),
            MigrateError::Step { to, .. } => write!(f, "migration to version {to} failed"),
            MigrateError::Newer { found } => write!(
                f,
                "this data file has schema version {found}, newer than this binary understands \
                 (version {CURRENT_VERSION}); use a newer quayside binary"
            ),
            MigrateError::Foreign => f.write_str(
                "this file holds an SQLite database that is not a Quayside data file \
                 (it has tables but no Quayside schema version)",
            ),
            MigrateError::Vacuum(_) => f.write_str(
                "cannot rebuild the data file in incremental auto-vacuum mode (VACUUM needs \
                 free disk space as large as the file, and no other process using it)",
            ),
        }
    }
}

impl std::error::Error for MigrateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MigrateError::Sql { source, .. }
            | MigrateError::Step { source, .. }
            | MigrateError::Vacuum(source) => Some(source),
            MigrateError::Newer { .. } | MigrateError::Foreign => None,
        }
    }
}

/// Creates or upgrades the schema, all in one transaction; then puts the file
/// in incremental auto-vacuum mode if it is not yet (version 6).
pub fn migrate(conn: &mut Connection) -> Result<(), MigrateError> {
    migrate_schema(conn)?;
    ensure_incremental_vacuum(conn)
}

/// `PRAGMA auto_vacuum` of a file in incremental mode.
const INCREMENTAL: i64 = 2;

/// Rebuilds the file in incremental auto-vacuum mode unless it is already in
/// it: once per file (a new file costs nothing; an old one is copied whole).
/// Checked on every open, so a rebuild cut short by a crash is simply redone.
pub fn ensure_incremental_vacuum(conn: &Connection) -> Result<(), MigrateError> {
    let mode: i64 = conn
        .query_row("PRAGMA auto_vacuum", [], |row| row.get(0))
        .map_err(|source| MigrateError::Sql {
            what: "read the auto-vacuum mode",
            source,
        })?;
    if mode == INCREMENTAL {
        return Ok(());
    }
    let pages: i64 = conn
        .query_row("PRAGMA page_count", [], |row| row.get(0))
        .unwrap_or(0);
    // A new file (its schema alone is some 80 pages) is rebuilt in an
    // instant; an old one with records deserves a word.
    if pages > 256 {
        log::info!(
            "rebuilding the data file ({pages} pages) in incremental auto-vacuum mode; \
             this happens once"
        );
    }
    conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
        .map_err(MigrateError::Vacuum)
}

/// The schema steps, in one transaction.
fn migrate_schema(conn: &mut Connection) -> Result<(), MigrateError> {
    let sql = |what: &'static str| move |source| MigrateError::Sql { what, source };
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql("start the schema transaction"))?;
    let version = schema_version(&tx).map_err(sql("read the schema version"))?;
    if version > CURRENT_VERSION {
        return Err(MigrateError::Newer { found: version });
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
            .map_err(sql("list the tables"))?;
        if tables > 0 {
            return Err(MigrateError::Foreign);
        }
        tx.execute_batch(SCHEMA).map_err(sql("create the schema"))?;
    } else {
        log::info!(
            "bringing the data file from schema version {version} to {CURRENT_VERSION}; \
             on a large file this can take a while (once)"
        );
        for (step, sql) in STEPS.iter().enumerate().skip((version - 1) as usize) {
            tx.execute_batch(sql).map_err(|source| MigrateError::Step {
                to: step as i64 + 2,
                source,
            })?;
        }
    }
    tx.pragma_update(None, "user_version", CURRENT_VERSION)
        .map_err(sql("record the schema version"))?;
    tx.commit().map_err(sql("commit the schema"))?;
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
        for conn in [&old, &new] {
            assert_eq!(auto_vacuum(conn), INCREMENTAL);
        }
    }

    fn auto_vacuum(conn: &Connection) -> i64 {
        conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0))
            .unwrap()
    }

    /// Brings `conn`, empty, to schema `version` as the releases made it:
    /// the first release's schema, then the steps up to that version.
    fn make_version(conn: &Connection, version: usize) {
        conn.execute_batch(include_str!("../../tests/fixtures/schema-v1.sql"))
            .unwrap();
        for step in &STEPS[..version - 1] {
            conn.execute_batch(step).unwrap();
        }
        conn.pragma_update(None, "user_version", version as i64)
            .unwrap();
    }

    /// An organization `oa` and its workspace `w`, as versions 7 and later
    /// hold them.
    fn a_workspace(conn: &Connection) {
        conn.execute_batch(
            "INSERT INTO organizations (id, name, name_folded, audience, created_at, updated_at)
                 VALUES ('oa', 'A', 'a', 'ta', 0, 0);
             INSERT INTO workspaces (id, client_id, created_at, updated_at, state)
                 VALUES ('w', 'oa', 1, 1, 'active');",
        )
        .unwrap();
    }

    /// The rows of a query of two columns.
    fn pairs<T: rusqlite::types::FromSql>(conn: &Connection, sql: &str) -> Vec<(String, T)> {
        conn.prepare(sql)
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// Version 10: the links of documents to catalog items become a count
    /// of uses per item, the links' table goes.
    #[test]
    fn a_version_9_file_counts_the_uses_of_its_catalog_items() {
        let mut conn = Connection::open_in_memory().unwrap();
        make_version(&conn, 9);
        a_workspace(&conn);
        conn.execute_batch(
            "INSERT INTO catalog_items (id, workspace_id, catalog, name, created_at, updated_at)
                 VALUES ('i1', 'w', 'products', 'P', 1, 1), ('i2', 'w', 'products', 'Q', 1, 1),
                        ('i3', 'w', 'products', 'R', 1, 1);
             INSERT INTO documents (id, workspace_id, kind, body, created_at, updated_at)
                 VALUES ('j1', 'w', 'job', '{}', 1, 1), ('j2', 'w', 'job', '{}', 2, 2);
             INSERT INTO document_refs (document_id, item_id)
                 VALUES ('j1', 'i1'), ('j1', 'i2'), ('j2', 'i1');",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let uses: Vec<(String, i64)> = pairs(
            &conn,
            "SELECT item_id, uses FROM catalog_item_uses ORDER BY 1",
        );
        assert_eq!(uses, vec![("i1".into(), 2), ("i2".into(), 1)]);
        let links: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'document_refs%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(links, 0);
    }

    /// Version 11: the documents' kind is checked without a temporary B-tree,
    /// by the connection that migrated the file and by one that had read the
    /// old schema before; a document of version 10 stays, an unknown kind is
    /// still refused.
    #[test]
    fn a_version_10_file_checks_a_document_s_kind_without_a_temporary_b_tree() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v10.db");
        let mut conn = Connection::open(&path).unwrap();
        make_version(&conn, 10);
        // As a version 10 file is, so that no rebuild moves the cookie.
        conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
            .unwrap();
        a_workspace(&conn);
        conn.execute_batch(
            "INSERT INTO documents (id, workspace_id, kind, body, created_at, updated_at)
                 VALUES ('j1', 'w', 'job', '{}', 1, 1);",
        )
        .unwrap();
        let other = Connection::open(&path).unwrap();
        let insert = "INSERT INTO documents (id, workspace_id, kind, job_id, body, created_at, \
                      updated_at) VALUES (?1, 'w', ?2, 'j1', '{}', 2, 2)";
        let temporary_b_trees = |c: &Connection| -> usize {
            c.prepare(&format!("EXPLAIN {insert}"))
                .unwrap()
                .query_map(["x", "timelog"], |r| r.get::<_, String>(1))
                .unwrap()
                .filter(|op| op.as_deref() == Ok("OpenEphemeral"))
                .count()
        };
        assert_eq!(temporary_b_trees(&other), 1, "version 10 builds one");
        migrate(&mut conn).unwrap();
        assert_eq!(schema_version(&conn).unwrap(), CURRENT_VERSION);
        for (c, id) in [(&conn, "q1"), (&other, "q2")] {
            // A write first: the other connection reads the schema again
            // when it finds the cookie moved.
            c.execute(insert, [id, "qualityResult"]).unwrap();
            let refused = c.execute(insert, ["bad", "certificate"]).unwrap_err();
            assert!(refused.to_string().contains("CHECK"), "{refused}");
            assert_eq!(temporary_b_trees(c), 0, "{id}");
        }
        let kinds: Vec<(String, String)> =
            pairs(&conn, "SELECT id, kind FROM documents ORDER BY id");
        assert_eq!(
            kinds,
            [
                ("j1", "job"),
                ("q1", "qualityResult"),
                ("q2", "qualityResult")
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }

    /// Version 6: a file of version 5, with its rows and without auto-vacuum,
    /// is rebuilt once in incremental mode; its rows stay, and the pages a
    /// delete frees can then be handed back.
    /// Version 7: a tenant's existing workspaces are in `workspace_members`,
    /// by the rule of who counts: an invited party that has not accepted is
    /// not a member; its jobs keep their bodies.
    #[test]
    fn a_version_6_file_gets_the_members_of_its_workspaces() {
        let mut conn = Connection::open_in_memory().unwrap();
        make_version(&conn, 6);
        conn.execute_batch(
            "INSERT INTO organizations (id, name, name_folded, audience, created_at, updated_at)
                 VALUES ('oa', 'A', 'a', 'ta', 0, 0), ('ob', 'B', 'b', 'tb', 0, 0);
             INSERT INTO workspaces (id, client_id, vendor_id, created_at, updated_at, state, invited)
                 VALUES ('both', 'oa', 'ob', 1, 1, 'active', 'vendor'),
                        ('asked', 'oa', 'ob', 2, 2, 'pending', 'vendor'),
                        ('own', 'oa', NULL, 3, 3, 'active', NULL);
             INSERT INTO documents (id, workspace_id, kind, body, created_at, updated_at)
                 VALUES ('j', 'both', 'job', '{\"status\":\"active\"}', 1, 1);",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let members: Vec<(String, String)> = pairs(
            &conn,
            "SELECT tenant, workspace_id FROM workspace_members ORDER BY 2, 1",
        );
        let pair = |t: &str, w: &str| (t.to_string(), w.to_string());
        assert_eq!(
            members,
            vec![
                pair("ta", "asked"),
                pair("ta", "both"),
                pair("tb", "both"),
                pair("ta", "own"),
            ]
        );
        let status: String = conn
            .query_row(
                "SELECT json_extract(body, '$.status') FROM documents INDEXED BY \
                 documents_jobs_status WHERE workspace_id = 'both' AND kind = 'job' \
                 AND json_extract(body, '$.status') = 'active'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(status, "active");
        // The indexes the workspace lists name exist under those names on a
        // migrated file too.
        let listed: i64 = conn
            .query_row(
                "SELECT count(*) FROM workspace_members m LEFT JOIN workspaces w \
                 INDEXED BY sqlite_autoindex_workspaces_1 ON w.id = m.workspace_id \
                 WHERE m.tenant = 'ta'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(listed, 3);
        // Version 9 counted them.
        let counted: i64 = conn
            .query_row(
                "SELECT workspaces FROM tenant_workspaces WHERE tenant = 'ta'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(counted, listed);
        conn.prepare("SELECT id FROM workspaces w INDEXED BY workspaces_created")
            .unwrap();
    }

    #[test]
    fn a_version_5_file_is_rebuilt_in_incremental_auto_vacuum_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v5.db");
        let mut conn = crate::db::open_connection(&path).unwrap();
        make_version(&conn, 5);
        conn.execute_batch(
            "INSERT INTO blobs (id, created_at) VALUES ('b', 1);
             INSERT INTO blob_chunks (blob_id, seq, data) VALUES ('b', 0, zeroblob(1048576));",
        )
        .unwrap();
        assert_eq!(auto_vacuum(&conn), 0);
        migrate(&mut conn).unwrap();
        assert_eq!(schema_version(&conn).unwrap(), CURRENT_VERSION);
        assert_eq!(auto_vacuum(&conn), INCREMENTAL);
        let stored: i64 = conn
            .query_row("SELECT length(data) FROM blob_chunks", [], |r| r.get(0))
            .unwrap();
        assert_eq!(stored, 1048576);
        conn.execute_batch("DELETE FROM blobs").unwrap();
        crate::db::vacuum::give_back(&conn, 1_000_000).unwrap();
        let free: i64 = conn
            .query_row("PRAGMA freelist_count", [], |r| r.get(0))
            .unwrap();
        assert_eq!(free, 0);
        // Opening again changes nothing.
        migrate(&mut conn).unwrap();
    }

    /// Party consent (version 5) leaves the workspaces of a version 4 file as
    /// they were: active, nobody invited, both parties' tenants members, even
    /// when the parties belong to two tenants.
    #[test]
    fn workspaces_made_before_party_consent_stay_as_they_were() {
        let mut conn = Connection::open_in_memory().unwrap();
        make_version(&conn, 4);
        conn.execute_batch(
            "INSERT INTO organizations (id, name, name_folded, audience, created_at, updated_at) \
             VALUES ('c', 'C', 'c', 'tenant-c', 1, 1), ('v', 'V', 'v', 'tenant-v', 1, 1);
             INSERT INTO workspaces (id, client_id, vendor_id, created_at, updated_at) \
             VALUES ('w', 'c', 'v', 1, 1);",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        assert_eq!(schema_version(&conn).unwrap(), CURRENT_VERSION);
        let conn = crate::db::Conn::Sqlite(conn);
        let ws = crate::workspaces::store::get(&conn, "w").unwrap().unwrap();
        assert_eq!(ws.state, crate::workspaces::State::Active);
        assert_eq!(ws.invited, None);
        assert_eq!(ws.members(), (Some("tenant-c"), Some("tenant-v")));
        assert_eq!((ws.created_at, ws.updated_at), (1, 1));
    }

    #[test]
    fn a_failed_step_names_its_version_and_keeps_the_sqlite_error() {
        let mut conn = Connection::open_in_memory().unwrap();
        // A version 1 file where the step to version 2 cannot create its table.
        conn.execute_batch("CREATE TABLE organizations (x)")
            .unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(matches!(err, MigrateError::Step { to: 2, .. }), "{err:?}");
        let line = crate::error::chain(&err);
        assert!(
            line.starts_with("migration to version 2 failed: table organizations already exists"),
            "{line}"
        );
        assert!(
            std::error::Error::source(&err)
                .and_then(|e| e.downcast_ref::<rusqlite::Error>())
                .is_some()
        );
        // The whole step was rolled back.
        assert_eq!(schema_version(&conn).unwrap(), 1);
    }

    #[test]
    fn newer_file_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", CURRENT_VERSION + 1)
            .unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(
            matches!(err, MigrateError::Newer { found } if found == CURRENT_VERSION + 1),
            "{err:?}"
        );
        assert!(err.to_string().contains("newer"), "{err}");
    }

    #[test]
    fn foreign_database_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (x)").unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(matches!(err, MigrateError::Foreign), "{err:?}");
        assert!(err.to_string().contains("not a Quayside"), "{err}");
    }
}
