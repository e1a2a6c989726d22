//! Tenancy: a foreign tenant gets 404 on everything of a workspace and changes
//! nothing; the same tenant, the vendor and the admin see it; and the records
//! of one workspace are not reachable through another.

use super::*;

#[test]
fn a_foreign_tenant_gets_404_everywhere_and_changes_nothing() {
    let w = World::new();
    let f = w.furnish();
    let (mallory, _, _) = w.outsider("mallory");
    let paths = w.readable_paths(&f);
    let before = snapshot(&w.server, &w.alice, &paths);

    let (p1, p2) = &f.products;
    let mut requests: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", w.ws_path(), None),
        (
            "PATCH",
            w.ws_path(),
            Some(json!({"description": "mine now"})),
        ),
        ("DELETE", w.ws_path(), None),
        ("GET", w.jobs_path(), None),
        ("POST", w.jobs_path(), Some(json!({"notes": "intruder"}))),
        ("GET", w.job_path(&f.job), None),
        ("PATCH", w.job_path(&f.job), Some(json!({"notes": "x"}))),
        ("DELETE", w.job_path(&f.job), None),
    ];
    for (kind, id) in &f.results {
        let item = w.result_path(&f.job, kind, id);
        requests.extend([
            ("GET", w.results_path(&f.job, kind), None),
            ("POST", w.results_path(&f.job, kind), Some((kind.sample)())),
            ("GET", item.clone(), None),
            ("PATCH", item.clone(), Some((kind.patch)().0)),
            ("DELETE", item, None),
        ]);
    }
    for catalog in CATALOGS.iter().chain(&["methods", "timelogEvents"]) {
        requests.push(("GET", w.catalog_path(catalog), None));
        requests.push(("POST", w.catalog_path(catalog), Some(json!({"name": "x"}))));
    }
    let item = w.item_path("products", p1);
    requests.extend([
        ("GET", item.clone(), None),
        ("PATCH", item.clone(), Some(json!({"name": "renamed"}))),
        ("DELETE", item.clone(), None),
        ("GET", format!("{item}/synonyms"), None),
        ("GET", w.synonym_path("products", p1, p2), None),
        ("POST", w.synonym_path("products", p1, p2), Some(json!({}))),
        ("DELETE", w.synonym_path("products", p1, p2), None),
    ]);
    for (method, path, body) in &requests {
        let reply = match body {
            Some(body) => w.server.send_json(method, path, &mallory, body),
            None => w.server.request(method, path, Some(&mallory), &[], None),
        };
        assert_eq!(reply.status, 404, "{method} {path}: {}", reply.text());
        expect_404(&reply);
    }
    // The same requests on a workspace that does not exist answer alike.
    let missing = w
        .server
        .get(&format!("/workspaces/{MISSING}/jobs"), &mallory);
    expect_404(&missing);

    assert_eq!(snapshot(&w.server, &w.alice, &paths), before);
    let (ids, count) = list_ids(&w.server, &mallory, "/workspaces");
    assert_eq!(count, 1);
    assert!(!ids.contains(&w.ws));
}

#[test]
fn the_same_tenant_the_vendor_and_the_admin_see_the_workspace() {
    let w = World::new();
    let f = w.furnish();
    let paths = w.readable_paths(&f);
    let seen_by_alice = snapshot(&w.server, &w.alice, &paths);
    let colleague = w.server.add_user("alice2", &["--tenant-of", "alice"]);
    let (_, _, carol_ws) = w.outsider("carol");

    for key in [&colleague, &w.bob, &w.admin] {
        assert_eq!(snapshot(&w.server, key, &paths), seen_by_alice);
        let (ids, _) = list_ids(&w.server, key, "/workspaces");
        assert!(ids.contains(&w.ws));
    }
    assert_eq!(list_ids(&w.server, &colleague, "/workspaces").1, 1);
    assert_eq!(list_ids(&w.server, &w.bob, "/workspaces").1, 1);
    let (admin_ids, admin_count) = list_ids(&w.server, &w.admin, "/workspaces");
    assert_eq!(admin_count, 2);
    assert!(admin_ids.contains(&carol_ws));

    // Each may also write; catalog records record the writer's party.
    let (job, _) = w.create_job_as(&colleague, &json!({"notes": "by a colleague"}));
    let (_, quality) = w.create_result_as(&w.bob, &job, &QUALITY, &quality_sample());
    assert_eq!(quality["test"]["xref"], "DENS");
    let owner_of = |key: &str, name: &str| {
        w.create_item_as(key, "transports", &json!({"name": name}))
            .1["ownerParty"]
            .clone()
    };
    assert_eq!(owner_of(&colleague, "MT Alpha"), w.client_org.as_str());
    assert_eq!(owner_of(&w.bob, "MT Bravo"), w.vendor_org.as_str());
    assert_eq!(owner_of(&w.admin, "MT Charlie"), Value::Null);
    let renamed = expect(
        &w.server.patch(
            &w.ws_path(),
            &w.bob,
            &json!({"description": "vendor's word"}),
        ),
        200,
    );
    assert_eq!(renamed["body"]["description"], "vendor's word");
    // The admin reads a workspace of which it is no party.
    expect(
        &w.server.get(&format!("/workspaces/{carol_ws}"), &w.admin),
        200,
    );
}

#[test]
fn records_of_one_workspace_are_not_reachable_from_another() {
    let w = World::new();
    let (job, body) = w.create_job(json!({"location": {"xref": "NLRTM", "name": "Rotterdam"}}));
    let location = text(&body["location"]);
    let other = w.shared("other");
    let other_jobs = format!("/workspaces/{other}/jobs");
    let other_item = format!("/workspaces/{other}/catalogs/locations/{location}");

    // A job, a catalog record and a synonym link only through their own workspace.
    expect_404(&w.server.get(&format!("{other_jobs}/{job}"), &w.alice));
    expect_404(&w.server.patch(
        &format!("{other_jobs}/{job}"),
        &w.alice,
        &json!({"notes": "x"}),
    ));
    expect_404(&w.server.delete(&format!("{other_jobs}/{job}"), &w.alice));
    expect_404(&w.server.get(&other_item, &w.alice));
    expect_404(&w.server.patch(&other_item, &w.alice, &json!({"name": "x"})));
    expect_404(&w.server.delete(&other_item, &w.alice));
    let (local, _) = envelope(&expect(
        &w.server.post(
            &format!("/workspaces/{other}/catalogs/locations"),
            &w.alice,
            &json!({"name": "Rotterdam", "xref": "NLRTM"}),
        ),
        201,
    ));
    expect_404(&w.server.post(
        &format!("/workspaces/{other}/catalogs/locations/{local}/synonyms/{location}"),
        &w.alice,
        &json!({}),
    ));

    // A record id of another workspace is no reference here; an xref resolves locally.
    let reply = w
        .server
        .post(&other_jobs, &w.alice, &json!({"location": location}));
    expect_error(&reply, 400, "invalid_field", Some("location"));
    let (_, there) = envelope(&expect(
        &w.server.post(
            &other_jobs,
            &w.alice,
            &json!({"location": {"xref": "NLRTM"}}),
        ),
        201,
    ));
    assert_eq!(there["location"], local.as_str());
    assert_eq!(w.read(&w.job_path(&job)), body);
}
