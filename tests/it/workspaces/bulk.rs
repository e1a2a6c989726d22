//! Certificates: an array of quality results (or time logs) POSTed at once,
//! stored all or none, on the older paths and on v2; every invalid item
//! reported with its index; new catalog records made once for all items.

use super::*;

/// A valid quality result, numbered `n`, naming a test, a method and a unit
/// that do not exist yet.
fn quality(n: usize) -> Value {
    json!({
        "status": "confirmed",
        "setNumber": 1,
        "testNumber": n,
        "sample": {"location": "TANK-7"},
        "test": {"xref": "CERT-DENS", "name": "Density at 15C"},
        "method": {"name": "ASTM D4052"},
        "uom": {"name": "kg/m3"},
        "result": format!("845.{n}"),
        "testDate": "2026-12-01T12:00:00+01:00"
    })
}

fn certificate(count: usize) -> Value {
    Value::Array((0..count).map(quality).collect())
}

fn timelog(hour: u32) -> Value {
    json!({
        "type": {"xref": "CERT-EV", "name": "Hose connected"},
        "category": "event",
        "start": format!("2026-11-21T{hour:02}:00:00Z"),
        "end": format!("2026-11-21T{hour:02}:30:00Z")
    })
}

fn v2_path(w: &World, job: &str, segment: &str) -> String {
    format!("/v2/workspaces/{}/jobs/{job}/{segment}", w.ws)
}

/// The change feed's head for the workspace, as alice sees it.
fn head(w: &World) -> u64 {
    let page = expect(
        &w.server.get(
            &format!("/v2/workspaces/{}/changes?since=now", w.ws),
            &w.alice,
        ),
        200,
    );
    page["next"].as_u64().expect("next")
}

/// The types of the workspace's changes after `since`, in order.
fn changes_since(w: &World, since: u64) -> Vec<String> {
    let page = expect(
        &w.server.get(
            &format!("/v2/workspaces/{}/changes?since={since}&limit=1000", w.ws),
            &w.alice,
        ),
        200,
    );
    page["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|change| text(&change["type"]))
        .collect()
}

fn count(types: &[String], wanted: &str) -> usize {
    types.iter().filter(|t| *t == wanted).count()
}

/// The error's `items`, as `(index, code, field)`.
#[track_caller]
fn failed_items(reply: &Reply) -> Vec<(u64, String, Option<String>)> {
    let body = reply.json();
    body["error"]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {body}"))
        .iter()
        .map(|item| {
            assert!(
                item["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{item}"
            );
            assert_eq!(item["status"], 400, "{item}");
            (
                item["index"].as_u64().expect("index"),
                text(&item["code"]),
                item["field"].as_str().map(String::from),
            )
        })
        .collect()
}

#[test]
fn a_certificate_is_stored_in_order_with_one_record_per_new_reference_and_a_change_each() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let since = head(&w);
    let mut items = certificate(30);
    // Named by name alone, in another case: still the one new method.
    items[7]["method"] = json!({"name": "astm d4052"});
    items[8]["method"] = json!({"name": "ASTM D4052", "xref": null});

    let reply = w
        .server
        .post(&w.results_path(&job, &QUALITY), &w.alice, &items);
    let answer = expect(&reply, 201);
    let answer = answer.as_array().expect("an array");
    assert_eq!(answer.len(), 30);
    let mut ids = Vec::new();
    for (n, created) in answer.iter().enumerate() {
        let (id, body) = envelope(created);
        assert_eq!(body["testNumber"], n, "answers in the order sent: {body}");
        assert_eq!(body["result"], format!("845.{n}"));
        assert_eq!(body["date"], "2026-12-01T11:00:00.000Z", "{body}");
        assert_eq!(body["parent"], job.as_str());
        assert_eq!(body["workspace"], w.ws.as_str());
        // The answer is what a read answers.
        let read = w.read(&w.result_path(&job, &QUALITY, &id));
        assert_eq!(unshape(Shape::EnvelopeInArray, &id, &read), body);
        ids.push(id);
    }
    // One new record per catalog, shared by every item.
    for (catalog, field) in [("tests", "test"), ("testMethods", "method"), ("uom", "uom")] {
        let records = w.items(catalog);
        assert_eq!(records.len(), 1, "{catalog}: {records:?}");
        let (record, _) = &records[0];
        for created in answer {
            assert_eq!(created["body"][field]["id"], record.as_str(), "{created}");
        }
    }
    assert_eq!(w.items("tests")[0].1["xref"], "CERT-DENS");

    let (listed, total) = list_ids(&w.server, &w.alice, &w.results_path(&job, &QUALITY));
    assert_eq!(total, 30);
    assert_eq!(sorted(listed), sorted(ids));

    let types = changes_since(&w, since);
    assert_eq!(count(&types, "qualityResult.created"), 30, "{types:?}");
    assert_eq!(count(&types, "catalogItem.created"), 3, "{types:?}");
    assert_eq!(types.len(), 33, "{types:?}");
}

#[test]
fn one_bad_item_among_30_stores_nothing() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let since = head(&w);
    let items = certificate(30);
    let mut bad = items.clone();
    bad[17] = without(bad[17].clone(), "setNumber");

    let reply = w
        .server
        .post(&w.results_path(&job, &QUALITY), &w.alice, &bad);
    expect_error(&reply, 400, "invalid_items", Some("[17].setNumber"));
    assert_eq!(
        reply.json()["error"]["message"],
        "1 of 30 items is invalid; nothing was stored"
    );
    assert_eq!(
        failed_items(&reply),
        [(17, "missing_field".into(), Some("setNumber".into()))]
    );
    // Nothing stored: no result, no catalog record, no change.
    assert_eq!(
        list(&w.server, &w.alice, &w.results_path(&job, &QUALITY)),
        (vec![], 0)
    );
    for catalog in ["tests", "testMethods", "uom"] {
        assert_eq!(w.items(catalog), vec![], "{catalog}");
    }
    assert_eq!(changes_since(&w, since), Vec::<String>::new());

    // The same certificate without the fault is stored whole.
    let reply = w
        .server
        .post(&w.results_path(&job, &QUALITY), &w.alice, &items);
    assert_eq!(expect(&reply, 201).as_array().map(Vec::len), Some(30));
}

#[test]
fn every_invalid_item_is_reported_with_its_index_and_field() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let mut items = certificate(30);
    items[2]["setNumber"] = json!("one");
    items[5]["colour"] = json!("red");
    items[9] = json!(42);
    items[11]["date"] = json!("2026-12-01T12:00:00Z"); // beside its alias testDate
    items[20] = without(items[20].clone(), "sample.location");
    items[23]["uom"] = json!({"id": MISSING});
    items[29]["notes"] = json!("bell\u{7}");

    let reply = w
        .server
        .post(&w.results_path(&job, &QUALITY), &w.alice, &items);
    expect_error(&reply, 400, "invalid_items", Some("[2].setNumber"));
    assert_eq!(
        reply.json()["error"]["message"],
        "7 of 30 items are invalid; nothing was stored"
    );
    let field = |f: &str| Some(f.to_string());
    assert_eq!(
        failed_items(&reply),
        [
            (2, "invalid_field".into(), field("setNumber")),
            (5, "unknown_field".into(), field("colour")),
            (9, "invalid_field".into(), field("$")),
            (11, "invalid_field".into(), field("date")),
            (20, "missing_field".into(), field("sample.location")),
            (23, "invalid_field".into(), field("uom")),
            (29, "invalid_field".into(), field("notes")),
        ]
    );
    // Each entry is the error a POST of that item alone answers.
    for index in [2, 5, 11, 20, 23, 29] {
        let alone = w
            .server
            .post(&w.results_path(&job, &QUALITY), &w.alice, &items[index]);
        let single = alone.json()["error"].clone();
        let entry = reply.json()["error"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["index"] == index)
            .cloned()
            .unwrap();
        for key in ["status", "code", "message", "field"] {
            assert_eq!(entry[key], single[key], "[{index}] {key}");
        }
    }
    assert_eq!(
        list(&w.server, &w.alice, &w.results_path(&job, &QUALITY)),
        (vec![], 0)
    );
    assert_eq!(w.items("tests"), vec![]);
}

#[test]
fn an_array_holds_1_to_1000_items_and_up_to_8_mib() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let path = w.results_path(&job, &QUALITY);
    for (items, said) in [(0, "this one has 0"), (1001, "this one has 1001")] {
        let reply = w.server.post(&path, &w.alice, &certificate(items));
        expect_error(&reply, 400, "invalid_item_count", Some("$"));
        let message = text(&reply.json()["error"]["message"]);
        assert!(
            message.contains("1 to 1000") && message.contains(said),
            "{message}"
        );
    }
    assert_eq!(list(&w.server, &w.alice, &path), (vec![], 0));

    // 1,000 results with long notes: a body well over 1 MiB.
    let notes = "n".repeat(2_000);
    let items: Vec<Value> = (0..1000)
        .map(|n| with(quality(n), "notes", json!(notes)))
        .collect();
    let items = Value::Array(items);
    assert!(items.to_string().len() > 2 * 1024 * 1024);
    let answer = expect(&w.server.post(&path, &w.alice, &items), 201);
    let answer = answer.as_array().expect("an array");
    assert_eq!(answer.len(), 1000);
    assert_eq!(answer[999]["body"]["testNumber"], 999);
    let (_, total) = list_ids(&w.server, &w.alice, &path);
    assert_eq!(total, 1000);

    // One document is still held to 1 MiB; an array to 8 MiB.
    let big = with(quality(0), "notes", json!("n".repeat(1024 * 1024)));
    let reply = w.server.post(&path, &w.alice, &big);
    reply.assert_error(413, "payload_too_large");
    assert!(text(&reply.json()["error"]["message"]).contains("1048576"));
    let huge = Value::Array(vec![with(
        quality(0),
        "notes",
        json!("n".repeat(8 * 1024 * 1024)),
    )]);
    let reply = w.server.post(&path, &w.alice, &huge);
    reply.assert_error(413, "payload_too_large");
    assert!(text(&reply.json()["error"]["message"]).contains("8388608"));
    assert_eq!(list_ids(&w.server, &w.alice, &path).1, 1000);
}

#[test]
fn time_logs_are_stored_all_or_none_too() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let path = w.results_path(&job, &TIMELOG);
    let mut items: Vec<Value> = (6..10).map(timelog).collect();
    items[2]["end"] = json!("2026-11-21T07:59:00Z");
    let reply = w.server.post(&path, &w.alice, &json!(items));
    expect_error(&reply, 400, "invalid_items", Some("[2].end"));
    assert_eq!(
        failed_items(&reply),
        [(2, "invalid_field".into(), Some("end".into()))]
    );
    assert_eq!(list(&w.server, &w.alice, &path), (vec![], 0));
    assert_eq!(w.items("eventTypes"), vec![]);

    items[2] = timelog(8);
    let answer = expect(&w.server.post(&path, &w.alice, &json!(items)), 201);
    assert_eq!(answer.as_array().map(Vec::len), Some(4));
    for (n, created) in answer.as_array().unwrap().iter().enumerate() {
        let (id, body) = envelope(created);
        assert_eq!(body["start"], format!("2026-11-21T{:02}:00:00.000Z", n + 6));
        assert_eq!(w.read(&w.result_path(&job, &TIMELOG, &id)), body);
    }
    let types = w.items("eventTypes");
    assert_eq!(types.len(), 1, "{types:?}");
    assert!(
        answer
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["body"]["type"] == types[0].0.as_str())
    );
}

#[test]
fn one_object_still_answers_as_before_and_other_kinds_take_no_array() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let reply = w.server.post(
        &w.results_path(&job, &QUALITY),
        &w.alice,
        &without(quality(1), "setNumber"),
    );
    expect_error(&reply, 400, "missing_field", Some("setNumber"));
    assert!(reply.json()["error"].get("items").is_none());
    let (_, body) = envelope(&expect(
        &w.server
            .post(&w.results_path(&job, &QUALITY), &w.alice, &quality(1)),
        201,
    ));
    assert_eq!(body["testNumber"], 1);
    // A one-item array answers an array.
    let answer = expect(
        &w.server
            .post(&w.results_path(&job, &QUALITY), &w.alice, &certificate(1)),
        201,
    );
    assert_eq!(answer.as_array().map(Vec::len), Some(1));
    // Quantity results take one document at a time.
    let reply = w.server.post(
        &w.results_path(&job, &QUANTITY),
        &w.alice,
        &json!([quantity_sample()]),
    );
    expect_error(&reply, 400, "invalid_field", Some("$"));
}

#[test]
fn the_v2_routes_take_wrapped_or_bare_arrays_and_answer_v2_envelopes() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let quality_path = v2_path(&w, &job, "quality-results");
    let since = head(&w);

    let wrapped = expect(
        &w.server
            .post(&quality_path, &w.alice, &json!({"body": certificate(3)})),
        201,
    );
    let bare = expect(
        &w.server.post(&quality_path, &w.alice, &certificate(2)),
        201,
    );
    let mut created = Vec::new();
    for (n, entity) in wrapped
        .as_array()
        .expect("an array")
        .iter()
        .chain(bare.as_array().expect("an array"))
        .enumerate()
    {
        assert_eq!(
            keys(entity),
            ["type", "id", "body", "created_at", "updated_at"],
            "{entity}"
        );
        assert_eq!(entity["type"], "svc.inspection.qualityResult");
        assert_eq!(entity["body"]["testNumber"], if n < 3 { n } else { n - 3 });
        assert_eq!(entity["body"]["test"]["xref"], "CERT-DENS");
        assert!(text(&entity["created_at"]).ends_with('Z'), "{entity}");
        let id = text(&entity["id"]);
        let read = w.read(&w.result_path(&job, &QUALITY, &id));
        assert_eq!(unshape(Shape::EnvelopeInArray, &id, &read), entity["body"]);
        created.push(id);
    }
    let (listed, _) = list_ids(&w.server, &w.alice, &w.results_path(&job, &QUALITY));
    assert_eq!(sorted(listed), sorted(created));
    assert_eq!(w.items("tests").len(), 1);

    // One entity, wrapped: one envelope.
    let one = expect(
        &w.server
            .post(&quality_path, &w.alice, &json!({"body": quality(9)})),
        201,
    );
    assert_eq!(one["type"], "svc.inspection.qualityResult");
    assert_eq!(one["body"]["testNumber"], 9);

    // Fields of a wrapped body are named under `body`.
    let mut items = certificate(3);
    items[1]["setNumber"] = json!(1.5);
    let reply = w
        .server
        .post(&quality_path, &w.alice, &json!({"body": items}));
    expect_error(&reply, 400, "invalid_items", Some("body[1].setNumber"));
    assert_eq!(
        failed_items(&reply),
        [(1, "invalid_field".into(), Some("setNumber".into()))]
    );
    let reply = w.server.post(&quality_path, &w.alice, &json!({"body": []}));
    expect_error(&reply, 400, "invalid_item_count", Some("body"));
    let reply = w.server.post(
        &quality_path,
        &w.alice,
        &json!({"body": without(quality(1), "result")}),
    );
    expect_error(&reply, 400, "missing_field", Some("body.result"));

    let timelogs = expect(
        &w.server.post(
            &v2_path(&w, &job, "timelogs"),
            &w.alice,
            &json!({"body": [timelog(6), timelog(7)]}),
        ),
        201,
    );
    let timelogs = timelogs.as_array().expect("an array");
    assert_eq!(timelogs.len(), 2);
    assert_eq!(timelogs[0]["type"], "svc.inspection.timelog");
    assert_eq!(timelogs[1]["body"]["start"], "2026-11-21T07:00:00.000Z");

    let types = changes_since(&w, since);
    assert_eq!(count(&types, "qualityResult.created"), 6, "{types:?}");
    assert_eq!(count(&types, "timelog.created"), 2, "{types:?}");
}

#[test]
fn strangers_and_missing_jobs_get_404_and_nothing_is_stored() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let (carol, _, carol_ws) = w.outsider("carol");
    let paths = [
        w.results_path(&job, &QUALITY),
        w.results_path(&job, &TIMELOG),
        v2_path(&w, &job, "quality-results"),
        v2_path(&w, &job, "timelogs"),
    ];
    for path in &paths {
        let body = if path.contains("time") {
            json!([timelog(6)])
        } else {
            certificate(2)
        };
        expect_404(&w.server.post(path, &carol, &body));
        let unsigned = w.server.request(
            "POST",
            path,
            None,
            &[("Content-Type", "application/json")],
            Some(body.to_string().as_bytes()),
        );
        unsigned.assert_error(401, "unauthorized");
        // Alice's job under carol's workspace, and a job that does not exist.
        expect_404(
            &w.server
                .post(&path.replace(&w.ws, &carol_ws), &w.alice, &body),
        );
        expect_404(&w.server.post(&path.replace(&job, MISSING), &w.alice, &body));
    }
    for kind in [&QUALITY, &TIMELOG] {
        assert_eq!(
            list(&w.server, &w.alice, &w.results_path(&job, kind)),
            (vec![], 0)
        );
    }
    assert_eq!(w.items("tests"), vec![]);
    assert_eq!(w.items("eventTypes"), vec![]);
}

#[test]
fn a_workspace_no_longer_active_refuses_the_array_once_with_409() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    // No route takes an active workspace back to pending; another process
    // writing the file (as the CLI does) can: the server reads it at once.
    crate::common::store_execute(
        &w.server.data,
        "UPDATE workspaces SET state = 'pending' WHERE id = ?1",
        &[&w.ws],
    );
    let since = head(&w);
    for (path, body) in [
        (w.results_path(&job, &QUALITY), certificate(30)),
        (
            w.results_path(&job, &TIMELOG),
            json!([timelog(6), timelog(7)]),
        ),
        (v2_path(&w, &job, "quality-results"), certificate(2)),
    ] {
        // One 409 for the request, as for one document: not one per item.
        let reply = w.server.post(&path, &w.alice, &body);
        expect_error(&reply, 409, "workspace_not_active", None);
        assert!(
            reply.json()["error"].get("items").is_none(),
            "{}",
            reply.text()
        );
    }
    assert_eq!(changes_since(&w, since), Vec::<String>::new());
}

#[test]
fn items_resolve_references_as_posts_of_one_at_a_time_would() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let older = w
        .create_item_as(&w.alice, "tests", &json!({"name": "Density"}))
        .0;
    let mut items = certificate(5);
    // A new record by xref with a name an older record has: found by xref
    // later, while the name still finds the older record.
    items[0]["test"] = json!({"xref": "NEW-DENS", "name": "Density"});
    items[1]["test"] = json!({"name": "DENSITY"});
    items[2]["test"] = json!({"xref": "NEW-DENS"});
    // A new record by name alone: the next by that name is the same one.
    items[3]["test"] = json!({"name": "Flash point"});
    items[4]["test"] = json!({"name": "flash POINT", "xref": ""});
    let answer = expect(
        &w.server
            .post(&w.results_path(&job, &QUALITY), &w.alice, &json!(items)),
        201,
    );
    let test = |n: usize| text(&answer[n]["body"]["test"]["id"]);
    assert_ne!(test(0), older);
    assert_eq!(test(1), older);
    assert_eq!(test(2), test(0));
    assert_eq!(test(4), test(3));
    assert_eq!(answer[4]["body"]["test"]["name"], "Flash point");
    // Item 0's new record by its id, and the older one by id: as stored.
    let mut again = certificate(2);
    again[0]["test"] = json!(test(0));
    again[1]["test"] = json!({"id": older});
    let answer = expect(
        &w.server
            .post(&w.results_path(&job, &QUALITY), &w.alice, &json!(again)),
        201,
    );
    assert_eq!(answer[0]["body"]["test"]["xref"], "NEW-DENS");
    assert_eq!(answer[1]["body"]["test"]["id"], older.as_str());
    assert_eq!(w.items("tests").len(), 3);
}
