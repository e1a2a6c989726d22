//! The lists' SQL in PostgreSQL's dialect (`db::dialect::POSTGRES`) on a real
//! server with `pg/schema.sql`: the documents lists, built by the listing's
//! own builders (`listing::statements`), page through the same rows in the
//! same order as on SQLite (filters, sorts, NULLs, ties, cursors), and each
//! statement is answered from an index, never a sequential scan of
//! `documents` (ten thousand jobs and their results, analyzed). The stores'
//! own statements on body paths, and the other fragments, answer as on
//! SQLite.
//!
//! The statements run through `db::pg::Client` beside the same rows in
//! SQLite, and [`pg_page`] does what `listing::fetch_page` does with them.
//! The other lists' plans are `plans.rs`'s.

use quayside::db::Value as SqlValue;
use quayside::db::dialect::{FieldType, POSTGRES};
use quayside::db::pg::{Client, apply_schema};
use quayside::db::value::Value as PgValue;
use quayside::db::{Conn, params};
use quayside::documents::kinds::{self, Kind};
use quayside::documents::store::{self, BodyFields};
use quayside::listing::{self, FieldSql, Generation, ListQuery};

use super::{explain, fresh, plan_nodes};

/// Workspaces besides `w`, with jobs only: a list of `w` reads a small part
/// of the table, as a list of a real one does (with `w` a sixth of the
/// table, counting its jobs by a sequential scan is the cheaper plan).
const OTHER_WORKSPACES: usize = 19;
const JOBS_PER_WORKSPACE: usize = 500;
/// Jobs of `w` with results under them, and results of each kind per job.
const JOBS_WITH_RESULTS: usize = 40;
const RESULTS_PER_JOB: usize = 12;

/// A small deterministic generator.
struct Seed(u64);

impl Seed {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// A value that is missing, JSON null, or one of a few (so that there are
/// ties and NULLs in every field).
fn sometimes(seed: &mut Seed, value: serde_json::Value) -> Option<serde_json::Value> {
    match seed.next(10) {
        0 => None,
        1 => Some(serde_json::Value::Null),
        _ => Some(value),
    }
}

/// The same documents in a PostgreSQL database (analyzed) and a SQLite
/// store: the jobs of every workspace, and results under the first jobs of
/// `w`.
fn loaded() -> (Client, Conn) {
    let (_, client) = fresh();
    apply_schema(&client).unwrap();
    let sqlite = Conn::memory().unwrap();
    let mut rows: Vec<(String, String, String, Option<String>, String, i64)> = Vec::new();
    let mut seed = Seed(17);
    let statuses = ["pending", "active", "complete", "cancelled"];
    for w in 0..=OTHER_WORKSPACES {
        let workspace = if w == 0 {
            "w".to_string()
        } else {
            format!("w{w}")
        };
        for j in 0..JOBS_PER_WORKSPACE {
            let id = format!("job-{workspace}-{j:04}");
            let mut body = serde_json::Map::new();
            let mut put = |name: &str, value: Option<serde_json::Value>| {
                if let Some(value) = value {
                    body.insert(name.to_string(), value);
                }
            };
            put("xref", sometimes(&mut seed, format!("X{}", j % 97).into()));
            put("refNumber", sometimes(&mut seed, format!("R{j:04}").into()));
            let status = statuses[seed.next(4) as usize];
            put("status", sometimes(&mut seed, status.into()));
            let activity = ["load", "discharge", "transfer"][seed.next(3) as usize];
            put("activity", sometimes(&mut seed, activity.into()));
            let month = seed.next(12) + 1;
            put(
                "eta",
                sometimes(
                    &mut seed,
                    format!("2026-{month:02}-01T00:00:00.000Z").into(),
                ),
            );
            let day = seed.next(28) + 1;
            put(
                "etc",
                sometimes(&mut seed, format!("2026-12-{day:02}T00:00:00.000Z").into()),
            );
            let parent = format!("job-{workspace}-{:04}", j / 10);
            put("parent", sometimes(&mut seed, parent.into()));
            put("tripNumber", sometimes(&mut seed, "T1".into()));
            let party = ["client", "vendor", "agent"][seed.next(3) as usize];
            put(party, (j % 7 == 0).then(|| "o".into()));
            // Creation times with ties: the id decides between them.
            let created = (j / 3) as i64;
            rows.push((
                id,
                workspace.clone(),
                "job".into(),
                None,
                serde_json::Value::Object(body).to_string(),
                created,
            ));
        }
        if w != 0 {
            continue;
        }
        for j in 0..JOBS_WITH_RESULTS {
            let job = format!("job-w-{j:04}");
            for kind in &kinds::ALL[1..] {
                for r in 0..RESULTS_PER_JOB {
                    // One quantity result per direction per job (a unique index).
                    if kind.key == "quantityResult" && r >= 2 {
                        continue;
                    }
                    let mut body = serde_json::Map::new();
                    let mut put = |name: &str, value: Option<serde_json::Value>| {
                        if let Some(value) = value {
                            body.insert(name.to_string(), value);
                        }
                    };
                    let status = ["confirmed", "preliminary"][seed.next(2) as usize];
                    put("status", sometimes(&mut seed, status.into()));
                    let set = serde_json::Value::from(seed.next(4) as i64);
                    put("setNumber", sometimes(&mut seed, set));
                    let day = seed.next(3) + 1;
                    put(
                        "date",
                        sometimes(&mut seed, format!("2026-01-{day:02}T00:00:00.000Z").into()),
                    );
                    // A flag and a real, in the fields of both kinds.
                    let flag = seed.next(2) == 0;
                    let flag = sometimes(&mut seed, flag.into());
                    put("isPassed", flag.clone());
                    put("activeShoreTank", flag);
                    let perc = [0.5, 1.0, 2.25][seed.next(3) as usize];
                    put("waterPerc", sometimes(&mut seed, perc.into()));
                    if kind.key == "quantityResult" {
                        let direction = ["source", "destination"][r];
                        body.insert("direction".into(), direction.into());
                    }
                    rows.push((
                        format!("{}-{j:04}-{r:02}", kind.key),
                        "w".into(),
                        kind.key.into(),
                        Some(job.clone()),
                        serde_json::Value::Object(body).to_string(),
                        (r / 2) as i64,
                    ));
                }
            }
        }
    }

    let setup = "INSERT INTO organizations (id, name, name_folded, audience, created_at, \
                 updated_at) VALUES ('o', 'O', 'o', 't', 1, 1)";
    client.execute(setup, &[]).unwrap();
    sqlite.execute(setup, []).unwrap();
    for w in 0..=OTHER_WORKSPACES {
        let workspace = if w == 0 {
            "w".to_string()
        } else {
            format!("w{w}")
        };
        let sql = "INSERT INTO workspaces (id, client_id, created_at, updated_at) \
                   VALUES (?1, 'o', 1, 1)";
        client
            .execute(sql, &[PgValue::Text(workspace.clone())])
            .unwrap();
        sqlite.execute(sql, [&workspace]).unwrap();
    }
    let insert = "INSERT INTO documents (id, workspace_id, kind, job_id, body, created_at, \
                  updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)";
    client
        .transaction(|client| {
            for (id, workspace, kind, job, body, created) in &rows {
                client.execute(
                    insert,
                    &[
                        PgValue::Text(id.clone()),
                        PgValue::Text(workspace.clone()),
                        PgValue::Text(kind.clone()),
                        job.clone().map_or(PgValue::Null, PgValue::Text),
                        PgValue::Text(body.clone()),
                        PgValue::Integer(*created),
                    ],
                )?;
            }
            Ok(())
        })
        .unwrap();
    client.batch_execute("ANALYZE").unwrap();
    let write = sqlite.begin_write().unwrap();
    for (id, workspace, kind, job, body, created) in &rows {
        write
            .conn()
            .execute(insert, params![id, workspace, kind, job, body, created])
            .unwrap();
    }
    write.commit().unwrap();
    (client, sqlite)
}

fn to_pg(values: &[SqlValue]) -> Vec<PgValue> {
    values.iter().cloned().map(PgValue::from).collect()
}

/// Asserts that the plan reads `documents` through an index only; with
/// `in_order`, also that it sorts nothing (the order is the index's).
fn assert_indexed(client: &Client, sql: &str, params: &[SqlValue], in_order: bool) {
    let plan = explain(client, sql, params);
    let all = plan_nodes(&plan);
    let scans: Vec<&str> = all
        .iter()
        .filter(|n| n["Relation Name"] == "documents")
        .map(|n| n["Node Type"].as_str().unwrap())
        .collect();
    assert!(
        !scans.is_empty() && scans.iter().all(|t| *t != "Seq Scan"),
        "documents scanned, not searched:\n{sql}\n{plan:#}"
    );
    if in_order {
        assert!(
            !all.iter()
                .any(|n| matches!(n["Node Type"].as_str(), Some("Sort" | "Incremental Sort"))),
            "sorted, not read in the index's order:\n{sql}\n{plan:#}"
        );
    }
}

/// A page of a documents list on PostgreSQL.
struct PgPage {
    ids: Vec<String>,
    after: Option<Vec<SqlValue>>,
    count: i64,
}

/// One page of a documents list of `w` on PostgreSQL, read as
/// `listing::fetch_page` reads it: its ids, the next page's cursor values
/// (the sort keys of its last row, body paths read as `json_extract` gives
/// them), and the count statement's answer. With `check_plans`, every
/// statement's plan is checked (`Some(true)`: a first page also sorts
/// nothing).
fn pg_page(
    client: &Client,
    kind: &Kind,
    job: Option<&str>,
    query: &ListQuery,
    check_plans: Option<bool>,
) -> PgPage {
    let (condition, params) = store::list_condition("w", kind, job);
    let statements =
        listing::statements(&POSTGRES, "id", "FROM documents", &condition, params, query);
    let wanted = query.limit as usize + 1;
    let mut rows: Vec<(String, Vec<SqlValue>)> = Vec::new();
    for (sql, segment_params) in &statements.pages {
        if rows.len() >= wanted {
            break;
        }
        let mut all = statements.params.clone();
        all.extend(segment_params.iter().cloned());
        all.push(SqlValue::Integer((wanted - rows.len()) as i64));
        all.push(SqlValue::Integer(query.offset));
        if let Some(in_order) = check_plans {
            // Only a first page's one statement is read whole in the index's
            // order: a range past a cursor that holds a term equal to NULL
            // may sort what it finds.
            assert_indexed(client, sql, &all, in_order && query.after.is_none());
        }
        for row in client.query(sql, &to_pg(&all)).unwrap() {
            let values = row.into_values();
            let id = values[0].as_str().unwrap().to_owned();
            let keys = query
                .sort
                .iter()
                .zip(&values[1..])
                .map(|((term, _), value)| {
                    let value = SqlValue::from(value.clone());
                    match term {
                        FieldSql::BodyPath(..) => POSTGRES.body_value(value),
                        FieldSql::Column(_) => value,
                    }
                })
                .collect();
            rows.push((id, keys));
        }
    }
    if check_plans.is_some() {
        assert_indexed(client, &statements.count, &statements.params, false);
    }
    let count = client
        .query_row(&statements.count, &to_pg(&statements.params))
        .unwrap()
        .unwrap()[0]
        .as_i64()
        .unwrap();
    let after = if rows.len() > query.limit as usize {
        rows.truncate(query.limit as usize);
        rows.last().map(|(_, keys)| keys.clone())
    } else {
        None
    };
    PgPage {
        ids: rows.into_iter().map(|(id, _)| id).collect(),
        after,
        count,
    }
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Every id of a list on SQLite, page by page through its cursors (the
/// service's own `documents::store::list`), and the count of its matches.
fn sqlite_ids(
    conn: &Conn,
    kind: &'static Kind,
    job: Option<&str>,
    given: &[(&str, &str)],
) -> (Vec<String>, i64) {
    let fields = BodyFields(kind);
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    let mut total = None;
    loop {
        let mut with = pairs(given);
        if let Some(c) = &cursor {
            with.push(("after".into(), c.clone()));
        }
        let q = listing::parse(&with, Generation::Older, &fields, &[]).unwrap();
        let page = store::list(conn, "w", kind, job, &q).unwrap();
        total.get_or_insert(page.total.count);
        ids.extend(page.rows.into_iter().map(|d| d.id));
        match page.next {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    (ids, total.unwrap())
}

/// Every id of a list on PostgreSQL, page by page, its cursors made from
/// the last row of each page as `fetch_page` makes them; the plans of the
/// first two pages checked.
fn pg_ids(
    client: &Client,
    kind: &'static Kind,
    job: Option<&str>,
    given: &[(&str, &str)],
    in_order: bool,
) -> (Vec<String>, i64) {
    let fields = BodyFields(kind);
    let mut query = listing::parse(&pairs(given), Generation::Older, &fields, &[]).unwrap();
    let mut ids = Vec::new();
    let mut total = None;
    for n in 0.. {
        let check = (n < 2).then_some(in_order);
        let page = pg_page(client, kind, job, &query, check);
        total.get_or_insert(page.count.min(listing::COUNT_BOUND));
        ids.extend(page.ids);
        match page.after {
            Some(after) => query.after = Some(after),
            None => break,
        }
    }
    (ids, total.unwrap())
}

/// The lists checked: per kind, the query parameters and whether the order
/// is read from an index (as `documents::plans` checks them on SQLite), each
/// indexed field filtered and sorted both ways, and a few others.
fn cases(kind: &Kind, limit: &'static str) -> Vec<(Vec<(&'static str, String)>, bool)> {
    let with_limit = |mut p: Vec<(&'static str, String)>| {
        p.push(("limit", limit.to_string()));
        p
    };
    // A job holds two quantity results: PostgreSQL may find them by any
    // index of the job and sort them.
    let sorted_by_index = kind.key != "quantityResult";
    let mut cases = vec![(with_limit(vec![]), sorted_by_index)];
    for field in kind.indexed {
        let value = match *field {
            "setNumber" => "1".to_string(),
            "status" if !kind.is_job() => "confirmed".to_string(),
            "status" => "active".to_string(),
            "direction" => "source".to_string(),
            "xref" => "X5".to_string(),
            "refNumber" => "R0007".to_string(),
            "activity" => "load".to_string(),
            "eta" => "2026-03-01T00:00:00.000Z".to_string(),
            "etc" => "2026-12-05T00:00:00.000Z".to_string(),
            "parent" => "job-w-0003".to_string(),
            "date" => "2026-01-02T00:00:00.000Z".to_string(),
            other => panic!("no test value for {other}"),
        };
        // A filter matching a few rows may be read by a bitmap scan of its
        // index and sorted: on PostgreSQL, a cheaper plan than the index's
        // order.
        cases.push((with_limit(vec![(*field, value)]), false));
        let by_index = sorted_by_index;
        for direction in ["asc", "desc"] {
            cases.push((
                with_limit(vec![("sort", format!("{field}:{direction}"))]),
                by_index,
            ));
        }
    }
    if kind.is_job() {
        // Filtered: a few rows, which PostgreSQL may find by a bitmap scan
        // and sort.
        cases.push((
            with_limit(vec![
                ("status", "active".into()),
                ("sort", "eta:desc".into()),
            ]),
            false,
        ));
        // Directions mixed: sorted after the index (on SQLite too).
        cases.push((with_limit(vec![("sort", "status,eta:desc".into())]), false));
        // Not indexed: still the jobs' index, filtered.
        cases.push((with_limit(vec![("tripNumber", "T1".into())]), false));
    }
    // Not indexed, compared as a boolean and as a number: the job's
    // documents, filtered and sorted.
    let (flag, number) = match kind.key {
        "qualityResult" => ("isPassed", "setNumber"),
        "quantityResult" => ("activeShoreTank", "waterPerc"),
        _ => return cases,
    };
    for value in ["true", "false"] {
        cases.push((with_limit(vec![(flag, value.into())]), false));
    }
    for value in ["2.25", "1", "2.0"] {
        cases.push((with_limit(vec![(number, value.into())]), false));
    }
    cases.push((with_limit(vec![("sort", format!("{flag}:desc"))]), false));
    cases.push((
        with_limit(vec![("sort", format!("{number},{flag}:desc"))]),
        false,
    ));
    if kind.key == "qualityResult" {
        cases.push((
            with_limit(vec![
                ("status", "confirmed".into()),
                ("sort", "setNumber:desc".into()),
            ]),
            false,
        ));
    }
    cases
}

/// Every documents list, on both engines: the same ids in the same order,
/// page by page through cursors (NULLs and ties in every sorted field), the
/// same count; on PostgreSQL, every statement searches an index and a first
/// page sorted on an indexed field is read in the index's order.
#[test]
fn documents_lists_page_as_on_sqlite_and_search_an_index() {
    let (client, sqlite) = loaded();
    // The rows are what the test means them to be: NULLs and ties in the
    // sorted fields, and more than one page.
    let row = client
        .query_row(
            &format!(
                "SELECT count(*) FILTER (WHERE {eta} IS NULL), \
                 count(DISTINCT {eta}), count(*) FROM documents \
                 WHERE workspace_id = 'w' AND kind = 'job'",
                eta = POSTGRES.body_path("$.eta")
            ),
            &[],
        )
        .unwrap()
        .unwrap();
    let (nulls, distinct, all) = (
        row[0].as_i64().unwrap(),
        row[1].as_i64().unwrap(),
        row[2].as_i64().unwrap(),
    );
    assert!(nulls > 50, "{nulls}");
    assert!(distinct <= 12, "{distinct}");
    assert_eq!(all, JOBS_PER_WORKSPACE as i64);
    let first_job = "job-w-0000";
    let mut checked = 0;
    for kind in kinds::ALL {
        let job = (!kind.is_job()).then_some(first_job);
        let limit = if kind.is_job() { "60" } else { "5" };
        for (given, in_order) in cases(kind, limit) {
            let given: Vec<(&str, &str)> = given.iter().map(|(a, b)| (*a, b.as_str())).collect();
            let (expected, expected_total) = sqlite_ids(&sqlite, kind, job, &given);
            let (ids, total) = pg_ids(&client, kind, job, &given, in_order);
            assert_eq!(ids, expected, "{} {given:?}", kind.key);
            assert_eq!(total, expected_total, "{} {given:?}", kind.key);
            checked += 1;
        }
    }
    assert!(checked > 40, "{checked}");
}

/// Each indexed field of each kind, written by `Dialect::body_path`, is the
/// expression of an index of `pg/schema.sql` (the server's own reading of
/// both compared: PostgreSQL uses an expression index only for an
/// equivalent expression).
#[test]
fn every_indexed_field_s_body_path_is_an_index_expression() {
    let (_, client) = fresh();
    apply_schema(&client).unwrap();
    let indexed: Vec<String> = client
        .query(
            "SELECT pg_get_indexdef(i.indexrelid, k, true) FROM pg_index i \
             JOIN pg_class c ON c.oid = i.indrelid, \
             generate_series(1, i.indnatts) AS k WHERE c.relname = 'documents'",
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|row| row[0].as_str().unwrap().to_owned())
        .collect();
    for kind in kinds::ALL {
        for field in kind.indexed {
            let expression = POSTGRES.body_path(&format!("$.{field}"));
            client.batch_execute("BEGIN").unwrap();
            client
                .batch_execute(&format!(
                    "CREATE INDEX dialect_probe ON documents (({expression}))"
                ))
                .unwrap();
            let probe = client
                .query_row(
                    "SELECT pg_get_indexdef('dialect_probe'::regclass, 1, true)",
                    &[],
                )
                .unwrap()
                .unwrap()[0]
                .as_str()
                .unwrap()
                .to_owned();
            client.batch_execute("ROLLBACK").unwrap();
            assert!(
                indexed.contains(&probe),
                "{}.{field}: {probe} is no index's column: {indexed:?}",
                kind.key
            );
        }
    }
}

/// The other fragments on the server: an IN list bound as one JSON array,
/// a substring test, a body path compared with each type of parameter, and
/// a body value read back as SQLite's `json_extract` reads it.
#[test]
fn the_other_fragments_run_and_answer_as_on_sqlite() {
    let (_, client) = fresh();
    let d = &POSTGRES;
    let ids: Vec<String> = client
        .query(
            &format!(
                "SELECT x FROM (VALUES ('alpha'), ('beta'), ('gamma'), ('it''s')) AS v (x) \
                 WHERE x IN ({}) AND {} ORDER BY x",
                d.in_json_list("?1"),
                d.contains("x", "?2")
            ),
            &[
                PgValue::Text(r#"["beta","gamma","it's","zeta"]"#.into()),
                PgValue::Text("a".into()),
            ],
        )
        .unwrap()
        .into_iter()
        .map(|row| row[0].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["beta", "gamma"]);
    let empty = client
        .query(
            &format!("SELECT 1 WHERE 'x' IN ({})", d.in_json_list("?")),
            &[PgValue::Text("[]".into())],
        )
        .unwrap();
    assert!(empty.is_empty());

    let body = r#"{"t":"a","n":2,"f":2.5,"b":true,"z":null,"o":{"k":"v"}}"#;
    let path = |p: &str| d.body_path(p).replace("body", "(?1::json)");
    for (p, ty, value, equal) in [
        ("$.t", FieldType::Text, PgValue::Text("a".into()), true),
        ("$.t", FieldType::Text, PgValue::Text("b".into()), false),
        ("$.n", FieldType::Number, PgValue::Real(2.0), true),
        ("$.n", FieldType::Number, PgValue::Integer(2), true),
        ("$.f", FieldType::Number, PgValue::Real(2.5), true),
        ("$.b", FieldType::Bool, PgValue::Integer(1), true),
        ("$.b", FieldType::Bool, PgValue::Integer(0), false),
    ] {
        let row = client
            .query_row(
                &format!(
                    "SELECT {} = {}, {}",
                    path(p),
                    d.body_param(ty, "?2"),
                    path(p)
                ),
                &[PgValue::Text(body.into()), value.clone()],
            )
            .unwrap()
            .unwrap();
        assert_eq!(row[0], PgValue::Integer(i64::from(equal)), "{p} {value:?}");
    }
    for (p, read) in [
        ("$.t", SqlValue::Text("a".into())),
        ("$.n", SqlValue::Integer(2)),
        ("$.f", SqlValue::Real(2.5)),
        ("$.b", SqlValue::Integer(1)),
        ("$.z", SqlValue::Null),
        ("$.missing", SqlValue::Null),
        ("$.o.k", SqlValue::Text("v".into())),
    ] {
        let row = client
            .query_row(
                &format!("SELECT {}", path(p)),
                &[PgValue::Text(body.into())],
            )
            .unwrap()
            .unwrap();
        let value = d.body_value(SqlValue::from(row[0].clone()));
        assert_eq!(value, read, "{p}");
        // And as SQLite reads it.
        let sqlite = Conn::empty_memory().unwrap();
        let direct: SqlValue = sqlite
            .query_row(
                &format!(
                    "SELECT {}",
                    quayside::db::dialect::SQLITE
                        .body_path(p)
                        .replace("body", "?1")
                ),
                [body],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(direct, read, "{p} on SQLite");
    }
}

/// The stores' own statements on body paths, in PostgreSQL's dialect: the
/// same answers as on SQLite, and (where an index serves them on SQLite) no
/// sequential scan of `documents`.
#[test]
fn the_stores_body_path_statements_answer_as_on_sqlite() {
    let (client, sqlite) = loaded();
    let sqlite_dialect = &quayside::db::dialect::SQLITE;
    let text = |s: &str| SqlValue::Text(s.into());
    let cases: Vec<(String, String, Vec<SqlValue>, bool)> = vec![
        (
            store::parent_of_count_sql(&POSTGRES),
            store::parent_of_count_sql(sqlite_dialect),
            vec![text("w"), text("job-w-0003")],
            true,
        ),
        (
            store::parent_of_count_sql(&POSTGRES),
            store::parent_of_count_sql(sqlite_dialect),
            vec![text("w"), text("job-w-0049")],
            true,
        ),
        (
            store::quantity_with_direction_sql(&POSTGRES),
            store::quantity_with_direction_sql(sqlite_dialect),
            vec![text("job-w-0002"), text("destination"), text("x")],
            true,
        ),
        (
            store::quantity_with_direction_sql(&POSTGRES),
            store::quantity_with_direction_sql(sqlite_dialect),
            vec![
                text("job-w-0002"),
                text("source"),
                text("quantityResult-0002-00"),
            ],
            true,
        ),
        // Not indexed on either engine (an organization is deleted rarely).
        (
            quayside::organizations::store::jobs_naming_sql(&POSTGRES),
            quayside::organizations::store::jobs_naming_sql(sqlite_dialect),
            vec![text("o")],
            false,
        ),
    ];
    for (pg_sql, sqlite_sql, params, indexed) in cases {
        let on_pg: Vec<SqlValue> = client
            .query(&pg_sql, &to_pg(&params))
            .unwrap()
            .into_iter()
            .map(|row| SqlValue::from(row[0].clone()))
            .collect();
        let on_sqlite: Vec<SqlValue> = sqlite
            .prepare(&sqlite_sql)
            .unwrap()
            .query_map(quayside::db::params_from_iter(params.iter()), |row| {
                row.get(0)
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(on_pg, on_sqlite, "{pg_sql} {params:?}");
        if indexed {
            assert_indexed(&client, &pg_sql, &params, false);
        }
    }
    // They found something: the counts are not all zero.
    let jobs = client
        .query_row(
            &quayside::organizations::store::jobs_naming_sql(&POSTGRES),
            &[PgValue::Text("o".into())],
        )
        .unwrap()
        .unwrap()[0]
        .as_i64()
        .unwrap();
    assert!(jobs > 100, "{jobs}");
}
