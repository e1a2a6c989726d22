//! The plans of the lists other than documents on PostgreSQL (issue 16: "the
//! same on PostgreSQL"; the documents lists are `dialect.rs`'s). A tenant's
//! workspaces among another tenant's many, every workspace for an
//! administrator, a workspace's catalog (all of it and by xref), its
//! synonyms, a document's attachments, a webhook's delivery log, and the
//! catalog lookup by xref that every write naming a record
//! by xref makes: each statement the list runs (`listing::observed`, the
//! lists' own SQL on a PostgreSQL `Conn`) is explained with
//! `EXPLAIN (FORMAT JSON)` before and after `ANALYZE`. Each must read its
//! table through an index, never a sequential scan that grows with the
//! table, with or without statistics; with them, a first page must come in
//! the index's order, with no sort of the whole result. Without statistics
//! PostgreSQL takes a range it guesses small by a bitmap and sorts it (a
//! document's attachments, a workspace's synonyms of every catalog), or
//! walks a list index filtering (a catalog by xref): a database has
//! statistics after an import or a migrate (both analyze) and from
//! autovacuum as its tables grow, and SQLite, which never analyzes by
//! itself, is held to both (`src/documents/plans.rs`).

use quayside::attachments::store as attachments;
use quayside::auth::principal::Principal;
use quayside::catalogs::{CatalogName, store as catalogs, synonyms};
use quayside::db::Value as SqlValue;
use quayside::db::pg::{Client, apply_schema};
use quayside::db::{Conn, dialect::FieldType};
use quayside::listing::{self, ColumnFields, Generation, observed};
use quayside::webhooks::store as webhooks;
use quayside::workspaces::store as workspaces;

use super::{fresh, plan_nodes};

/// Workspaces in all: one in six is tenant A's, the rest tenant B's.
const WORKSPACES: i64 = 6_000;
/// Catalog records of each of the first workspaces, and those workspaces.
const ITEMS_PER_WORKSPACE: i64 = 400;
const WORKSPACES_WITH_ITEMS: i64 = 25;

/// The tables the lists read.
const LISTED: [&str; 6] = [
    "workspaces",
    "workspace_members",
    "catalog_items",
    "synonyms",
    "attachments",
    "webhook_deliveries",
];
/// Documents with attachments, and attachments of each; webhooks, and the
/// deliveries in the log of each.
const DOCUMENTS: i64 = 20;
const ATTACHMENTS_PER_DOCUMENT: i64 = 200;
const WEBHOOKS: i64 = 20;
const DELIVERIES_PER_WEBHOOK: i64 = 1_000;

/// Loads the rows with `generate_series` (one statement per table).
fn load(client: &Client) {
    client
        .batch_execute(&format!(
            "INSERT INTO organizations (id, name, name_folded, audience, created_at, updated_at) \
                 VALUES ('org-a', 'A', 'a', 'tenant-a', 0, 0), ('org-b', 'B', 'b', 'tenant-b', 0, 0);
             INSERT INTO workspaces (id, client_id, vendor_id, created_at, updated_at) \
                 SELECT 'ws-' || lpad(w::text, 5, '0'), \
                        CASE WHEN w % 6 = 0 THEN 'org-a' ELSE 'org-b' END, \
                        CASE WHEN w % 6 = 0 THEN 'org-a' ELSE 'org-b' END, w / 3, w / 3 \
                 FROM generate_series(0, {last_ws}) AS w;
             INSERT INTO workspace_members (tenant, workspace_id, created_at) \
                 SELECT CASE WHEN w % 6 = 0 THEN 'tenant-a' ELSE 'tenant-b' END, \
                        'ws-' || lpad(w::text, 5, '0'), w / 3 \
                 FROM generate_series(0, {last_ws}) AS w;
             INSERT INTO catalog_items (id, workspace_id, catalog, name, name_folded, xref, \
                                        created_at, updated_at) \
                 SELECT 'item-' || w || '-' || i, 'ws-' || lpad(w::text, 5, '0'), \
                        CASE WHEN i % 2 = 0 THEN 'locations' ELSE 'tests' END, \
                        'Item ' || i, 'item ' || i, \
                        CASE WHEN i % 5 = 0 THEN NULL ELSE 'L' || i END, i / 2, i / 2 \
                 FROM generate_series(0, {last_items_ws}) AS w, \
                      generate_series(0, {last_item}) AS i;
             INSERT INTO synonyms (id, workspace_id, catalog, base_item, linked_item, \
                                   created_at, updated_at) \
                 SELECT 'syn-' || w || '-' || i, 'ws-' || lpad(w::text, 5, '0'), CASE WHEN i % 8 = 0 THEN 'locations' ELSE 'tests' END, \
                        'item-' || w || '-' || i, 'item-' || w || '-' || (i + 2), i / 4, i / 4 \
                 FROM generate_series(0, {last_items_ws}) AS w, \
                      generate_series(0, {last_pair}, 4) AS i;
             INSERT INTO documents (id, workspace_id, kind, job_id, body, created_at, updated_at) \
                 SELECT 'job-' || d, 'ws-00003', 'job', NULL, '{{}}', d, d \
                 FROM generate_series(0, {last_document}) AS d;
             INSERT INTO blobs (id, size, sha256, complete, created_at) \
                 SELECT 'blob-' || d || '-' || a, 1, 'x', 1, a \
                 FROM generate_series(0, {last_document}) AS d, \
                      generate_series(0, {last_attachment}) AS a;
             INSERT INTO attachments (id, workspace_id, document_id, blob_id, caption, format, \
                                      created_at, updated_at) \
                 SELECT 'att-' || d || '-' || a, 'ws-00003', 'job-' || d, 'blob-' || d || '-' || a, \
                        'c', 'pdf', a / 2, a / 2 \
                 FROM generate_series(0, {last_document}) AS d, \
                      generate_series(0, {last_attachment}) AS a;
             INSERT INTO webhooks (id, tenant, created_by, url, event_types, active, secret, \
                                   cursor, created_at, updated_at) \
                 SELECT 'hook-' || h, 'tenant-' || h, 'u', 'https://example.com/', '[]', 1, 's', \
                        0, h, h \
                 FROM generate_series(0, {last_webhook}) AS h;
             INSERT INTO webhook_deliveries (id, webhook_id, seq, event_id, event_type, attempt, \
                                             outcome, created_at, updated_at) \
                 SELECT 'del-' || h || '-' || n, 'hook-' || h, n, 'e', 'job.created', 1, \
                        'succeeded', n / 2, n / 2 \
                 FROM generate_series(0, {last_webhook}) AS h, \
                      generate_series(0, {last_delivery}) AS n;",
            last_ws = WORKSPACES - 1,
            last_items_ws = WORKSPACES_WITH_ITEMS - 1,
            last_item = ITEMS_PER_WORKSPACE - 1,
            last_pair = ITEMS_PER_WORKSPACE - 3,
            last_document = DOCUMENTS - 1,
            last_attachment = ATTACHMENTS_PER_DOCUMENT - 1,
            last_webhook = WEBHOOKS - 1,
            last_delivery = DELIVERIES_PER_WEBHOOK - 1,
        ))
        .unwrap();
}

fn user(tenant: &str, is_admin: bool) -> Principal {
    Principal {
        account_id: 1,
        username: "u".into(),
        tenant: tenant.into(),
        is_admin,
    }
}

fn query(
    pairs: &[(&str, &str)],
    generation: Generation,
    fields: &ColumnFields,
) -> listing::ListQuery {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    listing::parse(&pairs, generation, fields, &[]).unwrap()
}

/// The plan of `sql` with `params` on the PostgreSQL connection.
fn explain(conn: &Conn, sql: &str, params: &[SqlValue]) -> serde_json::Value {
    let Conn::Pg(client) = conn else {
        unreachable!("a PostgreSQL connection")
    };
    super::explain(client, sql, params)
}

/// Asserts that the plan of `sql` searches `index`.
fn assert_uses(conn: &Conn, what: &str, sql: &str, params: &[SqlValue], index: &str) {
    let plan = explain(conn, sql, params);
    let all = plan_nodes(&plan);
    assert!(
        all.iter().any(|n| n["Index Name"] == index),
        "{what}: {index} not used:\n{sql}\n{plan:#}"
    );
}

/// Asserts that `sql` reads every listed table it names through an index
/// (or a bounded read, below), and with `in_order`, that no whole result is
/// sorted.
fn assert_indexed(conn: &Conn, what: &str, sql: &str, params: &[SqlValue], in_order: bool) {
    let plan = explain(conn, sql, params);
    let all = plan_nodes(&plan);
    let reads: Vec<&serde_json::Value> = all
        .iter()
        .copied()
        .filter(|n| {
            n["Relation Name"]
                .as_str()
                .is_some_and(|t| LISTED.contains(&t))
        })
        .collect();
    assert!(
        !reads.is_empty(),
        "{what}: no listed table read:\n{sql}\n{plan:#}"
    );
    // A sequential read that filters nothing, sorts nothing and stops at a
    // LIMIT reads that many rows whatever the table's size (an
    // administrator's capped count of every workspace): bounded, as an
    // index search is.
    let sorts = all
        .iter()
        .any(|n| matches!(n["Node Type"].as_str(), Some("Sort" | "Incremental Sort")));
    let limited = all.iter().any(|n| n["Node Type"] == "Limit");
    for read in reads {
        let bounded = read.get("Filter").is_none() && !sorts && limited;
        assert!(
            read["Node Type"] != "Seq Scan" || bounded,
            "{what}: {} scanned, not searched:\n{sql}\n{plan:#}",
            read["Relation Name"]
        );
    }
    // An incremental sort only orders the rows of equal leading keys that
    // the index gives in order (the v2 order, created_at descending and id
    // ascending, read from an index in one direction: only equal creation
    // times), as SQLite's "TEMP B-TREE FOR RIGHT PART OF ORDER BY" does.
    if in_order {
        assert!(
            !all.iter().any(|n| n["Node Type"] == "Sort"),
            "{what}: sorted, not read in the index's order:\n{sql}\n{plan:#}"
        );
    }
}

/// Runs `list`, then checks the plan of every statement it ran: no
/// sequential scan that grows with the table, and with `ordered` (a first
/// page, with statistics) no sort of the whole result.
fn check(conn: &Conn, what: &str, ordered: bool, list: impl FnOnce()) {
    let ran = observed::statements(list);
    assert!(!ran.is_empty(), "{what}: no statement ran");
    for (sql, params) in ran {
        // The (capped) count may gather its rows in any order.
        let is_count = sql.starts_with("SELECT count(");
        assert_indexed(conn, what, &sql, &params, ordered && !is_count);
    }
}

#[test]
fn the_lists_other_than_documents_search_their_index_with_or_without_statistics() {
    let (_, client) = fresh();
    apply_schema(&client).unwrap();
    load(&client);
    let conn = Conn::Pg(Box::new(client));
    let workspace_fields = ColumnFields(&[]);
    let catalog_fields = ColumnFields(&[("xref", "xref", FieldType::Text)]);
    for analyzed in [false, true] {
        if analyzed {
            conn.execute_batch("ANALYZE").unwrap();
        }
        let state = if analyzed {
            "analyzed"
        } else {
            "no statistics"
        };
        for generation in [Generation::Older, Generation::V2] {
            let first = query(&[("limit", "5")], generation, &workspace_fields);
            for principal in [user("tenant-a", false), user("root", true)] {
                let page = workspaces::list(&conn, &principal, &first).unwrap();
                assert_eq!(page.rows.len(), 5);
                let cursor = page.next.expect("a next page");
                let next = query(
                    &[("limit", "5"), ("after", &cursor)],
                    generation,
                    &workspace_fields,
                );
                let who = if principal.is_admin {
                    "an administrator's"
                } else {
                    "a tenant's"
                };
                check(
                    &conn,
                    &format!("{who} workspaces, {generation:?}, {state}"),
                    analyzed,
                    || {
                        workspaces::list(&conn, &principal, &first).unwrap();
                    },
                );
                check(
                    &conn,
                    &format!("{who} workspaces after a cursor, {generation:?}, {state}"),
                    false,
                    || {
                        workspaces::list(&conn, &principal, &next).unwrap();
                    },
                );
            }
        }
        // The catalogs and synonyms have the older paths only.
        let all = query(&[("limit", "25")], Generation::Older, &catalog_fields);
        let by_xref = query(&[("xref", "L7")], Generation::Older, &catalog_fields);
        let page = catalogs::list(&conn, "ws-00003", CatalogName::Locations, &all).unwrap();
        assert_eq!(page.rows.len(), 25);
        let next = query(
            &[("limit", "25"), ("after", &page.next.unwrap())],
            Generation::Older,
            &catalog_fields,
        );
        check(&conn, &format!("a catalog, {state}"), analyzed, || {
            catalogs::list(&conn, "ws-00003", CatalogName::Locations, &all).unwrap();
        });
        check(
            &conn,
            &format!("a catalog after a cursor, {state}"),
            false,
            || {
                catalogs::list(&conn, "ws-00003", CatalogName::Locations, &next).unwrap();
            },
        );
        // By xref: the unique index finds at most one record, which the
        // plan may sort (a sort of one row). Without statistics PostgreSQL
        // walks the workspace's catalog in its list order instead, filtering
        // (an index, so not caught above): the index is held when analyzed.
        let ran = observed::statements(|| {
            let page = catalogs::list(&conn, "ws-00003", CatalogName::Tests, &by_xref).unwrap();
            assert_eq!(page.rows.len(), 1);
        });
        assert_eq!(ran.len(), 1, "{ran:?}");
        let (sql, params) = &ran[0];
        let what = format!("a catalog by xref, {state}");
        assert_indexed(&conn, &what, sql, params, false);
        if analyzed {
            assert_uses(&conn, &what, sql, params, "catalog_items_xref");
        }
        // A workspace's synonyms, of one catalog and of every one.
        let links = query(&[("limit", "10")], Generation::Older, &ColumnFields(&[]));
        for catalog in [Some("locations"), None] {
            let scope = synonyms::Scope::Workspace {
                workspace: "ws-00003",
                catalog,
            };
            check(
                &conn,
                &format!("a workspace's synonyms of {catalog:?}, {state}"),
                analyzed,
                || {
                    let page = synonyms::list(&conn, &scope, &links).unwrap();
                    assert_eq!(page.rows.len(), 10);
                },
            );
        }
        // A document's attachments and a webhook's delivery log, each
        // among others': the first page and the next.
        for generation in [Generation::Older, Generation::V2] {
            let first = query(&[("limit", "5")], generation, &ColumnFields(&[]));
            let page = attachments::list(&conn, "job-7", &first).unwrap();
            let next = query(
                &[("limit", "5"), ("after", &page.next.unwrap())],
                generation,
                &ColumnFields(&[]),
            );
            check(
                &conn,
                &format!("a document's attachments, {generation:?}, {state}"),
                analyzed,
                || {
                    assert_eq!(
                        attachments::list(&conn, "job-7", &first)
                            .unwrap()
                            .rows
                            .len(),
                        5
                    );
                },
            );
            check(
                &conn,
                &format!("a document's attachments after a cursor, {generation:?}, {state}"),
                false,
                || {
                    assert_eq!(
                        attachments::list(&conn, "job-7", &next).unwrap().rows.len(),
                        5
                    );
                },
            );
        }
        let first = query(&[("limit", "5")], Generation::V2, &ColumnFields(&[]));
        let page = webhooks::deliveries(&conn, "hook-7", &first).unwrap();
        let next = query(
            &[("limit", "5"), ("after", &page.next.unwrap())],
            Generation::V2,
            &ColumnFields(&[]),
        );
        check(
            &conn,
            &format!("a webhook's deliveries, {state}"),
            analyzed,
            || {
                assert_eq!(
                    webhooks::deliveries(&conn, "hook-7", &first)
                        .unwrap()
                        .rows
                        .len(),
                    5
                );
            },
        );
        check(
            &conn,
            &format!("a webhook's deliveries after a cursor, {state}"),
            false,
            || {
                assert_eq!(
                    webhooks::deliveries(&conn, "hook-7", &next)
                        .unwrap()
                        .rows
                        .len(),
                    5
                );
            },
        );
        let xref = catalogs::find_by_xref_sql();
        let what = format!("the catalog lookup by xref, {state}");
        let params = [
            SqlValue::Text("ws-00003".into()),
            SqlValue::Text("tests".into()),
            SqlValue::Text("L7".into()),
        ];
        assert_indexed(&conn, &what, &xref, &params, true);
        assert_uses(&conn, &what, &xref, &params, "catalog_items_xref");
    }
}
