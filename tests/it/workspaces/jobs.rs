//! Jobs: defaults from the workspace parties, catalog references resolved (and
//! created once), datetimes, field checks, merge patches, and deletion only once
//! a job has no results.

use super::*;

#[test]
fn a_new_job_is_pending_and_names_the_workspace_parties() {
    let w = World::new();
    let (id, body) = w.create_job(json!({}));
    assert_eq!(
        body,
        json!({"workspace": w.ws, "status": "pending", "vendor": w.vendor_org, "client": w.client_org})
    );
    assert_eq!(keys(&body), ["workspace", "status", "vendor", "client"]);
    // GET answers the bare body.
    assert_eq!(w.read(&w.job_path(&id)), body);
    assert_eq!(
        list(&w.server, &w.alice, &w.jobs_path()).0,
        vec![json!({"id": id, "body": body})]
    );

    // Explicit values win over the defaults; `workspace` may repeat the path.
    // `client` and `vendor` name the workspace's own parties (either of them):
    // another organization is refused.
    let (_, carol_org, _) = w.outsider("carol");
    expect_error(
        &w.server
            .post(&w.jobs_path(), &w.alice, &json!({"client": carol_org})),
        400,
        "invalid_field",
        Some("client"),
    );
    let (_, explicit) = w.create_job(json!({
        "workspace": w.ws,
        "status": "active",
        "client": w.vendor_org,
        "xref": "PO-77",
        "refNumber": "R-1",
        "tripNumber": "T-9",
        "activity": "sts"
    }));
    assert_eq!(explicit["status"], "active");
    assert_eq!(explicit["client"], w.vendor_org.as_str());
    assert_eq!(explicit["vendor"], w.vendor_org.as_str());
    assert_eq!(
        keys(&explicit),
        [
            "workspace",
            "xref",
            "refNumber",
            "tripNumber",
            "status",
            "activity",
            "vendor",
            "client"
        ]
    );

    // `parent` names another document of the workspace.
    let (_, child) = w.create_job(json!({"parent": id}));
    assert_eq!(child["parent"], id.as_str());
    expect_error(
        &w.server
            .post(&w.jobs_path(), &w.alice, &json!({"parent": MISSING})),
        400,
        "invalid_field",
        Some("parent"),
    );

    // A workspace with only a client party: no vendor default.
    let (lone, _) = create_workspace(
        &w.server,
        &w.alice,
        &workspace_body("client only", Some(&w.client_org), None),
    );
    let reply = w
        .server
        .post(&format!("/workspaces/{lone}/jobs"), &w.alice, &json!({}));
    let (_, lone_job) = envelope(&expect(&reply, 201));
    assert_eq!(
        lone_job,
        json!({"workspace": lone, "status": "pending", "client": w.client_org})
    );
}

#[test]
fn job_catalog_references_become_record_ids_created_once_and_reused() {
    let w = World::new();
    let (_, first) = w.create_job(json!({
        "location": {"xref": "NLRTM", "name": "Rotterdam"},
        "transports": [{"xref": "IMO9000001", "name": "MT Alpha"}, {"name": "MT Bravo"}],
        "cargo": {"product": {"xref": "BRENT", "name": "Brent"}, "quantity": 5000, "uom": {"name": "Barrels"}}
    }));
    let location = text(&first["location"]);
    let transports: Vec<String> = first["transports"]
        .as_array()
        .expect("transports")
        .iter()
        .map(text)
        .collect();
    let product = text(&first["cargo"]["product"]);
    let uom = text(&first["cargo"]["uom"]);
    for id in [&location, &product, &uom].into_iter().chain(&transports) {
        assert!(is_uuid(&json!(id)), "{first}");
    }
    assert_eq!(first["cargo"]["quantity"], 5000);

    // The records exist in their catalogs, owned by the writer's party.
    let expect_item = |catalog: &str, id: &str, name: &str, xref: Option<&str>| {
        assert_eq!(
            w.item(catalog, id),
            json!({"name": name, "xref": xref, "ownerParty": w.client_org})
        );
    };
    expect_item("locations", &location, "Rotterdam", Some("NLRTM"));
    expect_item("transports", &transports[0], "MT Alpha", Some("IMO9000001"));
    expect_item("transports", &transports[1], "MT Bravo", None);
    expect_item("products", &product, "Brent", Some("BRENT"));
    expect_item("uom", &uom, "Barrels", None);
    assert_eq!(w.items("locations").len(), 1);
    assert_eq!(w.items("transports").len(), 2);

    // The same xref finds the same record (the name is not needed, nor compared).
    let (_, second) = w.create_job(json!({
        "location": {"xref": "NLRTM"},
        "transports": [{"xref": "IMO9000001", "name": "another name"}],
        "cargo": {"uom": {"name": "BARRELS"}}
    }));
    assert_eq!(second["location"], location.as_str());
    assert_eq!(second["transports"], json!([transports[0]]));
    // By name, ignoring case.
    assert_eq!(second["cargo"]["uom"], uom.as_str());
    let (_, third) =
        w.create_job(json!({"location": {"name": "ROTTERDAM"}, "cargo": {"product": product}}));
    assert_eq!(third["location"], location.as_str());
    // A record id is taken as it is, and so is the `{id}` form.
    assert_eq!(third["cargo"]["product"], product.as_str());
    let (_, fourth) = w.create_job(json!({"location": {"id": location}}));
    assert_eq!(fourth["location"], location.as_str());
    assert_eq!(w.items("locations").len(), 1);
    assert_eq!(w.items("uom").len(), 1);
    assert_eq!(w.items("products").len(), 1);

    // A record created through the vendor's job belongs to the vendor.
    let (_, by_vendor) = w.create_job_as(
        &w.bob,
        &json!({"location": {"xref": "BEANR", "name": "Antwerp"}}),
    );
    let antwerp = text(&by_vendor["location"]);
    assert_eq!(
        w.item("locations", &antwerp)["ownerParty"],
        w.vendor_org.as_str()
    );
    assert_eq!(w.items("locations").len(), 2);
}

#[test]
fn job_references_that_do_not_resolve_are_refused_and_nothing_is_created() {
    let w = World::new();
    let (_, job) = w.create_job(json!({"location": {"xref": "NLRTM", "name": "Rotterdam"}}));
    let location = text(&job["location"]);
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({"location": MISSING}), "invalid_field", "location"),
        (
            json!({"location": "not-an-id"}),
            "invalid_field",
            "location",
        ),
        // A record of another catalog.
        (
            json!({"cargo": {"uom": location}}),
            "invalid_field",
            "cargo.uom",
        ),
        (
            json!({"location": {"id": MISSING}}),
            "invalid_field",
            "location",
        ),
        (json!({"location": {}}), "invalid_field", "location"),
        (
            json!({"location": {"name": "  "}}),
            "invalid_field",
            "location",
        ),
        (json!({"location": 5}), "invalid_field", "location"),
        (
            json!({"location": {"xref": 5}}),
            "invalid_field",
            "location.xref",
        ),
        (
            json!({"location": {"code": "X"}}),
            "unknown_field",
            "location.code",
        ),
        (
            json!({"transports": [{"name": "MT Alpha"}, MISSING]}),
            "invalid_field",
            "transports[1]",
        ),
        (
            json!({"transports": [null]}),
            "invalid_field",
            "transports[0]",
        ),
        (
            json!({"transports": "MT Alpha"}),
            "invalid_field",
            "transports",
        ),
        (json!({"vendor": MISSING}), "invalid_field", "vendor"),
        (json!({"client": location}), "invalid_field", "client"),
        // A new record with a bad one beside it: the whole write is refused.
        (
            json!({"location": {"xref": "DEHAM", "name": "Hamburg"}, "cargo": {"product": MISSING}}),
            "invalid_field",
            "cargo.product",
        ),
    ];
    for (body, code, field) in &cases {
        let reply = w.server.post(&w.jobs_path(), &w.alice, body);
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        expect_error(&reply, 400, code, Some(field));
    }
    assert_eq!(list(&w.server, &w.alice, &w.jobs_path()).1, 1);
    assert_eq!(w.items("locations").len(), 1);
    assert_eq!(w.items("transports").len(), 0);
    assert_eq!(w.items("products").len(), 0);
}

#[test]
fn job_datetimes_are_stored_in_utc_with_milliseconds() {
    let w = World::new();
    let (id, body) = w.create_job(json!({
        "eta": "2026-11-21T10:30:00+01:00",
        "etc": "2026-11-22T00:00:00.5-05:00"
    }));
    assert_eq!(body["eta"], "2026-11-21T09:30:00.000Z");
    assert_eq!(body["etc"], "2026-11-22T05:00:00.500Z");
    let patched = expect(
        &w.patch(
            &w.job_path(&id),
            &json!({"eta": "2026-11-21T23:59:59.1234Z"}),
        ),
        200,
    );
    assert_eq!(patched["eta"], "2026-11-21T23:59:59.123Z");
    assert_eq!(patched["etc"], "2026-11-22T05:00:00.500Z");
    for bad in [
        json!("tomorrow"),
        json!("2026-11-21"),
        json!("2026-11-21 10:00:00"),
        json!(1795253400),
    ] {
        let reply = w
            .server
            .post(&w.jobs_path(), &w.alice, &json!({"eta": bad}));
        expect_error(&reply, 400, "invalid_field", Some("eta"));
    }
}

#[test]
fn job_bodies_are_checked_field_by_field() {
    let w = World::new();
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({"status": "done"}), "invalid_field", "status"),
        (json!({"status": "Pending"}), "invalid_field", "status"),
        (json!({"activity": "fly"}), "invalid_field", "activity"),
        (json!({"colour": "red"}), "unknown_field", "colour"),
        (
            json!({"cargo": {"colour": "red"}}),
            "unknown_field",
            "cargo.colour",
        ),
        (
            json!({"requested": {"photos": true}}),
            "unknown_field",
            "requested.photos",
        ),
        (
            json!({"cargo": {"quantity": "x"}}),
            "invalid_field",
            "cargo.quantity",
        ),
        (json!({"cargo": "oil"}), "invalid_field", "cargo"),
        (
            json!({"requested": {"quality": "yes"}}),
            "invalid_field",
            "requested.quality",
        ),
        (
            json!({"requested": {"timelog": 1}}),
            "invalid_field",
            "requested.timelog",
        ),
        (json!({"notes": 5}), "invalid_field", "notes"),
        (json!({"xref": ["a"]}), "invalid_field", "xref"),
        (json!({"workspace": MISSING}), "invalid_field", "workspace"),
        (json!([]), "invalid_field", "$"),
    ];
    for (body, code, field) in &cases {
        let reply = w.server.post(&w.jobs_path(), &w.alice, body);
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        expect_error(&reply, 400, code, Some(field));
    }
    let wrong_type = w.server.request(
        "POST",
        &w.jobs_path(),
        Some(&w.alice),
        &[("Content-Type", "text/plain")],
        Some(b"{}"),
    );
    wrong_type.assert_error(415, "unsupported_media_type");
    assert_eq!(list(&w.server, &w.alice, &w.jobs_path()), (vec![], 0));
    expect_404(
        &w.server
            .post(&format!("/workspaces/{MISSING}/jobs"), &w.alice, &json!({})),
    );
}

#[test]
fn job_patch_merges_only_what_is_sent() {
    let w = World::new();
    let (id, created) = w.create_job(json!({
        "notes": "first",
        "refNumber": "R-1",
        "activity": "load",
        "cargo": {"product": {"name": "Brent"}, "quantity": 5000, "uom": {"name": "Barrels"}},
        "requested": {"quality": true, "timelog": false}
    }));
    let path = w.job_path(&id);
    let answer = expect(
        &w.patch(
            &path,
            &json!({"notes": "second", "cargo": {"quantity": 6000.5}}),
        ),
        200,
    );
    let mut expected = created.clone();
    expected["notes"] = json!("second");
    expected["cargo"]["quantity"] = json!(6000.5);
    assert_eq!(answer, expected);
    assert_eq!(w.read(&path), expected);

    // null clears, at the top level and inside an object.
    let answer = expect(
        &w.patch(
            &path,
            &json!({"refNumber": null, "requested": {"timelog": null}}),
        ),
        200,
    );
    let expected = without(without(expected, "refNumber"), "requested.timelog");
    assert_eq!(answer, expected);
    assert!(answer.get("refNumber").is_none());

    // A new reference in a patch is resolved like on create.
    let answer = expect(
        &w.patch(
            &path,
            &json!({"location": {"xref": "NLRTM", "name": "Rotterdam"}}),
        ),
        200,
    );
    let location = text(&answer["location"]);
    assert_eq!(w.item("locations", &location)["xref"], "NLRTM");

    // A refused patch changes nothing.
    let before = w.read(&path);
    for (body, code, field) in [
        (
            json!({"workspace": MISSING, "notes": "x"}),
            "invalid_field",
            "workspace",
        ),
        (
            json!({"cargo": {"quantity": "lots"}}),
            "invalid_field",
            "cargo.quantity",
        ),
        (json!({"activity": "fly"}), "invalid_field", "activity"),
        (json!({"colour": 1}), "unknown_field", "colour"),
        (json!({"location": MISSING}), "invalid_field", "location"),
    ] {
        expect_error(&w.patch(&path, &body), 400, code, Some(field));
    }
    assert_eq!(w.read(&path), before);
    // Repeating the workspace is fine.
    assert_eq!(
        expect(&w.patch(&path, &json!({"workspace": w.ws})), 200),
        before
    );
    expect_404(&w.patch(&w.job_path(MISSING), &json!({"notes": "x"})));
}

#[test]
fn a_job_with_results_cannot_be_deleted_until_they_are_gone() {
    let w = World::new();
    for kind in KINDS {
        let (job, body) = w.create_job(json!({"notes": kind.path}));
        let (result, _) = w.create_sample(&job, kind);
        let reply = w.server.delete(&w.job_path(&job), &w.alice);
        assert_eq!(reply.status, 409, "{}: {}", kind.path, reply.text());
        expect_error(&reply, 409, "job_not_empty", None);
        assert_eq!(w.read(&w.job_path(&job)), body);

        expect(
            &w.server
                .delete(&w.result_path(&job, kind, &result), &w.alice),
            200,
        );
        let deleted = expect(&w.server.delete(&w.job_path(&job), &w.alice), 200);
        assert_eq!(deleted, body);
        expect_404(&w.server.get(&w.job_path(&job), &w.alice));
        expect_404(&w.server.delete(&w.job_path(&job), &w.alice));
        expect_404(&w.server.get(&w.results_path(&job, kind), &w.alice));
    }
    expect_404(&w.server.delete(&w.job_path(MISSING), &w.alice));
    assert_eq!(list(&w.server, &w.alice, &w.jobs_path()), (vec![], 0));
    // Now the workspace is empty and can go.
    expect(&w.server.delete(&w.ws_path(), &w.alice), 200);
}

/// A read of one record runs on the request's own thread on a data file
/// (`Db::read_point_after`), each on a pooled connection of its own: every
/// GET still sees the write acknowledged before it, whichever connection
/// serves it, so none is left in an older read transaction. Four clients at
/// once, each changing its own job and reading it back.
#[test]
fn every_read_of_one_record_sees_the_write_acknowledged_before_it() {
    let w = World::new();
    let jobs: Vec<String> = (0..4).map(|_| w.create_job(json!({})).0).collect();
    std::thread::scope(|s| {
        for (client, job) in jobs.iter().enumerate() {
            let w = &w;
            s.spawn(move || {
                for round in 0..25 {
                    let reference = format!("R-{client}-{round}");
                    let patched = w.server.patch(
                        &w.job_path(job),
                        &w.alice,
                        &json!({"refNumber": reference}),
                    );
                    assert_eq!(patched.status, 200, "{}", patched.text());
                    let read = w.server.get(&w.job_path(job), &w.alice);
                    assert_eq!(read.status, 200, "{}", read.text());
                    assert_eq!(read.json()["refNumber"], json!(reference));
                }
            });
        }
    });
}

/// A job's answer is kept in memory until that job changes
/// (`Ctx::kept_document`): read again and again while other jobs and results
/// are written, it is always the job as stored, never another workspace's
/// answer, and each change of the job itself shows at once.
#[test]
fn a_kept_job_is_the_job_as_stored_through_every_write_around_it() {
    let w = World::new();
    let jobs = format!("/workspaces/{}/jobs", w.ws);
    let created = |key: &str| {
        envelope(&expect(
            &w.server
                .post(&jobs, key, &json!({"xref": "K-1", "status": "active"})),
            201,
        ))
        .0
    };
    let job = created(&w.alice);
    let other = created(&w.alice);
    let path = format!("{jobs}/{job}");
    let read = |key: &str| expect(&w.server.get(&path, key), 200);
    let first = read(&w.bob);
    assert_eq!(first["xref"], "K-1", "{first}");
    assert_eq!(read(&w.alice), first);

    // Writes around it: another job, a result under it, a location.
    let other_path = format!("{jobs}/{other}");
    expect(
        &w.server
            .patch(&other_path, &w.alice, &json!({"xref": "K-2"})),
        200,
    );
    expect(
        &w.server
            .post(&format!("{path}/quality"), &w.alice, &quality_sample()),
        201,
    );
    assert_eq!(read(&w.bob), first);
    assert_eq!(
        expect(&w.server.get(&other_path, &w.bob), 200)["xref"],
        "K-2"
    );

    // Never through another workspace's path, whoever reads: the job kept
    // again, that workspace kept for each reader who may see it, each
    // reader's session confirmed.
    let (outsider, _, own) = w.outsider("carol");
    assert_eq!(read(&w.bob), first);
    let elsewhere = format!("/workspaces/{own}/jobs/{job}");
    for key in [&outsider, &w.admin] {
        expect(&w.server.get(&format!("/workspaces/{own}/jobs"), key), 200);
        for _ in 0..2 {
            let reply = w.server.get(&elsewhere, key);
            assert_eq!(reply.status, 404, "{elsewhere}: {}", reply.text());
        }
    }
    expect_404(&w.server.get(&elsewhere, &w.alice));
    expect_404(&w.server.get(&path, &outsider));

    // Its own changes, at once.
    expect(
        &w.server.patch(&path, &w.alice, &json!({"xref": "K-1b"})),
        200,
    );
    let changed = read(&w.bob);
    assert_eq!(changed["xref"], "K-1b", "{changed}");
    assert_eq!(read(&w.bob), changed);
    delete_job_and_results(&w.server, &w.alice, &path);
    expect_404(&w.server.get(&path, &w.bob));
    expect_404(&w.server.get(&path, &w.bob));
}
