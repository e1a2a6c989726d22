//! The plans of the lists (issue #16): every list of documents, each indexed
//! filter and sort, the first page and a page after a cursor, and the count,
//! read with `EXPLAIN QUERY PLAN` on a file without statistics, on one
//! with them, and on one whose statistics were taken when it held one record
//! of each (as a server started on a new file takes them). Each must search an index, never scan the documents, and the
//! default order and a sort on one indexed field must come from the index,
//! without a temporary B-tree. The SQL is the lists' own
//! ([`crate::listing::statements`]), not a copy.

#[cfg(test)]
mod tests {
    use crate::db::Value as SqlValue;
    use crate::db::{Conn, params};

    use super::super::kinds::{self, Kind};
    use super::super::store::{self, BodyFields};
    use crate::listing::{self, Generation};

    /// A file with one workspace, 300 jobs and 6 documents of each kind under
    /// each of the first 40 jobs: the skew (most documents are results, every
    /// job's `job_id` is NULL) that once turned the planner's choice once it had
    /// statistics.
    /// The planner's statistics a file may have: none; taken on the loaded
    /// file; or stale, taken when it held one record of each (as a server
    /// started on a new file takes them) and never again.
    /// Or stale and then refreshed as the server does it
    /// (`db::statistics::refresh`: the tables that grew tenfold).
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Stats {
        None,
        Fresh,
        Stale,
        Refreshed,
    }
    const STATS: [Stats; 4] = [Stats::None, Stats::Fresh, Stats::Stale, Stats::Refreshed];

    /// The statistics `statistics` asks for, once the file is loaded (stale
    /// ones are taken during the load).
    fn finish_statistics(conn: &Conn, statistics: Stats) {
        match statistics {
            Stats::Fresh => conn.execute_batch("ANALYZE").unwrap(),
            Stats::Refreshed => {
                crate::db::statistics::refresh(conn.sqlite(), crate::db::statistics::ANALYZED_UP_TO)
                    .unwrap()
            }
            Stats::None | Stats::Stale => {}
        }
    }

    fn loaded(statistics: Stats) -> (tempfile::TempDir, Conn, String) {
        let dir = tempfile::tempdir().unwrap();
        let conn = Conn::open(&dir.path().join("plans.db")).unwrap();
        conn.execute(
            "INSERT INTO workspaces (id, created_at, updated_at) VALUES ('w', 0, 0)",
            [],
        )
        .unwrap();
        let statuses = ["pending", "active", "complete", "cancelled"];
        let mut first_job = String::new();
        for j in 0..300 {
            if j == 1 && matches!(statistics, Stats::Stale | Stats::Refreshed) {
                conn.execute_batch("ANALYZE").unwrap();
            }
            let job = format!("job-{j:04}");
            let body = serde_json::json!({
                "xref": format!("X{j}"), "refNumber": format!("R{j}"),
                "status": statuses[j % 4], "activity": "load",
                "eta": format!("2026-{:02}-01T00:00:00.000Z", j % 12 + 1),
                "etc": "2026-12-01T00:00:00.000Z",
            });
            conn.execute(
                "INSERT INTO documents (id, workspace_id, kind, job_id, body, created_at, updated_at) \
                 VALUES (?1, 'w', 'job', NULL, ?2, ?3, ?3)",
                params![job, body.to_string(), j as i64],
            )
            .unwrap();
            if j >= 40 {
                continue;
            }
            if j == 0 {
                first_job = job.clone();
            }
            for kind in &kinds::ALL[1..] {
                for r in 0..6 {
                    let body = serde_json::json!({
                        "status": "confirmed", "setNumber": r, "date": "2026-01-01T00:00:00.000Z",
                        "direction": if r == 0 { "source" } else { "destination" },
                    });
                    // One quantity result per direction per job.
                    if kind.key == "quantityResult" && r > 1 {
                        continue;
                    }
                    conn.execute(
                        "INSERT INTO documents (id, workspace_id, kind, job_id, body, created_at, \
                         updated_at) VALUES (?1, 'w', ?2, ?3, ?4, ?5, ?5)",
                        params![
                            format!("{}-{job}-{r}", kind.key),
                            kind.key,
                            job,
                            body.to_string(),
                            r
                        ],
                    )
                    .unwrap();
                }
            }
        }
        finish_statistics(&conn, statistics);
        let stats: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_stat1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(stats == 1, statistics != Stats::None);
        (dir, conn, first_job)
    }

    fn plan(conn: &Conn, sql: &str, params: &[SqlValue]) -> Vec<String> {
        conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map(crate::db::params_from_iter(params), |row| {
                row.get::<_, String>(3)
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// The list's statements for `pairs` (and the same after a cursor from its
    /// first page), each with its plan.
    fn plans(
        conn: &Conn,
        kind: &'static Kind,
        job: Option<&str>,
        pairs: &[(&str, &str)],
    ) -> Vec<(String, Vec<String>)> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let fields = BodyFields(kind);
        let query = listing::parse(&pairs, Generation::Older, &fields, &[]).unwrap();
        let (condition, params) = store::list_condition("w", kind, job);
        let mut first = query.clone();
        first.limit = 1;
        let page = store::list(conn, "w", kind, job, &first).unwrap();
        let mut queries = vec![query.clone()];
        if let Some(cursor) = page.next {
            let mut with = pairs.clone();
            with.push(("after".into(), cursor));
            queries.push(listing::parse(&with, Generation::Older, &fields, &[]).unwrap());
        }
        let mut out = Vec::new();
        for q in queries {
            let statements = listing::statements(
                conn.dialect(),
                "id",
                "FROM documents",
                &condition,
                params.clone(),
                &q,
            );
            let params = statements.params;
            out.push((
                statements.count.clone(),
                plan(conn, &statements.count, &params),
            ));
            for (sql, segment_params) in statements.pages {
                let mut all = params.clone();
                all.extend(segment_params);
                all.extend([SqlValue::Integer(26), SqlValue::Integer(0)]);
                let p = plan(conn, &sql, &all);
                out.push((sql, p));
            }
        }
        out
    }

    fn assert_searched(sql: &str, plan: &[String], sorted_by_index: bool) {
        let text = plan.join(" | ");
        assert!(
            plan.iter().any(|l| l.starts_with("SEARCH documents USING")),
            "no index search:\n{sql}\n{text}"
        );
        assert!(
            !plan.iter().any(|l| l.starts_with("SCAN documents")),
            "a scan of the documents:\n{sql}\n{text}"
        );
        if sorted_by_index {
            assert!(
                !text.contains("TEMP B-TREE"),
                "the order is sorted, not read from the index:\n{sql}\n{text}"
            );
        }
    }

    #[test]
    fn every_list_searches_an_index_with_or_without_statistics_fresh_or_stale() {
        for statistics in STATS {
            let (_dir, conn, job) = loaded(statistics);
            for kind in kinds::ALL {
                let job = (!kind.is_job()).then_some(job.as_str());
                // The default order, and a filter on each indexed field with it.
                let mut cases: Vec<(Vec<(&str, String)>, bool)> = vec![(vec![], true)];
                for field in kind.indexed {
                    let value = match *field {
                        "setNumber" => "1".to_string(),
                        "status" if !kind.is_job() => "confirmed".to_string(),
                        "status" => "active".to_string(),
                        "direction" => "source".to_string(),
                        _ => "x".to_string(),
                    };
                    cases.push((vec![(*field, value)], true));
                    // A job has at most two quantity results, one per direction
                    // (a unique index): sorting them by direction is sorting two.
                    let by_index = !(kind.key == "quantityResult" && *field == "direction");
                    for direction in ["asc", "desc"] {
                        cases.push((vec![("sort", format!("{field}:{direction}"))], by_index));
                    }
                }
                if kind.is_job() {
                    cases.push((
                        vec![("status", "active".into()), ("sort", "eta:desc".into())],
                        true,
                    ));
                    // An unindexed field still searches the jobs' index (and
                    // filters what it finds).
                    cases.push((vec![("tripNumber", "T1".into())], true));
                }
                for (pairs, sorted_by_index) in cases {
                    let pairs: Vec<(&str, &str)> =
                        pairs.iter().map(|(a, b)| (*a, b.as_str())).collect();
                    for (sql, plan) in plans(&conn, kind, job, &pairs) {
                        assert_searched(&sql, &plan, sorted_by_index);
                    }
                }
            }
        }
    }

    /// The plan's index for a filter on an indexed field is that field's own.
    #[test]
    fn a_filter_on_an_indexed_job_field_uses_that_field_s_index() {
        for statistics in STATS {
            let (_dir, conn, _) = loaded(statistics);
            for (field, index) in [
                ("xref", "documents_jobs_xref"),
                ("refNumber", "documents_jobs_ref_number"),
                ("status", "documents_jobs_status"),
                ("eta", "documents_jobs_eta"),
            ] {
                let found = plans(&conn, &kinds::JOB, None, &[(field, "x")]);
                let (sql, plan) = &found[1];
                assert!(
                    plan.iter().any(|l| l.contains(&format!("INDEX {index} "))),
                    "{field} (statistics: {statistics:?}):\n{sql}\n{plan:?}"
                );
            }
        }
    }

    /// The other lists an integrator pages through at scale: a tenant's
    /// workspaces (of many, among another tenant's many), every workspace
    /// for an administrator, a catalog by xref, a workspace's synonyms, a
    /// document's attachments, a webhook's delivery log; and the catalog lookup by
    /// xref that every write naming a record by xref makes.
    #[test]
    fn the_workspace_and_catalog_lists_search_their_index() {
        use crate::auth::principal::Principal;
        use crate::catalogs::{CatalogName, store as catalogs, synonyms};
        use crate::workspaces::store as workspaces;
        for statistics in STATS {
            let dir = tempfile::tempdir().unwrap();
            let conn = Conn::open(&dir.path().join("lists.db")).unwrap();
            for (org, tenant) in [("org-a", "tenant-a"), ("org-b", "tenant-b")] {
                conn.execute(
                    "INSERT INTO organizations (id, name, name_folded, audience, created_at, \
                     updated_at) VALUES (?1, ?1, ?1, ?2, 0, 0)",
                    params![org, tenant],
                )
                .unwrap();
            }
            for w in 0..300 {
                if w == 1 && matches!(statistics, Stats::Stale | Stats::Refreshed) {
                    conn.execute_batch("ANALYZE").unwrap();
                }
                let org = if w % 6 == 0 { "org-a" } else { "org-b" };
                conn.execute(
                    "INSERT INTO workspaces (id, client_id, vendor_id, created_at, updated_at) \
                     VALUES (?1, ?2, ?2, ?3, ?3)",
                    params![format!("ws-{w:03}"), org, w],
                )
                .unwrap();
                conn.execute(
                    "INSERT INTO workspace_members (tenant, workspace_id, created_at) \
                     SELECT audience, ?1, ?2 FROM organizations WHERE id = ?3",
                    params![format!("ws-{w:03}"), w, org],
                )
                .unwrap();
                conn.execute(
                    "INSERT INTO catalog_items (id, workspace_id, catalog, name, name_folded, \
                     xref, created_at, updated_at) VALUES (?1, 'ws-000', 'locations', ?1, ?1, \
                     ?2, ?3, ?3)",
                    params![format!("item-{w:03}"), format!("L{w}"), w],
                )
                .unwrap();
                if w > 0 {
                    conn.execute(
                        "INSERT INTO synonyms (id, workspace_id, catalog, base_item, linked_item, \
                         created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
                        params![
                            format!("syn-{w:03}"),
                            format!("ws-{:03}", w % 5),
                            if w % 2 == 0 { "locations" } else { "tests" },
                            format!("item-{:03}", w - 1),
                            format!("item-{w:03}"),
                            w
                        ],
                    )
                    .unwrap();
                }
                // A document's attachments and a webhook's delivery log,
                // each among four others'.
                if w < 5 {
                    conn.execute(
                        "INSERT INTO documents (id, workspace_id, kind, job_id, body, created_at, \
                         updated_at) VALUES (?1, 'ws-000', 'job', NULL, '{}', ?2, ?2)",
                        params![format!("job-{w}"), w],
                    )
                    .unwrap();
                    conn.execute(
                        "INSERT INTO webhooks (id, tenant, created_by, url, event_types, active, \
                         secret, cursor, created_at, updated_at) \
                         VALUES (?1, 't', 'u', 'https://example.com/', '[]', 1, 's', 0, ?2, ?2)",
                        params![format!("hook-{w}"), w],
                    )
                    .unwrap();
                }
                conn.execute(
                    "INSERT INTO blobs (id, size, sha256, complete, created_at) \
                     VALUES (?1, 1, 'x', 1, ?2)",
                    params![format!("blob-{w:03}"), w],
                )
                .unwrap();
                conn.execute(
                    "INSERT INTO attachments (id, workspace_id, document_id, blob_id, caption, \
                     format, created_at, updated_at) \
                     VALUES (?1, 'ws-000', ?2, ?3, 'c', 'pdf', ?4, ?4)",
                    params![
                        format!("att-{w:03}"),
                        format!("job-{}", w % 5),
                        format!("blob-{w:03}"),
                        w / 10
                    ],
                )
                .unwrap();
                conn.execute(
                    "INSERT INTO webhook_deliveries (id, webhook_id, seq, event_id, event_type, \
                     attempt, outcome, created_at, updated_at) \
                     VALUES (?1, ?2, ?3, 'e', 'job.created', 1, 'succeeded', ?4, ?4)",
                    params![format!("del-{w:03}"), format!("hook-{}", w % 5), w, w / 10],
                )
                .unwrap();
            }
            finish_statistics(&conn, statistics);
            let user = |tenant: &str, is_admin| Principal {
                account_id: 1,
                username: "u".into(),
                tenant: tenant.into(),
                is_admin,
            };
            let fields = listing::ColumnFields(&[("xref", "xref", listing::FieldType::Text)]);
            for generation in [Generation::Older, Generation::V2] {
                let query = |pairs: &[(&str, &str)]| {
                    let pairs: Vec<(String, String)> = pairs
                        .iter()
                        .map(|(a, b)| (a.to_string(), b.to_string()))
                        .collect();
                    listing::parse(&pairs, generation, &fields, &[]).unwrap()
                };
                let q = query(&[("limit", "5")]);
                let mut ran = Vec::new();
                for principal in [user("tenant-a", false), user("x", true)] {
                    let page = workspaces::list(&conn, &principal, &q).unwrap();
                    let cursor = page.next.unwrap();
                    let next = query(&[("limit", "5"), ("after", &cursor)]);
                    ran.extend(listing::tests::plans_of(&conn, || {
                        workspaces::list(&conn, &principal, &q).unwrap();
                        workspaces::list(&conn, &principal, &next).unwrap();
                    }));
                }
                // The catalogs have the older paths only.
                let q = listing::parse(
                    &[("xref".to_string(), "L7".to_string())],
                    Generation::Older,
                    &fields,
                    &[],
                )
                .unwrap();
                ran.extend(listing::tests::plans_of(&conn, || {
                    catalogs::list(&conn, "ws-000", CatalogName::Locations, &q).unwrap();
                }));
                // A workspace's synonyms, of one catalog and of all.
                let links = listing::parse(
                    &[("limit".to_string(), "10".to_string())],
                    Generation::Older,
                    &listing::ColumnFields(&[]),
                    &[],
                )
                .unwrap();
                for catalog in [Some("locations"), None] {
                    let scope = synonyms::Scope::Workspace {
                        workspace: "ws-000",
                        catalog,
                    };
                    ran.extend(listing::tests::plans_of(&conn, || {
                        let page = synonyms::list(&conn, &scope, &links).unwrap();
                        assert_eq!(page.rows.len(), 10);
                    }));
                }
                // A document's attachments and a webhook's deliveries: the
                // first page and the next.
                let five = listing::parse(
                    &[("limit".to_string(), "5".to_string())],
                    generation,
                    &listing::ColumnFields(&[]),
                    &[],
                )
                .unwrap();
                let after = |cursor: String| {
                    listing::parse(
                        &[
                            ("limit".to_string(), "5".to_string()),
                            ("after".to_string(), cursor),
                        ],
                        generation,
                        &listing::ColumnFields(&[]),
                        &[],
                    )
                    .unwrap()
                };
                let files = crate::attachments::store::list(&conn, "job-2", &five).unwrap();
                let files_next = after(files.next.unwrap());
                let log = crate::webhooks::store::deliveries(&conn, "hook-2", &five).unwrap();
                let log_next = after(log.next.unwrap());
                ran.extend(listing::tests::plans_of(&conn, || {
                    for query in [&five, &files_next] {
                        let page = crate::attachments::store::list(&conn, "job-2", query).unwrap();
                        assert_eq!(page.rows.len(), 5);
                    }
                    for query in [&five, &log_next] {
                        let page =
                            crate::webhooks::store::deliveries(&conn, "hook-2", query).unwrap();
                        assert_eq!(page.rows.len(), 5);
                    }
                }));
                assert!(ran.len() >= 11, "{ran:?}");
                for (sql, plan) in ran {
                    let text = plan.join(" | ");
                    // An index searched, or (for an administrator, who sees
                    // every workspace) read in order up to the page's end.
                    for line in &plan {
                        assert!(
                            !line.starts_with("SCAN ")
                                || line.starts_with("SCAN (subquery")
                                || line.contains("INDEX workspaces_created"),
                            "a scan:\n{sql}\n{text}"
                        );
                    }
                    // The v2 order (created_at:desc, id:asc) is read from the
                    // index and only equal creation times are sorted.
                    let sorted = text.contains("USE TEMP B-TREE FOR ORDER BY");
                    assert!(!sorted, "sorted, not read from the index:\n{sql}\n{text}");
                }
            }
            let plan: Vec<String> = conn
                .prepare(&format!(
                    "EXPLAIN QUERY PLAN {}",
                    crate::catalogs::store::find_by_xref_sql()
                ))
                .unwrap()
                .query_map(params!["ws-000", "locations", "L7"], |row| row.get(3))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert!(
                plan.iter()
                    .any(|l: &String| l.contains("USING INDEX catalog_items_xref")),
                "{plan:?}"
            );
        }
    }
}
