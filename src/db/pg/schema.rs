//! The schema on PostgreSQL: `pg/schema.sql`, the translation of the SQLite
//! `schema.sql` at the same version, and the version table `quayside_meta`
//! (SQLite keeps its version in `PRAGMA user_version`). A test
//! (`tests/it/pg/schema.rs`) holds the two schemas to the same tables,
//! columns and index names.

use super::error::{Error, Result};
use super::{Client, Row};
use crate::db::migrate::CURRENT_VERSION;
use crate::db::value::Value;

/// The whole current schema, for a new database: `schema.sql`, and the
/// groups' counting triggers that step 14 also makes (`group_commits.sql`).
pub const SCHEMA: &str = concat!(
    include_str!("schema.sql"),
    include_str!("group_commits.sql")
);

/// Tables of the running servers' shared state, not of the data: made by
/// every `apply_schema` where missing, not versioned, not copied by
/// `migrate`. `login_failures`: the recent failed logins per (username,
/// client address) that every server process counts (`auth::lockout`),
/// UNLOGGED as the lockout was memory (a crash of the database clears it,
/// as a restart of the one server did).
pub const SHARED_STATE: &str = "CREATE UNLOGGED TABLE IF NOT EXISTS login_failures (
    username text   NOT NULL,
    source   text   NOT NULL,
    at       bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS login_failures_pair ON login_failures (username, source, at)";

/// The first version a PostgreSQL database was made at (its schema began
/// with the engine), and the steps after it: step `i` takes a database from
/// version `FIRST_VERSION + i` to the next. A step is the SQLite step's text
/// where both engines take it.
pub const FIRST_VERSION: i64 = 7;
const STEPS: &[&str] = &[
    include_str!("../migrations/0008_synonyms_order.sql"),
    TENANT_WORKSPACES,
    CATALOG_ITEM_USES,
    // Version 11 restates a CHECK for SQLite's sake
    // (`0011_documents_kind_check.sql`); nothing changes on PostgreSQL.
    "SELECT 1",
    LOCATION_DOMAINS,
    LOCATION_COMMITS,
    GROUP_COMMITS,
];

/// Version 14, PostgreSQL's alone (SQLite's `0014_group_commits.sql` changes
/// nothing: its writer's row hook sees which groups each commit changes): the
/// workspaces and the sessions get a count of their own, as the locations
/// have since version 13, and one trigger function serves the three
/// (`group_commits.sql`), in place of the locations' own.
const GROUP_COMMITS: &str = concat!(
    "ALTER TABLE change_log\n",
    "    ADD COLUMN workspace_commits bigint NOT NULL DEFAULT 0,\n",
    "    ADD COLUMN session_commits bigint NOT NULL DEFAULT 0;\n",
    "DROP TRIGGER locations_count ON locations;\n",
    "DROP FUNCTION quayside_count_location();\n",
    include_str!("group_commits.sql")
);

/// Version 13, PostgreSQL's alone (SQLite's `0013_location_commits.sql`
/// changes nothing: its writer's row hook sees which commits change a
/// location): the count of the transactions that changed a location, kept
/// by a trigger on the table, which the read cache compares instead of every
/// commit (`Db::same`). Step 14 replaces its function and trigger
/// (`location_commits.sql`) with the groups' (`group_commits.sql`).
const LOCATION_COMMITS: &str = concat!(
    "ALTER TABLE change_log ADD COLUMN location_commits bigint NOT NULL DEFAULT 0;\n",
    include_str!("location_commits.sql")
);

/// Version 12, PostgreSQL's alone (SQLite's `0012_location_domains.sql`
/// changes nothing): the CHECKs on the locations' catalog, hemispheres and
/// status become domains, which PostgreSQL keeps parsed, where it parses a
/// table's CHECKs again for every statement that writes a row (a PUT of a
/// port is one: 1.09x its rate, `docs/design/postgresql.md` section 15).
/// The column changes rewrite the table, which holds at most the UN/LOCODE
/// list and the ports clients added, and drop the columns' statistics: the
/// step takes them again, or the planner would guess a country's ports at a
/// handful, and sort every page of a search (measured: half the rate) until
/// autovacuum next analyzed the table, which a rewrite does not prompt.
const LOCATION_DOMAINS: &str = "CREATE DOMAIN location_catalog AS text
    CHECK (VALUE IN ('ports', 'inland_facilities'));
CREATE DOMAIN north_south AS text CHECK (VALUE IN ('N', 'S'));
CREATE DOMAIN east_west AS text CHECK (VALUE IN ('E', 'W'));
CREATE DOMAIN location_status AS text CHECK (VALUE IN ('ACTIVE', 'INACTIVE'));
ALTER TABLE locations
    DROP CONSTRAINT locations_catalog_check,
    DROP CONSTRAINT locations_latitude_ns_check,
    DROP CONSTRAINT locations_longitude_we_check,
    DROP CONSTRAINT locations_status_code_check,
    ALTER COLUMN catalog TYPE location_catalog,
    ALTER COLUMN latitude_ns TYPE north_south,
    ALTER COLUMN longitude_we TYPE east_west,
    ALTER COLUMN status_code TYPE location_status;
ANALYZE locations;";

/// Version 9 (SQLite's `0009_tenant_workspaces.sql`) with PostgreSQL's types,
/// and the commit-counting trigger that `schema.sql` gives every table.
const TENANT_WORKSPACES: &str = "CREATE TABLE tenant_workspaces (
    tenant     text    PRIMARY KEY,
    workspaces bigint  NOT NULL CHECK (workspaces >= 0)
);
INSERT INTO tenant_workspaces (tenant, workspaces)
    SELECT tenant, count(*) FROM workspace_members GROUP BY tenant;
CREATE TRIGGER quayside_count BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON tenant_workspaces FOR EACH STATEMENT EXECUTE FUNCTION quayside_count_commit();";

/// Version 10 (SQLite's `0010_catalog_item_uses.sql`) with PostgreSQL's
/// types, and the commit-counting trigger.
const CATALOG_ITEM_USES: &str = "CREATE TABLE catalog_item_uses (
    item_id text   PRIMARY KEY REFERENCES catalog_items (id) ON DELETE CASCADE,
    uses    bigint NOT NULL CHECK (uses >= 0)
);
INSERT INTO catalog_item_uses (item_id, uses)
    SELECT item_id, count(*) FROM document_refs GROUP BY item_id;
DROP TABLE document_refs;
CREATE TRIGGER quayside_count BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON catalog_item_uses FOR EACH STATEMENT EXECUTE FUNCTION quayside_count_commit();";

const _: () = assert!(FIRST_VERSION + STEPS.len() as i64 == CURRENT_VERSION);

/// The advisory lock `apply_schema` holds for its transaction, so that
/// processes starting together create the schema once.
const SCHEMA_LOCK: &str = "SELECT pg_advisory_xact_lock(hashtext('quayside.schema'))";

/// The schema version the database holds, `None` if it has no version table.
pub fn schema_version(client: &Client) -> Result<Option<i64>> {
    let exists = client.query_row("SELECT to_regclass('quayside_meta') IS NOT NULL", &[])?;
    if exists.as_ref().map(|row| &row[0]) != Some(&Value::Integer(1)) {
        return Ok(None);
    }
    let row = client.query_row("SELECT schema_version FROM quayside_meta", &[])?;
    Ok(row.as_ref().and_then(|row| row[0].as_i64()))
}

/// Creates the schema in an empty database, or brings an older one forward
/// by [`STEPS`], in one transaction under an advisory lock; a database
/// already at this version is left alone. Refuses a database whose
/// collation is not C, one with tables but no version (not Quayside's), one
/// newer than this binary, and one older than [`FIRST_VERSION`].
pub fn apply_schema(client: &Client) -> Result<()> {
    client.transaction(|client| {
        client.execute(SCHEMA_LOCK, &[])?;
        client.check_collation()?;
        let applied = match schema_version(client)? {
            Some(CURRENT_VERSION) => Ok(()),
            Some(found) if found > CURRENT_VERSION => Err(Error::Newer { found }),
            Some(found) if found >= FIRST_VERSION => {
                for step in &STEPS[(found - FIRST_VERSION) as usize..] {
                    client.batch_execute(step)?;
                }
                client.execute(
                    "UPDATE quayside_meta SET schema_version = ?1",
                    &[Value::Integer(CURRENT_VERSION)],
                )?;
                log::info!("brought the database from schema version {found} to {CURRENT_VERSION}");
                Ok(())
            }
            Some(found) => Err(Error::Unsupported {
                found,
                first: FIRST_VERSION,
            }),
            None => {
                let tables = client.query_row(
                    "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()",
                    &[],
                )?;
                if tables.as_ref().and_then(|row: &Row| row[0].as_i64()) != Some(0) {
                    return Err(Error::Foreign);
                }
                client.batch_execute(SCHEMA)?;
                client.execute(
                    "INSERT INTO quayside_meta (id, schema_version) VALUES (1, ?1)",
                    &[Value::Integer(CURRENT_VERSION)],
                )?;
                Ok(())
            }
        };
        applied?;
        // Checked first: `IF NOT EXISTS` on a table that exists sends a
        // NOTICE, which the driver logs at every start.
        let missing = client.query_row("SELECT to_regclass('login_failures') IS NULL", &[])?;
        if missing.as_ref().map(|row| &row[0]) == Some(&Value::Integer(1)) {
            client.batch_execute(SHARED_STATE)?;
        }
        Ok(())
    })
}
