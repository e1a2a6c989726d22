//! Workspaces: create (the body as stored, the parties checked), patch (the
//! description, never the parties) and delete (only when empty).

use super::*;

#[test]
fn workspace_create_answers_an_envelope_with_the_body_as_stored() {
    let w = World::new();
    let body = json!({
        "description": "Crude discharge",
        "parties": {
            "client": {"id": w.client_org, "xref": "CL-1"},
            "vendor": {"id": w.vendor_org, "xref": "VN-9"}
        }
    });
    let (id, created) = create_workspace(&w.server, &w.alice, &body);
    // Bob's organization is another tenant's: the workspace invites it.
    let mut stored = body.clone();
    stored["state"] = json!("pending");
    assert_eq!(created, stored);
    assert_eq!(keys(&created), ["description", "parties", "state"]);
    assert_eq!(keys(&created["parties"]), ["client", "vendor"]);
    assert_eq!(keys(&created["parties"]["client"]), ["id", "xref"]);

    let read = w.read(&format!("/workspaces/{id}"));
    assert_eq!(read, json!({"id": id, "body": stored}));

    // One party, no xref, no description: the rest reads back as null.
    let (_, lone) = create_workspace(
        &w.server,
        &w.alice,
        &json!({"parties": {"client": {"id": w.client_org}}}),
    );
    assert_eq!(
        lone,
        json!({
            "description": null,
            "parties": {
                "client": {"id": w.client_org, "xref": null},
                "vendor": {"id": null, "xref": null}
            },
            "state": "active"
        })
    );

    // The vendor's tenant may create one too, owning the vendor party.
    let (_, by_vendor) = create_workspace(
        &w.server,
        &w.bob,
        &workspace_body(
            "Invited by the vendor",
            Some(&w.client_org),
            Some(&w.vendor_org),
        ),
    );
    assert_eq!(by_vendor["parties"]["vendor"]["id"], w.vendor_org.as_str());
    assert_eq!(by_vendor["state"], "pending", "{by_vendor}");
}

#[test]
fn workspace_create_checks_its_parties() {
    let w = World::new();
    let (_, carol_org, _) = w.outsider("carol");
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"description": "no parties"}),
            "invalid_field",
            "parties",
        ),
        (json!({"parties": {}}), "invalid_field", "parties"),
        (json!({"parties": null}), "invalid_field", "parties"),
        (
            json!({"parties": {"client": {"xref": "only an xref"}}}),
            "invalid_field",
            "parties",
        ),
        (
            json!({"parties": {"client": {"id": MISSING}}}),
            "invalid_field",
            "parties.client.id",
        ),
        (
            json!({"parties": {"client": {"id": w.client_org}, "vendor": {"id": "not-an-org"}}}),
            "invalid_field",
            "parties.vendor.id",
        ),
        // Neither party is an organization of alice's tenant.
        (
            json!({"parties": {"vendor": {"id": w.vendor_org}}}),
            "invalid_field",
            "parties.vendor.id",
        ),
        (
            json!({"parties": {"client": {"id": carol_org}, "vendor": {"id": w.vendor_org}}}),
            "invalid_field",
            "parties.client.id",
        ),
        (
            json!({"parties": {"client": {"id": 42}}}),
            "invalid_field",
            "parties.client.id",
        ),
        (
            json!({"description": 7, "parties": {"client": {"id": w.client_org}}}),
            "invalid_field",
            "description",
        ),
        (
            json!({"colour": "red", "parties": {"client": {"id": w.client_org}}}),
            "unknown_field",
            "colour",
        ),
        (
            json!({"parties": {"broker": {"id": w.client_org}}}),
            "unknown_field",
            "parties.broker",
        ),
        (
            json!({"parties": {"client": {"id": w.client_org, "name": "x"}}}),
            "unknown_field",
            "parties.client.name",
        ),
        (json!(["not", "an", "object"]), "invalid_field", "$"),
    ];
    for (body, code, field) in &cases {
        let reply = w.server.post("/workspaces", &w.alice, body);
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        expect_error(&reply, 400, code, Some(field));
    }
    let broken = w.server.request(
        "POST",
        "/workspaces",
        Some(&w.alice),
        &[("Content-Type", "application/json")],
        Some(b"{\"description\":"),
    );
    broken.assert_error(400, "invalid_json");

    // Nothing was created.
    let (ids, count) = list_ids(&w.server, &w.alice, "/workspaces");
    assert_eq!((ids, count), (vec![w.ws.clone()], 1));
}

#[test]
fn workspace_patch_changes_the_description_and_never_the_parties() {
    let w = World::new();
    let path = w.ws_path();
    let before = w.read(&path);

    let answer = expect(&w.patch(&path, &json!({"description": "Renamed"})), 200);
    let (id, body) = envelope(&answer);
    assert_eq!(id, w.ws);
    assert_eq!(body["description"], "Renamed");
    assert_eq!(body["parties"], before["body"]["parties"]);
    assert_eq!(w.read(&path), answer);

    // Parties in a patch are accepted and change nothing.
    let (_, carol_org, _) = w.outsider("carol");
    let answer = expect(
        &w.patch(
            &path,
            &json!({
                "description": "Again",
                "parties": {"client": {"id": carol_org, "xref": "NEW"}, "vendor": null}
            }),
        ),
        200,
    );
    assert_eq!(answer["body"]["description"], "Again");
    assert_eq!(answer["body"]["parties"], before["body"]["parties"]);
    let only_parties = expect(
        &w.patch(&path, &json!({"parties": {"vendor": {"id": MISSING}}})),
        200,
    );
    assert_eq!(only_parties, answer);
    assert_eq!(w.read(&path), answer);

    // An empty patch changes nothing; null clears the description.
    assert_eq!(expect(&w.patch(&path, &json!({})), 200), answer);
    let cleared = expect(&w.patch(&path, &json!({"description": null})), 200);
    assert_eq!(cleared["body"]["description"], Value::Null);

    expect_error(
        &w.patch(&path, &json!({"colour": "red"})),
        400,
        "unknown_field",
        Some("colour"),
    );
    expect_error(
        &w.patch(&path, &json!({"description": ["x"]})),
        400,
        "invalid_field",
        Some("description"),
    );
    expect_404(&w.patch(
        &format!("/workspaces/{MISSING}"),
        &json!({"description": "x"}),
    ));
    assert_eq!(w.read(&path), cleared);
}

#[test]
fn deleting_an_empty_workspace_answers_its_envelope_then_it_is_gone() {
    let w = World::new();
    let (id, _) = create_workspace(
        &w.server,
        &w.alice,
        &workspace_body("Short-lived", Some(&w.client_org), Some(&w.vendor_org)),
    );
    let path = format!("/workspaces/{id}");
    // Catalog records and synonyms do not keep a workspace alive.
    let item = |name: &str| {
        let reply = w.server.post(
            &format!("{path}/catalogs/products"),
            &w.alice,
            &json!({"name": name}),
        );
        envelope(&expect(&reply, 201)).0
    };
    let (a, b) = (item("Crude"), item("Crude oil"));
    expect(
        &w.server.post(
            &format!("{path}/catalogs/products/{a}/synonyms/{b}"),
            &w.alice,
            &json!({}),
        ),
        201,
    );

    let before = w.read(&path);
    let deleted = expect(&w.server.delete(&path, &w.alice), 200);
    assert_eq!(deleted, before);
    expect_404(&w.server.get(&path, &w.alice));
    expect_404(&w.server.get(&format!("{path}/catalogs/products"), &w.alice));
    expect_404(&w.server.delete(&path, &w.alice));
    expect_404(&w.patch(&path, &json!({"description": "back?"})));
    let (ids, count) = list_ids(&w.server, &w.alice, "/workspaces");
    assert_eq!((ids, count), (vec![w.ws.clone()], 1));

    expect_404(&w.server.delete(&format!("/workspaces/{MISSING}"), &w.alice));
    expect_404(&w.server.delete("/workspaces/not-a-uuid", &w.alice));
}

#[test]
fn deleting_a_workspace_with_a_job_is_refused_and_changes_nothing() {
    let w = World::new();
    let (job, job_body) = w.create_job(json!({"notes": "keep me"}));
    let before = w.read(&w.ws_path());

    let reply = w.server.delete(&w.ws_path(), &w.alice);
    expect_error(&reply, 409, "workspace_not_empty", None);
    assert_eq!(reply.json()["error"]["message"], "Workspace is not empty");

    assert_eq!(w.read(&w.ws_path()), before);
    assert_eq!(w.read(&w.job_path(&job)), job_body);
    assert_eq!(
        list_ids(&w.server, &w.alice, &w.jobs_path()),
        (vec![job], 1)
    );
}
