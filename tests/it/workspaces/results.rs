//! The four result kinds of a job (load port information, quantity, quality,
//! time log): create, list, read, patch, delete, and each kind's own rules.

use super::*;

#[test]
fn each_result_kind_is_created_listed_read_patched_and_deleted() {
    let w = World::new();
    let elsewhere = w.shared("elsewhere");
    let reply = w.server.post(
        &format!("/workspaces/{elsewhere}/jobs"),
        &w.alice,
        &json!({}),
    );
    let (foreign_job, _) = envelope(&expect(&reply, 201));
    for kind in KINDS {
        let (job, _) = w.create_job(json!({}));
        let (sibling, _) = w.create_job(json!({}));
        let (id, body) = w.create_sample(&job, kind);
        let path = w.result_path(&job, kind, &id);

        let reply = w.server.get(&w.results_path(&job, kind), &w.alice);
        assert_eq!(
            expect(&reply, 200),
            json!([{"id": id, "body": body}]),
            "{}",
            kind.path
        );
        assert_eq!(total(&reply), 1);
        assert_eq!(
            unshape(kind.get_shape, &id, &w.read(&path)),
            body,
            "{}",
            kind.path
        );

        let (patch, field, value) = (kind.patch)();
        let answer = expect(&w.patch(&path, &patch), 200);
        let patched = unshape(kind.patch_shape, &id, &answer);
        assert_eq!(patched[field], value, "{}: {patched}", kind.path);
        assert_eq!(with(body.clone(), field, value), patched, "{}", kind.path);
        assert_eq!(unshape(kind.get_shape, &id, &w.read(&path)), patched);

        // Unknown ids, a sibling job's path, another workspace's job.
        let misses = [
            w.result_path(&job, kind, MISSING),
            w.result_path(&sibling, kind, &id),
            w.result_path(MISSING, kind, &id),
            format!("/workspaces/{elsewhere}/jobs/{job}/{}/{id}", kind.path),
            format!(
                "/workspaces/{elsewhere}/jobs/{foreign_job}/{}/{id}",
                kind.path
            ),
        ];
        for miss in &misses {
            expect_404(&w.server.get(miss, &w.alice));
            expect_404(&w.patch(miss, &patch));
            expect_404(&w.server.delete(miss, &w.alice));
        }
        expect_404(&w.server.get(&w.results_path(MISSING, kind), &w.alice));
        expect_404(
            &w.server
                .post(&w.results_path(MISSING, kind), &w.alice, &(kind.sample)()),
        );
        assert_eq!(
            list(&w.server, &w.alice, &w.results_path(&sibling, kind)),
            (vec![], 0)
        );
        // A result's id is no job id, nor a result of another kind.
        expect_404(&w.server.get(&w.job_path(&id), &w.alice));
        for other in KINDS.iter().filter(|k| k.path != kind.path) {
            expect_404(&w.server.get(&w.result_path(&job, other, &id), &w.alice));
        }

        let deleted = expect(&w.server.delete(&path, &w.alice), 200);
        assert_eq!(deleted, patched, "{}", kind.path);
        expect_404(&w.server.get(&path, &w.alice));
        expect_404(&w.server.delete(&path, &w.alice));
        assert_eq!(
            list(&w.server, &w.alice, &w.results_path(&job, kind)),
            (vec![], 0)
        );
    }
}

#[test]
fn result_bodies_may_repeat_but_not_contradict_their_workspace_and_job() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let (other, _) = w.create_job(json!({}));
    for kind in KINDS {
        let sample = (kind.sample)();
        let same = with(
            with(sample.clone(), "workspace", json!(w.ws)),
            "parent",
            json!(job),
        );
        let (id, _) = w.create_result(&job, kind, same);
        expect(
            &w.server.delete(&w.result_path(&job, kind, &id), &w.alice),
            200,
        );
        for (field, value) in [("workspace", MISSING), ("parent", other.as_str())] {
            let body = with(sample.clone(), field, json!(value));
            let reply = w.server.post(&w.results_path(&job, kind), &w.alice, &body);
            expect_error(&reply, 400, "invalid_field", Some(field));
        }
        let reply = w.server.post(
            &w.results_path(&job, kind),
            &w.alice,
            &with(sample, "colour", json!(1)),
        );
        expect_error(&reply, 400, "unknown_field", Some("colour"));
        assert_eq!(list(&w.server, &w.alice, &w.results_path(&job, kind)).1, 0);
    }
}

#[test]
fn quantity_results_one_per_direction_and_the_vcftable_alias() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let path = w.results_path(&job, &QUANTITY);

    let reply = w.server.post(&path, &w.alice, &json!({"waterPerc": 1.5}));
    expect_error(&reply, 400, "missing_field", Some("direction"));
    let reply = w.server.post(&path, &w.alice, &json!({"direction": null}));
    expect_error(&reply, 400, "missing_field", Some("direction"));
    let reply = w
        .server
        .post(&path, &w.alice, &json!({"direction": "sideways"}));
    expect_error(&reply, 400, "invalid_field", Some("direction"));

    let (source, source_body) = w.create_result(&job, &QUANTITY, json!({"direction": "source"}));
    let reply = w
        .server
        .post(&path, &w.alice, &json!({"direction": "source", "api": 30}));
    expect_error(&reply, 409, "duplicate_direction", None);

    let (destination, dest_body) = w.create_result(
        &job,
        &QUANTITY,
        json!({"direction": "destination", "vcftable": {"xref": "ASTM-54B", "name": "Table 54B"}}),
    );
    assert!(dest_body.get("vcftable").is_none(), "{dest_body}");
    let table = text(&dest_body["vcfTable"]);
    assert_eq!(
        w.items("vcfTable"),
        vec![(
            table.clone(),
            json!({"name": "Table 54B", "xref": "ASTM-54B", "ownerParty": w.client_org})
        )]
    );
    assert_eq!(
        unshape(
            Shape::Body,
            &destination,
            &w.read(&w.result_path(&job, &QUANTITY, &destination))
        ),
        dest_body
    );
    assert_eq!(list(&w.server, &w.alice, &path).1, 2);

    // Both names of one field at once.
    let (other_job, _) = w.create_job(json!({}));
    let reply = w.server.post(
        &w.results_path(&other_job, &QUANTITY),
        &w.alice,
        &json!({"direction": "source", "vcftable": table, "vcfTable": table}),
    );
    expect_error(&reply, 400, "invalid_field", Some("vcfTable"));
    // Another job has its own pair of directions.
    w.create_result(
        &other_job,
        &QUANTITY,
        json!({"direction": "source", "vcfTable": table}),
    );

    // A patch may not take a direction that is taken; the alias works in a patch.
    let source_path = w.result_path(&job, &QUANTITY, &source);
    let reply = w.patch(&source_path, &json!({"direction": "destination"}));
    expect_error(&reply, 409, "duplicate_direction", None);
    assert_eq!(w.read(&source_path), source_body);
    let answer = expect(
        &w.patch(&source_path, &json!({"vcftable": {"xref": "ASTM-54B"}})),
        200,
    );
    assert_eq!(
        answer,
        json!({"id": source, "body": with(source_body, "vcfTable", json!(table))})
    );
    assert_eq!(w.items("vcfTable").len(), 1);

    // Once the destination is gone, the source may become one.
    expect(
        &w.server
            .delete(&w.result_path(&job, &QUANTITY, &destination), &w.alice),
        200,
    );
    let answer = expect(
        &w.patch(&source_path, &json!({"direction": "destination"})),
        200,
    );
    assert_eq!(answer["body"]["direction"], "destination");
}

#[test]
fn quality_results_require_the_documented_fields() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let path = w.results_path(&job, &QUALITY);
    for field in [
        "status",
        "setNumber",
        "sample.location",
        "test",
        "method",
        "uom",
        "result",
    ] {
        for body in [
            without(quality_sample(), field),
            with(quality_sample(), field, Value::Null),
        ] {
            let reply = w.server.post(&path, &w.alice, &body);
            assert_eq!(reply.status, 400, "without {field}: {}", reply.text());
            expect_error(&reply, 400, "missing_field", Some(field));
        }
    }
    let reply = w
        .server
        .post(&path, &w.alice, &without(quality_sample(), "sample"));
    expect_error(&reply, 400, "missing_field", Some("sample.location"));

    for (field, value) in [
        ("status", json!("final")),
        ("setNumber", json!(1.5)),
        ("setNumber", json!("1")),
        ("testNumber", json!(true)),
        ("resultOperator", json!("ne")),
        ("isOffSpec", json!("no")),
        ("sample.location", json!(7)),
        ("test", json!(7)),
        ("result", json!(["a"])),
        ("date", json!("yesterday")),
    ] {
        let reply = w.server.post(
            &path,
            &w.alice,
            &with(quality_sample(), field, value.clone()),
        );
        assert_eq!(reply.status, 400, "{field} = {value}: {}", reply.text());
        expect_error(&reply, 400, "invalid_field", Some(field));
    }
    assert_eq!(list(&w.server, &w.alice, &path).1, 0);

    // A patch may not remove a required field either.
    let (id, body) = w.create_sample(&job, &QUALITY);
    let item = w.result_path(&job, &QUALITY, &id);
    let reply = w.patch(&item, &json!({"result": null}));
    expect_error(&reply, 400, "missing_field", Some("result"));
    let reply = w.patch(&item, &json!({"sample": {"location": null}}));
    expect_error(&reply, 400, "missing_field", Some("sample.location"));
    assert_eq!(unshape(Shape::EnvelopeInArray, &id, &w.read(&item)), body);
}

#[test]
fn quality_results_take_aliases_expand_references_and_stringify_results() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let mut body = quality_sample();
    body["testDate"] = json!("2026-11-21T12:00:00+01:00");
    body["comment"] = json!("retest requested");
    body["result"] = json!(0.85);
    body["uom"] = json!({"name": "kg/m3"});
    let (id, created) = w.create_result(&job, &QUALITY, body);
    assert_eq!(created["date"], "2026-11-21T11:00:00.000Z");
    assert_eq!(created["notes"], "retest requested");
    assert!(
        created.get("testDate").is_none() && created.get("comment").is_none(),
        "{created}"
    );
    assert_eq!(created["result"], "0.85");

    // References read back as {id, xref, name}, pointing at the catalogs' records.
    for (field, catalog, xref, name) in [
        ("test", "tests", json!("DENS"), "Density"),
        ("method", "testMethods", json!("D1298"), "ASTM D1298"),
        ("uom", "uom", Value::Null, "kg/m3"),
    ] {
        let reference = &created[field];
        assert_eq!(keys(reference), ["id", "xref", "name"], "{reference}");
        assert_eq!(reference["xref"], xref);
        assert_eq!(reference["name"], name);
        let record = text(&reference["id"]);
        assert_eq!(w.item(catalog, &record)["name"], name);
    }
    let method = text(&created["method"]["id"]);
    assert_eq!(w.item("methods", &method)["xref"], "D1298");

    // GET answers [{id, body}]; the list shows the same expanded body.
    let item = w.result_path(&job, &QUALITY, &id);
    assert_eq!(w.read(&item), json!([{"id": id, "body": created}]));
    assert_eq!(
        list(&w.server, &w.alice, &w.results_path(&job, &QUALITY)).0,
        vec![json!({"id": id, "body": created})]
    );

    // PATCH answers the bare body, aliases included; a boolean result is stringified.
    let answer = expect(
        &w.patch(
            &item,
            &json!({"comment": "fine", "result": true, "testDate": null}),
        ),
        200,
    );
    let mut expected = without(created.clone(), "date");
    expected["notes"] = json!("fine");
    expected["result"] = json!("true");
    assert_eq!(answer, expected);
    // The read shape can be sent back as it is.
    assert_eq!(expect(&w.patch(&item, &answer), 200), answer);
    // Whole numbers too; text stays text.
    for (sent, stored) in [
        (json!(5), "5"),
        (json!("<0.1"), "<0.1"),
        (json!(-2.5), "-2.5"),
    ] {
        let answer = expect(&w.patch(&item, &json!({"result": sent})), 200);
        assert_eq!(answer["result"], stored);
    }
    let reply = w.patch(&item, &json!({"notes": "a", "comment": "b"}));
    expect_error(&reply, 400, "invalid_field", Some("notes"));
}

#[test]
fn time_logs_require_type_category_start_and_end_not_before_start() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let path = w.results_path(&job, &TIMELOG);
    for field in ["type", "category", "start"] {
        let reply = w
            .server
            .post(&path, &w.alice, &without(timelog_sample(), field));
        expect_error(&reply, 400, "missing_field", Some(field));
    }
    let reply = w.server.post(
        &path,
        &w.alice,
        &with(timelog_sample(), "category", json!("break")),
    );
    expect_error(&reply, 400, "invalid_field", Some("category"));
    let reply = w.server.post(
        &path,
        &w.alice,
        &with(timelog_sample(), "end", json!("2026-11-21T05:59:59.999Z")),
    );
    expect_error(&reply, 400, "invalid_field", Some("end"));
    // Compared as instants: 09:00+02:00 is 07:00Z, before 08:00Z.
    let early = json!({"type": {"xref": "NOR"}, "category": "delay", "start": "2026-11-21T08:00:00Z", "end": "2026-11-21T09:00:00+02:00"});
    expect_error(
        &w.server.post(&path, &w.alice, &early),
        400,
        "invalid_field",
        Some("end"),
    );
    assert_eq!(list(&w.server, &w.alice, &path).1, 0);

    let (_, same) = w.create_result(
        &job,
        &TIMELOG,
        with(timelog_sample(), "end", json!("2026-11-21T06:00:00Z")),
    );
    assert_eq!(same["end"], "2026-11-21T06:00:00.000Z");
    // 10:00+02:00 is 08:00Z, after 07:30Z.
    let (id, body) = w.create_result(
        &job,
        &TIMELOG,
        json!({"type": {"xref": "NOR"}, "category": "delay", "start": "2026-11-21T07:30:00Z", "end": "2026-11-21T10:00:00+02:00"}),
    );
    assert_eq!(body["end"], "2026-11-21T08:00:00.000Z");
    assert_eq!(body["type"], same["type"]);
    let event = text(&body["type"]);
    assert_eq!(w.item("eventTypes", &event)["name"], "Notice of readiness");
    assert_eq!(w.item("timelogEvents", &event)["xref"], "NOR");

    let item = w.result_path(&job, &TIMELOG, &id);
    let reply = w.patch(&item, &json!({"start": "2026-11-21T08:00:00.001Z"}));
    expect_error(&reply, 400, "invalid_field", Some("end"));
    assert_eq!(w.read(&item), body);
    let answer = expect(
        &w.patch(
            &item,
            &json!({"end": null, "start": "2026-11-22T00:00:00Z"}),
        ),
        200,
    );
    assert_eq!(
        answer,
        with(
            without(body, "end"),
            "start",
            json!("2026-11-22T00:00:00.000Z")
        )
    );
}

/// A catalog reference's form is checked with the rest of the body (before
/// the writer), its record looked up in the writer: each fault is a 400
/// naming the field, a request for a job or workspace the caller cannot see
/// is still a 404 whatever its body, and a refused body leaves no catalog
/// record behind (a certificate's valid items included).
#[test]
fn catalog_references_are_checked_in_form_then_resolved_and_a_refused_body_stores_nothing() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let path = w.results_path(&job, &QUALITY);
    let tests_before = w.items("tests").len();
    for (reference, code, field) in [
        (json!(5), "invalid_field", "test"),
        (json!({"code": "DENS"}), "unknown_field", "test.code"),
        (json!({"xref": 7}), "invalid_field", "test.xref"),
        (json!({"xref": "", "name": "  "}), "invalid_field", "test"),
        (json!({"id": null}), "invalid_field", "test"),
        (json!("no-such-record"), "invalid_field", "test"),
        (
            json!({"id": "no-such-record", "xref": "DENS"}),
            "invalid_field",
            "test",
        ),
    ] {
        let body = with(quality_sample(), "test", reference);
        let reply = w.server.post(&path, &w.alice, &body);
        expect_error(&reply, 400, code, Some(field));
    }
    // A reference by id to a record of this workspace's catalog resolves.
    let density = w.create_item("tests", "Density", "DENS");
    let by_id = with(quality_sample(), "test", json!(density));
    let (_, created) = w.create_result(&job, &QUALITY, by_id);
    assert_eq!(created["test"]["id"], density.as_str(), "{created}");

    // The 404 of a job that is not there, or of another tenant's workspace,
    // comes before anything the body says.
    let bad = with(quality_sample(), "test", json!(5));
    let missing_job = w.results_path("no-such-job", &QUALITY);
    expect_404(&w.server.post(&missing_job, &w.alice, &bad));
    let (stranger, _, _) = w.outsider("carol");
    expect_404(&w.server.post(&path, &stranger, &bad));

    // A certificate with one bad reference: 400 naming the item, nothing
    // stored, and the new record its valid item named is not created either.
    let valid = with(
        quality_sample(),
        "method",
        json!({"xref": "NEW-METHOD", "name": "Not yet a method"}),
    );
    let invalid = with(quality_sample(), "uom", json!({"xref": ["KGM3"]}));
    let reply = w.server.post(&path, &w.alice, &json!([valid, invalid]));
    expect_error(&reply, 400, "invalid_items", Some("[1].uom.xref"));
    assert_eq!(list(&w.server, &w.alice, &path).1, 1, "only the one by id");
    assert!(
        w.items("methods")
            .iter()
            .all(|(_, item)| item["xref"] != "NEW-METHOD"),
        "no record made for a refused certificate"
    );
    assert_eq!(w.items("tests").len(), tests_before + 1, "only Density");
}
