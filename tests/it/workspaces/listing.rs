//! Lists: what a tenant sees, filters, sort and paging, on workspaces, jobs and
//! results.

use super::*;

#[test]
fn workspace_list_shows_only_visible_ones_with_filters_sort_and_paging() {
    let w = World::new();
    let mut named = vec![("Rotterdam crude".to_string(), w.ws.clone())];
    for description in ["Charlie", "Alpha", "Bravo"] {
        let id = w.shared(description);
        named.push((description.to_string(), id));
    }
    let (_carol, _, carol_ws) = w.outsider("carol");
    let id_of = |description: &str| {
        named
            .iter()
            .find(|(d, _)| d == description)
            .map(|(_, id)| id.clone())
            .expect("known description")
    };
    let page = |key: &str, params: &[(&str, &str)]| {
        list_ids(&w.server, key, &with_query("/workspaces", params))
    };

    let (all, count) = page(&w.alice, &[]);
    assert_eq!(count, 4);
    assert_eq!(
        sorted(all.clone()),
        sorted(named.iter().map(|(_, id)| id.clone()).collect())
    );
    assert!(!all.contains(&carol_ws));
    // The envelopes of a list are those of GET.
    let (items, _) = list(&w.server, &w.alice, "/workspaces");
    for item in &items {
        let (id, _) = envelope(item);
        assert_eq!(*item, w.read(&format!("/workspaces/{id}")));
    }

    assert_eq!(
        page(&w.alice, &[("description", "Bravo")]),
        (vec![id_of("Bravo")], 1)
    );
    assert_eq!(page(&w.alice, &[("description", "bravo")]), (vec![], 0));
    assert_eq!(page(&w.alice, &[("description", "Brav")]), (vec![], 0));
    assert_eq!(
        page(&w.alice, &[("sort", "description:asc")]),
        (
            ["Alpha", "Bravo", "Charlie", "Rotterdam crude"]
                .map(id_of)
                .to_vec(),
            4
        )
    );
    assert_eq!(
        page(
            &w.alice,
            &[
                ("sort", "description:desc"),
                ("limit", "2"),
                ("offset", "1")
            ]
        ),
        (["Charlie", "Bravo"].map(id_of).to_vec(), 4)
    );
    assert_eq!(
        page(&w.alice, &[("sort", "description"), ("limit", "1")]),
        (vec![id_of("Alpha")], 4)
    );
    assert_eq!(page(&w.alice, &[("limit", "0")]), (vec![], 4));
    assert_eq!(page(&w.alice, &[("offset", "10")]), (vec![], 4));
    assert_eq!(page(&w.alice, &[("limit", "1000")]).1, 4);

    // The vendor sees the four; carol her one; the admin all five.
    assert_eq!(page(&w.bob, &[]).1, 4);
    let carol = w.server.login("carol", "carol-password");
    assert_eq!(page(&carol, &[]), (vec![carol_ws.clone()], 1));
    let (admin_all, admin_count) = page(&w.admin, &[]);
    assert_eq!(admin_count, 5);
    assert!(admin_all.contains(&carol_ws));

    for (params, field) in [
        (vec![("limit", "1001")], "limit"),
        (vec![("limit", "-1")], "limit"),
        (vec![("limit", "many")], "limit"),
        (vec![("offset", "-3")], "offset"),
        (vec![("colour", "red")], "colour"),
        (vec![("status", "active")], "status"),
        (vec![("sort", "colour:asc")], "sort"),
        (vec![("sort", "description:sideways")], "sort"),
        (
            vec![("description", "Alpha"), ("description", "Bravo")],
            "description",
        ),
    ] {
        let reply = w.server.get(&with_query("/workspaces", &params), &w.alice);
        expect_error(&reply, 400, "invalid_query", Some(field));
    }
}

#[test]
fn job_lists_filter_on_body_fields_sort_and_page() {
    let w = World::new();
    let (j1, j1_body) = w.create_job(json!({
        "status": "pending", "activity": "load", "eta": "2026-11-21T09:00:00Z",
        "location": {"xref": "NLRTM", "name": "Rotterdam"},
        "cargo": {"quantity": 5000}, "requested": {"quality": true}
    }));
    let (j2, _) = w.create_job(json!({
        "status": "active", "activity": "load", "eta": "2026-11-23T09:00:00Z",
        "cargo": {"quantity": 5000}, "requested": {"quality": false}
    }));
    let (j3, _) = w.create_job(json!({
        "status": "active", "activity": "discharge", "eta": "2026-11-22T09:00:00Z",
        "cargo": {"quantity": 7500.5}
    }));
    let (j4, _) = w.create_job(json!({
        "status": "cancelled", "activity": "sts", "eta": "2026-11-20T09:00:00Z",
        "cargo": {"quantity": 100}, "requested": {"quality": true}
    }));
    let location = text(&j1_body["location"]);
    let query = |params: &[(&str, &str)]| {
        list_ids(&w.server, &w.alice, &with_query(&w.jobs_path(), params))
    };
    let set = |params: &[(&str, &str)]| {
        let (ids, count) = query(params);
        (sorted(ids), count)
    };
    let ids = |jobs: &[&String]| sorted(jobs.iter().map(|j| (*j).clone()).collect());

    assert_eq!(set(&[]), (ids(&[&j1, &j2, &j3, &j4]), 4));
    assert_eq!(set(&[("status", "active")]), (ids(&[&j2, &j3]), 2));
    assert_eq!(set(&[("activity", "load")]), (ids(&[&j1, &j2]), 2));
    assert_eq!(set(&[("cargo.quantity", "5000")]), (ids(&[&j1, &j2]), 2));
    assert_eq!(set(&[("cargo.quantity", "7500.5")]), (ids(&[&j3]), 1));
    assert_eq!(set(&[("requested.quality", "true")]), (ids(&[&j1, &j4]), 2));
    assert_eq!(set(&[("requested.quality", "false")]), (ids(&[&j2]), 1));
    assert_eq!(
        set(&[("status", "active"), ("activity", "load")]),
        (ids(&[&j2]), 1)
    );
    assert_eq!(
        set(&[("status", "active"), ("cargo.quantity", "5000")]),
        (ids(&[&j2]), 1)
    );
    assert_eq!(set(&[("status", "complete")]), (vec![], 0));
    assert_eq!(set(&[("location", location.as_str())]), (ids(&[&j1]), 1));
    assert_eq!(
        set(&[("eta", "2026-11-21T09:00:00.000Z")]),
        (ids(&[&j1]), 1)
    );
    assert_eq!(set(&[("workspace", w.ws.as_str())]).1, 4);

    assert_eq!(
        query(&[("sort", "eta:desc")]),
        (vec![j2.clone(), j3.clone(), j1.clone(), j4.clone()], 4)
    );
    assert_eq!(
        query(&[("sort", "eta:asc")]),
        (vec![j4.clone(), j1.clone(), j3.clone(), j2.clone()], 4)
    );
    assert_eq!(
        query(&[("sort", "cargo.quantity:desc,eta:asc")]),
        (vec![j3.clone(), j1.clone(), j2.clone(), j4.clone()], 4)
    );
    assert_eq!(
        query(&[("sort", "eta:desc"), ("limit", "2"), ("offset", "1")]),
        (vec![j3.clone(), j1.clone()], 4)
    );
    assert_eq!(
        query(&[("status", "active"), ("sort", "eta:asc"), ("limit", "1")]),
        (vec![j3.clone()], 2)
    );
    assert_eq!(query(&[("offset", "4")]), (vec![], 4));

    for (params, field) in [
        (vec![("colour", "red")], "colour"),
        (vec![("cargo", "x")], "cargo"),
        (vec![("cargo.colour", "x")], "cargo.colour"),
        (vec![("transports", "x")], "transports"),
        (vec![("cargo.quantity", "lots")], "cargo.quantity"),
        (vec![("requested.quality", "yes")], "requested.quality"),
        (vec![("sort", "colour:desc")], "sort"),
        (vec![("sort", "eta:up")], "sort"),
        (vec![("limit", "1001")], "limit"),
        (vec![("status", "active"), ("status", "pending")], "status"),
    ] {
        let reply = w.server.get(&with_query(&w.jobs_path(), &params), &w.alice);
        expect_error(&reply, 400, "invalid_query", Some(field));
    }
}

#[test]
fn result_lists_filter_on_their_own_fields() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let (q1, _) = w.create_result(&job, &QUALITY, quality_sample());
    let (q2, _) = w.create_result(
        &job,
        &QUALITY,
        with(
            with(quality_sample(), "status", json!("confirmed")),
            "sample.location",
            json!("TANK-2"),
        ),
    );
    let (q3, _) = w.create_result(
        &job,
        &QUALITY,
        with(
            with(quality_sample(), "setNumber", json!(2)),
            "isOffSpec",
            json!(true),
        ),
    );
    let quality = |params: &[(&str, &str)]| {
        list_ids(
            &w.server,
            &w.alice,
            &with_query(&w.results_path(&job, &QUALITY), params),
        )
    };
    assert_eq!(quality(&[("status", "confirmed")]), (vec![q2.clone()], 1));
    assert_eq!(
        sorted(quality(&[("status", "preliminary")]).0),
        sorted(vec![q1.clone(), q3.clone()])
    );
    assert_eq!(
        quality(&[("sample.location", "TANK-2")]),
        (vec![q2.clone()], 1)
    );
    assert_eq!(quality(&[("setNumber", "2")]), (vec![q3.clone()], 1));
    assert_eq!(quality(&[("isOffSpec", "true")]), (vec![q3.clone()], 1));
    assert_eq!(
        quality(&[("status", "preliminary"), ("setNumber", "1")]),
        (vec![q1.clone()], 1)
    );
    assert_eq!(
        quality(&[("sort", "setNumber:desc"), ("limit", "1")]),
        (vec![q3.clone()], 3)
    );
    // Filters take canonical names, not aliases.
    let reply = w.server.get(
        &with_query(&w.results_path(&job, &QUALITY), &[("comment", "x")]),
        &w.alice,
    );
    expect_error(&reply, 400, "invalid_query", Some("comment"));

    let (t1, _) = w.create_sample(&job, &TIMELOG);
    let (t2, _) = w.create_result(
        &job,
        &TIMELOG,
        with(timelog_sample(), "category", json!("delay")),
    );
    let timelog = |params: &[(&str, &str)]| {
        list_ids(
            &w.server,
            &w.alice,
            &with_query(&w.results_path(&job, &TIMELOG), params),
        )
    };
    assert_eq!(timelog(&[("category", "delay")]), (vec![t2.clone()], 1));
    assert_eq!(timelog(&[("category", "event")]), (vec![t1.clone()], 1));

    let (s, _) = w.create_sample(&job, &QUANTITY);
    let (d, _) = w.create_result(&job, &QUANTITY, json!({"direction": "destination"}));
    let quantity = |params: &[(&str, &str)]| {
        list_ids(
            &w.server,
            &w.alice,
            &with_query(&w.results_path(&job, &QUANTITY), params),
        )
    };
    assert_eq!(
        quantity(&[("direction", "destination")]),
        (vec![d.clone()], 1)
    );
    assert_eq!(quantity(&[("waterPerc", "0.1")]), (vec![s.clone()], 1));
    assert_eq!(quantity(&[("sort", "direction:asc")]), (vec![d, s], 2));
}
