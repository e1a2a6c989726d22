//! `pg/schema.sql` against the SQLite schema the real code creates, and
//! `apply_schema`'s version table and advisory lock.

use std::collections::BTreeMap;

use quayside::db::migrate::CURRENT_VERSION;
use quayside::db::pg::{Client, Error, apply_schema, schema::schema_version};
use quayside::db::value::Value;

use super::{cluster, fresh};

/// One engine's schema: per table, its columns in order (name, type as the
/// other engine spells it, NOT NULL); per index, its table and uniqueness.
#[derive(Debug, PartialEq)]
struct Shape {
    tables: BTreeMap<String, Vec<(String, String, bool)>>,
    indexes: BTreeMap<String, (String, bool)>,
}

/// The columns that hold JSON: TEXT with CHECK (json_valid(...)) on SQLite,
/// `json` on PostgreSQL.
const JSON_COLUMNS: &[(&str, &str)] = &[("documents", "body"), ("webhooks", "event_types")];

/// The SQLite schema of a new data file, made by the code `serve` runs.
fn sqlite_shape() -> Shape {
    let dir = tempfile::tempdir().unwrap();
    let conn = quayside::db::open_and_migrate(&dir.path().join("data.db")).unwrap();
    let strings = |sql: &str, param: &str| -> Vec<Vec<rusqlite::types::Value>> {
        let mut statement = conn.prepare(sql).unwrap();
        let count = statement.column_count();
        statement
            .query_map([param], |row| {
                (0..count)
                    .map(|i| row.get(i))
                    .collect::<Result<Vec<_>, _>>()
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let text = |v: &rusqlite::types::Value| match v {
        rusqlite::types::Value::Text(s) => s.clone(),
        other => panic!("not text: {other:?}"),
    };
    let int = |v: &rusqlite::types::Value| match v {
        rusqlite::types::Value::Integer(i) => *i,
        other => panic!("not an integer: {other:?}"),
    };
    let mut shape = Shape {
        tables: BTreeMap::new(),
        indexes: BTreeMap::new(),
    };
    // sqlite_sequence (AUTOINCREMENT) and sqlite_stat* are SQLite's own.
    let tables = strings(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%' \
         AND name <> ?1",
        "",
    );
    for table in tables.iter().map(|r| text(&r[0])) {
        let columns = strings(
            "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1) ORDER BY cid",
            &table,
        )
        .iter()
        .map(|r| {
            let name = text(&r[0]);
            let is_json = JSON_COLUMNS.contains(&(table.as_str(), name.as_str()));
            let pg_type = match (text(&r[1]).as_str(), is_json) {
                ("TEXT", true) => "json",
                ("TEXT", false) => "text",
                ("INTEGER", _) => "bigint",
                ("REAL", _) => "double precision",
                ("BLOB", _) => "bytea",
                (other, _) => panic!("{table}.{name}: SQLite type {other} has no mapping"),
            };
            // A primary key column is NOT NULL on PostgreSQL; SQLite lets
            // one of a rowid table hold NULL (a legacy quirk) unless declared.
            let not_null = int(&r[2]) == 1 || int(&r[3]) > 0;
            (name, pg_type.to_owned(), not_null)
        })
        .collect();
        for index in strings(
            "SELECT name, \"unique\" FROM pragma_index_list(?1) \
             WHERE name NOT LIKE 'sqlite_autoindex_%'",
            &table,
        ) {
            shape
                .indexes
                .insert(text(&index[0]), (table.clone(), int(&index[1]) == 1));
        }
        shape.tables.insert(table, columns);
    }
    shape
}

/// Columns only the PostgreSQL schema has: the writers' row lock of
/// `change_log` (docs/design/postgresql.md 3.4), its `head` the last
/// sequence appended and `commits` the writing transactions.
const PG_ONLY_COLUMNS: &[(&str, &str)] = &[
    ("change_log", "head"),
    ("change_log", "commits"),
    ("change_log", "location_commits"),
    ("change_log", "workspace_commits"),
    ("change_log", "session_commits"),
];

/// The PostgreSQL schema `apply_schema` made, less the version table, the
/// servers' shared state (`login_failures`, `pg::schema::SHARED_STATE`) and
/// [`PG_ONLY_COLUMNS`].
fn pg_shape(client: &Client) -> Shape {
    let text = |v: &Value| v.as_str().expect("text").to_owned();
    let mut shape = Shape {
        tables: BTreeMap::new(),
        indexes: BTreeMap::new(),
    };
    let tables = client
        .query(
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' \
             AND table_name NOT IN ('quayside_meta', 'login_failures')",
            &[],
        )
        .unwrap();
    for table in tables.iter().map(|r| text(&r[0])) {
        let columns = client
            .query(
                "SELECT column_name::text, data_type::text, is_nullable::text = 'NO' \
                 FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = ?1 \
                 ORDER BY ordinal_position",
                &[Value::Text(table.clone())],
            )
            .unwrap()
            .iter()
            .map(|r| (text(&r[0]), text(&r[1]), r[2] == Value::Integer(1)))
            .filter(|(name, _, _)| !PG_ONLY_COLUMNS.contains(&(table.as_str(), name.as_str())))
            .collect();
        shape.tables.insert(table, columns);
    }
    // The indexes behind PRIMARY KEY and UNIQUE constraints are PostgreSQL's
    // twins of sqlite_autoindex_*: implicit, and named by each engine.
    let indexes = client
        .query(
            "SELECT i.relname::text, t.relname::text, x.indisunique \
             FROM pg_index x \
             JOIN pg_class i ON i.oid = x.indexrelid \
             JOIN pg_class t ON t.oid = x.indrelid \
             WHERE t.relnamespace = current_schema()::regnamespace \
             AND t.relname NOT IN ('quayside_meta', 'login_failures') \
             AND NOT EXISTS (SELECT 1 FROM pg_constraint c \
                             WHERE c.conindid = x.indexrelid AND c.conrelid = x.indrelid \
                             AND c.contype IN ('p', 'u'))",
            &[],
        )
        .unwrap();
    for index in indexes {
        shape.indexes.insert(
            text(&index[0]),
            (text(&index[1]), index[2] == Value::Integer(1)),
        );
    }
    shape
}

/// The two schemas define the same tables, the same columns in the same
/// order (types mapped, NOT NULL alike) and the same indexes (names, tables,
/// uniqueness). The deliberate differences, each left out of the comparison
/// above with a comment where it is:
/// 1. `quayside_meta`, the version table, exists only on PostgreSQL (SQLite
///    keeps the version in `PRAGMA user_version`);
/// 2. the indexes of PRIMARY KEY and UNIQUE constraints are implicit on both
///    engines with engine-chosen names (`sqlite_autoindex_accounts_1`,
///    `accounts_username_key`), so they are not compared;
/// 3. the JSON columns (`JSON_COLUMNS`) are `json` on PostgreSQL, TEXT with
///    `CHECK (json_valid(...))` on SQLite;
/// 4. a primary key column is NOT NULL on PostgreSQL; SQLite would let a
///    TEXT PRIMARY KEY of a rowid table hold NULL: compared as NOT NULL;
/// 5. SQLite's own tables (`sqlite_sequence`, `sqlite_stat*`) are ignored;
/// 6. `change_log.head`, `change_log.commits` and the groups' counts
///    (`location_commits`, `workspace_commits`, `session_commits`:
///    `PG_ONLY_COLUMNS`) exist only on PostgreSQL: the row every writing
///    transaction locks first, the sequence it hands out, and the counts of
///    the transactions that changed a group of tables (SQLite's one writer,
///    its rowid and its row hook need none of them). They come last, so the
///    columns before them still compare.
#[test]
fn the_postgres_schema_has_the_sqlite_schemas_tables_columns_and_indexes() {
    let (_, client) = fresh();
    apply_schema(&client).unwrap();
    let sqlite = sqlite_shape();
    let pg = pg_shape(&client);
    let log: Vec<Value> = client
        .query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = 'change_log' \
             ORDER BY ordinal_position",
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(
        log,
        [
            "id",
            "trimmed_through",
            "head",
            "commits",
            "location_commits",
            "workspace_commits",
            "session_commits"
        ]
        .map(|c| Value::Text(c.into()))
    );
    assert!(sqlite.tables.len() >= 17, "{:?}", sqlite.tables.keys());
    assert_eq!(
        pg.tables.keys().collect::<Vec<_>>(),
        sqlite.tables.keys().collect::<Vec<_>>(),
        "tables"
    );
    for (table, columns) in &sqlite.tables {
        assert_eq!(&pg.tables[table], columns, "columns of {table}");
    }
    assert_eq!(pg.indexes, sqlite.indexes, "indexes");
}

/// Every column's domain and every CHECK, of a table or of a domain, by
/// name and definition: what `pg_shape` (data types as the base type) does
/// not compare.
fn constraints(client: &Client) -> Vec<Vec<Value>> {
    let rows = client
        .query(
            "SELECT table_name::text || '.' || column_name::text, domain_name::text \
             FROM information_schema.columns \
             WHERE table_schema = current_schema() AND domain_name IS NOT NULL \
             UNION ALL \
             SELECT coalesce(c.conrelid::regclass::text, c.contypid::regtype::text), \
                    pg_get_constraintdef(c.oid) \
             FROM pg_constraint c \
             WHERE c.contype = 'c' AND c.connamespace = current_schema()::regnamespace \
             ORDER BY 1, 2",
            &[],
        )
        .unwrap();
    rows.iter().map(|row| row.values().to_vec()).collect()
}

/// The locations' catalog, hemispheres and status are domains (version 12:
/// PostgreSQL keeps a domain's constraint parsed, and parses a table's
/// CHECKs for every statement that writes): they refuse what the CHECKs
/// refused, bind and read as text, and the table has no CHECK left.
#[test]
fn the_locations_enumerated_columns_are_domains_that_refuse_other_values() {
    let (_, client) = fresh();
    apply_schema(&client).unwrap();
    let insert = |catalog: &str, ns: &str, we: &str, status: &str| {
        client.execute(
            "INSERT INTO locations (catalog, client_code, name, name_folded, latitude_ns, \
             longitude_we, status_code, created_at, creator, modified_at, modifier) \
             VALUES (?1, 'XXAAA', 'A', 'a', ?2, ?3, ?4, 1, 'c', 1, 'c')",
            &[
                Value::Text(catalog.into()),
                Value::Text(ns.into()),
                Value::Text(we.into()),
                Value::Text(status.into()),
            ],
        )
    };
    for (values, domain) in [
        (["harbours", "N", "E", "ACTIVE"], "location_catalog"),
        (["ports", "X", "E", "ACTIVE"], "north_south"),
        (["ports", "N", "X", "ACTIVE"], "east_west"),
        (["ports", "N", "E", "active"], "location_status"),
    ] {
        let error = insert(values[0], values[1], values[2], values[3]).unwrap_err();
        assert!(error.to_string().contains(domain), "{values:?}: {error}");
    }
    insert("inland_facilities", "S", "W", "INACTIVE").unwrap();
    let row = client
        .query_row(
            "SELECT catalog, latitude_ns, longitude_we, status_code FROM locations",
            &[],
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        row.values(),
        ["inland_facilities", "S", "W", "INACTIVE"].map(|v| Value::Text(v.into()))
    );
    let checks = constraints(&client);
    assert!(
        !checks
            .iter()
            .any(|row| row[0] == Value::Text("locations".into())),
        "{checks:?}"
    );
    assert_eq!(
        checks
            .iter()
            .filter(|row| row[0].as_str().is_some_and(|c| c.starts_with("locations.")))
            .count(),
        4,
        "{checks:?}"
    );
}

/// One organization, `o`, written by a statement of its own.
fn insert_organization(client: &Client) {
    client
        .execute(
            "INSERT INTO organizations (id, name, name_folded, audience, created_at, updated_at) \
             VALUES ('o', 'O', 'o', 't', 1, 1)",
            &[],
        )
        .unwrap();
}

/// The caches' commit position (`db::pg::position`): every table of the data
/// but the counter's own has the trigger (`login_failures`, the servers'
/// shared lockout state, is read afresh at each login and cached nowhere: a
/// wrong password must not empty every cache), and every transaction that writes, however
/// it is run, moves `change_log.commits`, once.
#[test]
fn every_writing_transaction_moves_the_commit_counter_once() {
    let (_, client) = fresh();
    apply_schema(&client).unwrap();
    let uncounted = client
        .query(
            "SELECT tablename::text FROM pg_tables t WHERE schemaname = current_schema() \
             AND tablename NOT IN ('change_log', 'login_failures') AND NOT EXISTS (SELECT 1 FROM pg_trigger g \
             WHERE g.tgrelid = (quote_ident(t.tablename))::regclass AND g.tgname = 'quayside_count')",
            &[],
        )
        .unwrap();
    assert!(
        uncounted.is_empty(),
        "tables without the trigger: {uncounted:?}"
    );
    let commits = || {
        client
            .query_row("SELECT commits FROM change_log WHERE id = 1", &[])
            .unwrap()
            .unwrap()[0]
            .as_i64()
            .unwrap()
    };
    let start = commits();
    // One statement on its own (the CLI's way).
    insert_organization(&client);
    assert_eq!(commits(), start + 1, "an autocommitted statement");
    // Several statements in one transaction count once.
    client
        .transaction(|c| {
            c.execute("UPDATE organizations SET name = 'P' WHERE id = 'o'", &[])?;
            c.execute("UPDATE organizations SET name = 'Q' WHERE id = 'o'", &[])?;
            c.execute("DELETE FROM organizations WHERE id = 'nothing'", &[])?;
            Ok(())
        })
        .unwrap();
    assert_eq!(commits(), start + 2, "one transaction of three statements");
    // A rolled-back transaction leaves it.
    client.batch_execute("BEGIN").unwrap();
    client
        .execute("DELETE FROM organizations WHERE id = 'o'", &[])
        .unwrap();
    client.batch_execute("ROLLBACK").unwrap();
    assert_eq!(commits(), start + 2, "a rollback");
    // Reads do not count.
    client.query("SELECT * FROM organizations", &[]).unwrap();
    assert_eq!(commits(), start + 2, "a read");
}

/// The groups' counts (`Tables::COUNTED`): every table of a counted group in
/// `Tables::WATCHED` (the one list, which a file's row hook reads) has the
/// counting trigger with its group's column, and no other table has it; a
/// transaction that writes a table of the group moves that group's count
/// once, and only that group's; a write of another table (a document), a
/// rollback, or bookkeeping's transaction (which sets the counts' settings
/// first, as `db::uncounted` does) moves none.
#[test]
fn each_group_s_count_moves_with_a_write_of_its_own_tables_alone() {
    use quayside::db::Tables;
    let (_, client) = fresh();
    apply_schema(&client).unwrap();
    let mut expected: Vec<Vec<Value>> = Tables::WATCHED
        .iter()
        .filter_map(|(table, group)| {
            let i = group.counted()?;
            Some(vec![
                Value::Text((*table).into()),
                Value::Text(format!("{}\\000", Tables::COUNTED[i].1)),
            ])
        })
        .collect();
    expected.sort_by_key(|row| format!("{row:?}"));
    let found: Vec<Vec<Value>> = triggers(&client)
        .into_iter()
        .filter(|row| row[2] == Value::Text("quayside_count_group".into()))
        .map(|row| vec![row[1].clone(), row[3].clone()])
        .collect();
    assert_eq!(
        found, expected,
        "the counting triggers follow Tables::WATCHED"
    );
    assert_eq!(
        found.len(),
        5,
        "locations, workspaces, organizations, sessions, accounts"
    );

    let columns: Vec<&str> = Tables::COUNTED.iter().map(|(_, c)| *c).collect();
    let counts = || -> Vec<i64> {
        let row = client
            .query_row(
                &format!("SELECT {} FROM change_log WHERE id = 1", columns.join(", ")),
                &[],
            )
            .unwrap()
            .unwrap();
        row.values().iter().map(|v| v.as_i64().unwrap()).collect()
    };
    let moved = |before: &[i64], after: &[i64]| -> Vec<&str> {
        columns
            .iter()
            .zip(before.iter().zip(after))
            .flat_map(|(c, (b, a))| std::iter::repeat_n(*c, (a - b) as usize))
            .collect()
    };
    let write = |sql: &str| -> Vec<&str> {
        let before = counts();
        client
            .batch_execute(&format!("BEGIN; {sql}; COMMIT"))
            .unwrap();
        moved(&before, &counts())
    };
    assert_eq!(
        write(
            "INSERT INTO locations (catalog, client_code, name, name_folded, status_code, \
                 created_at, creator, modified_at, modifier) \
             VALUES ('ports', 'NLRTM', 'Rotterdam', 'rotterdam', 'ACTIVE', 1, 'c', 1, 'c'); \
             UPDATE locations SET name = 'Rotterdam Haven'"
        ),
        ["location_commits"],
        "two statements on the locations, one transaction"
    );
    assert_eq!(
        write(
            "INSERT INTO organizations (id, name, name_folded, audience, created_at, updated_at) \
                 VALUES ('o', 'O', 'o', 't', 1, 1); \
             INSERT INTO workspaces (id, client_id, created_at, updated_at) VALUES ('w', 'o', 1, 1)"
        ),
        ["workspace_commits"],
        "an organization and a workspace, one transaction"
    );
    assert_eq!(
        write("UPDATE workspaces SET description = 'd'"),
        ["workspace_commits"]
    );
    assert_eq!(
        write(
            "INSERT INTO accounts (username, tenant, password_hash, password_salt, \
                 password_iterations, created_at) VALUES ('u', 't', '\\x00', '\\x00', 1, 1); \
             INSERT INTO sessions (key_hash, account_id, created_at, last_used_at) \
                 SELECT '\\x01', id, 1, 1 FROM accounts"
        ),
        ["session_commits"],
        "an account and its session, one transaction"
    );
    assert_eq!(
        write("DELETE FROM sessions"),
        ["session_commits"],
        "a logout"
    );
    assert_eq!(
        write(
            "INSERT INTO documents (id, workspace_id, kind, body, created_at, updated_at) \
                 VALUES ('j1', 'w', 'job', '{}', 1, 1)"
        ),
        Vec::<&str>::new(),
        "a document is no counted group's"
    );
    let before = counts();
    client
        .batch_execute("BEGIN; UPDATE accounts SET tenant = 'x'; ROLLBACK")
        .unwrap();
    assert_eq!(moved(&before, &counts()), Vec::<&str>::new(), "a rollback");
    let settings: Vec<String> = columns
        .iter()
        .map(|c| format!("set_config('quayside.{c}', 'yes', true)"))
        .collect();
    assert_eq!(
        write(&format!(
            "SELECT {}; UPDATE sessions SET last_used_at = 2",
            settings.join(", ")
        )),
        Vec::<&str>::new(),
        "bookkeeping, its counts set beforehand"
    );
}

#[test]
fn applying_the_schema_records_the_version_and_a_second_time_changes_nothing() {
    let (_, client) = fresh();
    assert_eq!(schema_version(&client).unwrap(), None);
    apply_schema(&client).unwrap();
    assert_eq!(schema_version(&client).unwrap(), Some(CURRENT_VERSION));
    insert_organization(&client);
    apply_schema(&client).unwrap();
    let count = client
        .query_row("SELECT count(*) FROM organizations", &[])
        .unwrap()
        .unwrap();
    assert_eq!(count[0], Value::Integer(1));
    let log = client
        .query("SELECT id, trimmed_through FROM change_log", &[])
        .unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].values(), [Value::Integer(1), Value::Integer(0)]);
}

/// The triggers on the schema's tables: name, table, function.
fn triggers(client: &Client) -> Vec<Vec<Value>> {
    client
        .query(
            "SELECT t.tgname::text, c.relname::text, p.proname::text, \
                 encode(t.tgargs, 'escape') FROM pg_trigger t \
             JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid \
             WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace \
             ORDER BY 1, 2",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.values().to_vec())
        .collect()
}

/// The change log row's columns, with their types and defaults.
fn change_log_columns(client: &Client) -> Vec<Vec<Value>> {
    client
        .query(
            "SELECT column_name::text, data_type::text, column_default::text \
             FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = 'change_log' \
             ORDER BY ordinal_position",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.values().to_vec())
        .collect()
}

/// A database made at version 7 (the first on PostgreSQL) is brought to the
/// current version by the steps, keeping its rows, and then has exactly the
/// shape of a new one; a version before 7 is refused.
#[test]
fn an_older_database_is_brought_forward_by_the_steps_and_one_before_them_refused() {
    let (_, fresh_client) = fresh();
    apply_schema(&fresh_client).unwrap();
    let (_, client) = fresh();
    apply_schema(&client).unwrap();
    insert_organization(&client);
    // Version 7 as it was: without what the steps after it add.
    client
        .batch_execute(
            "DROP INDEX synonyms_workspace_all; DROP TABLE tenant_workspaces; \
             DROP TABLE catalog_item_uses; \
             CREATE TABLE document_refs ( \
                 document_id text NOT NULL REFERENCES documents (id) ON DELETE CASCADE, \
                 item_id text NOT NULL REFERENCES catalog_items (id), \
                 PRIMARY KEY (document_id, item_id)); \
             CREATE INDEX document_refs_item ON document_refs (item_id); \
             CREATE TRIGGER quayside_count BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE \
                 ON document_refs FOR EACH STATEMENT EXECUTE FUNCTION quayside_count_commit(); \
             ALTER TABLE locations \
                 ALTER COLUMN catalog TYPE text, ALTER COLUMN latitude_ns TYPE text, \
                 ALTER COLUMN longitude_we TYPE text, ALTER COLUMN status_code TYPE text, \
                 ADD CHECK (catalog IN ('ports', 'inland_facilities')), \
                 ADD CHECK (latitude_ns IN ('N', 'S')), \
                 ADD CHECK (longitude_we IN ('E', 'W')), \
                 ADD CHECK (status_code IN ('ACTIVE', 'INACTIVE')); \
             DROP DOMAIN location_catalog; DROP DOMAIN north_south; \
             DROP DOMAIN east_west; DROP DOMAIN location_status; \
             DROP TRIGGER quayside_count_group ON locations; \
             DROP TRIGGER quayside_count_group ON workspaces; \
             DROP TRIGGER quayside_count_group ON organizations; \
             DROP TRIGGER quayside_count_group ON sessions; \
             DROP TRIGGER quayside_count_group ON accounts; \
             DROP FUNCTION quayside_count_group(); \
             ALTER TABLE change_log DROP COLUMN location_commits, \
                 DROP COLUMN workspace_commits, DROP COLUMN session_commits; \
             UPDATE quayside_meta SET schema_version = 7",
        )
        .unwrap();
    // Two documents linked to one catalog item, one of them to a second.
    client
        .batch_execute(
            "INSERT INTO workspaces (id, client_id, created_at, updated_at) VALUES ('w', 'o', 1, 1); \
             INSERT INTO catalog_items (id, workspace_id, catalog, created_at, updated_at) \
                 VALUES ('i1', 'w', 'products', 1, 1), ('i2', 'w', 'products', 1, 1); \
             INSERT INTO documents (id, workspace_id, kind, body, created_at, updated_at) \
                 VALUES ('j1', 'w', 'job', '{}', 1, 1), ('j2', 'w', 'job', '{}', 2, 2); \
             INSERT INTO document_refs (document_id, item_id) \
                 VALUES ('j1', 'i1'), ('j2', 'i1'), ('j2', 'i2')",
        )
        .unwrap();
    client
        .batch_execute(
            "INSERT INTO locations (catalog, client_code, name, name_folded, status_code, \
                 created_at, creator, modified_at, modifier) \
             VALUES ('ports', 'NLRTM', 'Rotterdam', 'rotterdam', 'ACTIVE', 1, 'c', 1, 'c'), \
                    ('ports', 'DEHAM', 'Hamburg', 'hamburg', 'ACTIVE', 1, 'c', 1, 'c'); \
             ANALYZE locations",
        )
        .unwrap();
    apply_schema(&client).unwrap();
    let analyzed = client
        .query_row(
            "SELECT count(*) FROM pg_stats \
             WHERE schemaname = current_schema() AND tablename = 'locations' \
             AND attname IN ('catalog', 'latitude_ns', 'longitude_we', 'status_code')",
            &[],
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        analyzed[0],
        Value::Integer(4),
        "version 12 analyzed the columns it rewrote (their statistics go with the rewrite)"
    );
    let uses = client
        .query(
            "SELECT item_id, uses FROM catalog_item_uses ORDER BY 1",
            &[],
        )
        .unwrap();
    let uses: Vec<_> = uses.iter().map(|row| row.values().to_vec()).collect();
    assert_eq!(
        uses,
        [
            vec![Value::Text("i1".into()), Value::Integer(2)],
            vec![Value::Text("i2".into()), Value::Integer(1)],
        ],
        "version 10 counted the links"
    );
    assert_eq!(schema_version(&client).unwrap(), Some(CURRENT_VERSION));
    assert_eq!(pg_shape(&client), pg_shape(&fresh_client));
    assert_eq!(
        constraints(&client),
        constraints(&fresh_client),
        "version 12 made the locations' CHECKs domains"
    );
    assert_eq!(
        triggers(&client),
        triggers(&fresh_client),
        "versions 13 and 14 count the transactions that change a group of tables"
    );
    assert_eq!(
        change_log_columns(&client),
        change_log_columns(&fresh_client)
    );
    let count = client
        .query_row("SELECT count(*) FROM organizations", &[])
        .unwrap()
        .unwrap();
    assert_eq!(count[0], Value::Integer(1), "the rows are kept");

    client
        .execute("UPDATE quayside_meta SET schema_version = 6", &[])
        .unwrap();
    let error = apply_schema(&client).unwrap_err();
    assert!(
        matches!(error, Error::Unsupported { found: 6, first: 7 }),
        "{error:?}"
    );
    assert!(error.to_string().contains("before version 7"), "{error}");
}

#[test]
fn processes_applying_the_schema_at_once_create_it_once() {
    let (options, _) = fresh();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let options = options.clone();
            std::thread::spawn(move || {
                let client = Client::connect(&options).unwrap();
                apply_schema(&client)
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap().unwrap();
    }
    let client = Client::connect(&options).unwrap();
    let row = client
        .query_row("SELECT count(*) FROM quayside_meta", &[])
        .unwrap()
        .unwrap();
    assert_eq!(row[0], Value::Integer(1));
}

#[test]
fn a_database_with_other_tables_a_newer_version_or_another_collation_is_refused() {
    let (_, client) = fresh();
    client
        .batch_execute("CREATE TABLE mine (a bigint)")
        .unwrap();
    let error = apply_schema(&client).unwrap_err();
    assert!(matches!(error, Error::Foreign), "{error:?}");
    assert!(
        error.to_string().contains("not a Quayside database"),
        "{error}"
    );

    let (_, client) = fresh();
    apply_schema(&client).unwrap();
    client
        .execute(
            "UPDATE quayside_meta SET schema_version = ?1",
            &[Value::Integer(CURRENT_VERSION + 1)],
        )
        .unwrap();
    let error = apply_schema(&client).unwrap_err();
    assert!(
        matches!(error, Error::Newer { found } if found == CURRENT_VERSION + 1),
        "{error:?}"
    );

    let options = cluster::cluster().database_with_collation("C.utf8");
    let client = Client::connect(&options).unwrap();
    let error = apply_schema(&client).unwrap_err();
    assert!(
        matches!(&error, Error::Collation { found } if found == "C.utf8"),
        "{error:?}"
    );
    assert!(error.to_string().contains("collation C"), "{error}");
    let tables = client
        .query_row(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()",
            &[],
        )
        .unwrap()
        .unwrap();
    assert_eq!(tables[0], Value::Integer(0), "nothing was created");
}

/// The expression the indexes are built on is NULL for a JSON null and for a
/// missing key, as SQLite's `json_extract` is, and sorts NULLs first; a
/// query spelled the same way is answered from the index.
#[test]
fn a_body_path_index_matches_json_extracts_nulls_and_is_used() {
    let (_, client) = fresh();
    apply_schema(&client).unwrap();
    client
        .batch_execute(
            "INSERT INTO organizations (id, name, name_folded, audience, created_at, updated_at) \
             VALUES ('o', 'O', 'o', 't', 1, 1); \
             INSERT INTO workspaces (id, client_id, created_at, updated_at) \
             VALUES ('w', 'o', 1, 1)",
        )
        .unwrap();
    let bodies = [
        ("d1", r#"{"status":"b"}"#),
        ("d2", r#"{"status":null}"#),
        ("d3", r#"{}"#),
        ("d4", r#"{"status":"a"}"#),
    ];
    for (n, (id, body)) in bodies.iter().enumerate() {
        client
            .execute(
                "INSERT INTO documents (id, workspace_id, kind, body, created_at, updated_at) \
                 VALUES (?1, 'w', 'job', ?2, ?3, ?3)",
                &[
                    Value::Text((*id).into()),
                    Value::Text((*body).into()),
                    Value::Integer(n as i64),
                ],
            )
            .unwrap();
    }
    let path = "NULLIF((body::jsonb) #> '{status}', 'null'::jsonb)";
    let order = format!(
        "SELECT id FROM documents WHERE workspace_id = ?1 AND kind = 'job' \
         ORDER BY {path} ASC NULLS FIRST, created_at, id"
    );
    let ids: Vec<Value> = client
        .query(&order, &[Value::Text("w".into())])
        .unwrap()
        .into_iter()
        .map(|r| r[0].clone())
        .collect();

    // The same rows on SQLite, in json_extract's order.
    let dir = tempfile::tempdir().unwrap();
    let conn = quayside::db::open_and_migrate(&dir.path().join("data.db")).unwrap();
    conn.execute_batch("CREATE TEMP TABLE d (id TEXT, body TEXT, created_at INTEGER)")
        .unwrap();
    for (n, (id, body)) in bodies.iter().enumerate() {
        conn.execute(
            "INSERT INTO temp.d VALUES (?1, ?2, ?3)",
            rusqlite::params![id, body, n as i64],
        )
        .unwrap();
    }
    let mut statement = conn
        .prepare("SELECT id FROM temp.d ORDER BY json_extract(body, '$.status'), created_at, id")
        .unwrap();
    let sqlite_ids: Vec<Value> = statement
        .query_map([], |row| row.get::<_, String>(0))
        .unwrap()
        .map(|id| Value::Text(id.unwrap()))
        .collect();
    assert_eq!(ids, sqlite_ids);
    assert_eq!(ids, ["d2", "d3", "d4", "d1"].map(|s| Value::Text(s.into())));

    // Answered by the index on that expression (sequential scans off, so
    // that four rows do not make a scan the cheaper plan).
    client.batch_execute("SET enable_seqscan = off").unwrap();
    let plan = client
        .query(
            &format!(
                "EXPLAIN SELECT id FROM documents WHERE workspace_id = 'w' AND kind = 'job' \
                 AND {path} = to_jsonb('a'::text) ORDER BY created_at, id"
            ),
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|r| r[0].as_str().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(plan.contains("documents_jobs_status"), "{plan}");
}

#[test]
fn the_unique_expression_index_refuses_a_second_direction_with_its_name() {
    let (_, client) = fresh();
    apply_schema(&client).unwrap();
    client
        .batch_execute(
            "INSERT INTO workspaces (id, created_at, updated_at) VALUES ('w', 1, 1); \
             INSERT INTO documents (id, workspace_id, kind, body, created_at, updated_at) \
             VALUES ('j', 'w', 'job', '{}', 1, 1); \
             INSERT INTO documents (id, workspace_id, kind, job_id, body, created_at, updated_at) \
             VALUES ('q1', 'w', 'quantityResult', 'j', '{\"direction\":\"in\"}', 1, 1)",
        )
        .unwrap();
    let error = client
        .execute(
            "INSERT INTO documents (id, workspace_id, kind, job_id, body, created_at, updated_at) \
             VALUES ('q2', 'w', 'quantityResult', 'j', ?1, 2, 2)",
            &[Value::Text(r#"{"direction": "in", "x": 1}"#.into())],
        )
        .unwrap_err();
    assert!(
        matches!(&error, Error::Unique { constraint: Some(c), .. } if c == "documents_quantity_direction"),
        "{error:?}"
    );
    let error = client
        .execute(
            "INSERT INTO documents (id, workspace_id, kind, body, created_at, updated_at) \
             VALUES ('bad', 'w', 'job', ?1, 1, 1)",
            &[Value::Text("{not json".into())],
        )
        .unwrap_err();
    assert_eq!(error.code(), Some("22P02"), "{error}");
}
