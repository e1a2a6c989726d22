//! Party consent, end to end on both path generations: a workspace that names
//! another tenant's organization is an invitation, pending until that tenant
//! accepts (`POST .../accept`) or declines (`POST .../decline`); until then
//! the invited tenant sees it only in its invitations list (`GET /invitations`,
//! `GET /v2/invitations`), its change feed shows nothing of it, no documents
//! can be added to it, and it does not hold the invited organization.

use super::*;

/// One of the two path generations, and how its answers look.
#[derive(Clone, Copy, Debug)]
enum Gen {
    Older,
    V2,
}

const GENERATIONS: [Gen; 2] = [Gen::Older, Gen::V2];

impl Gen {
    fn prefix(self) -> &'static str {
        match self {
            Gen::Older => "",
            Gen::V2 => "/v2",
        }
    }

    fn workspaces(self) -> String {
        format!("{}/workspaces", self.prefix())
    }

    fn workspace(self, id: &str) -> String {
        format!("{}/workspaces/{id}", self.prefix())
    }

    fn invitations(self) -> String {
        format!("{}/invitations", self.prefix())
    }

    /// `?state=pending` on the older paths, `?filter[body.state]=pending` on v2.
    fn state_filter(self, state: &str) -> String {
        match self {
            Gen::Older => format!("state={state}"),
            Gen::V2 => format!("filter%5Bbody.state%5D={state}"),
        }
    }

    /// A request body in this generation's wrapping.
    fn wrap(self, body: Value) -> Value {
        match self {
            Gen::Older => body,
            Gen::V2 => json!({ "body": body }),
        }
    }

    /// The id and body of a workspace answer, checking the envelope's shape.
    #[track_caller]
    fn unwrap(self, answer: &Value) -> (String, Value) {
        match self {
            Gen::Older => envelope(answer),
            Gen::V2 => {
                assert_eq!(
                    keys(answer),
                    ["type", "id", "body", "created_at", "updated_at"],
                    "{answer}"
                );
                assert_eq!(answer["type"], "svc.hub.workspace", "{answer}");
                (text(&answer["id"]), answer["body"].clone())
            }
        }
    }

    /// POSTs `path` (accept, decline) with no body.
    fn post_empty(self, server: &Server, key: &str, path: &str) -> Reply {
        server.request("POST", path, Some(key), &[], None)
    }

    fn answer(self, server: &Server, key: &str, ws: &str, verb: &str) -> Reply {
        self.post_empty(server, key, &format!("{}/{verb}", self.workspace(ws)))
    }

    /// Creates a workspace as `key`; it must answer 201.
    #[track_caller]
    fn create(self, w: &World, key: &str, client: &str, vendor: &str) -> (String, Value) {
        let body = workspace_body("Consent", Some(client), Some(vendor));
        let reply = w.server.post(&self.workspaces(), key, &self.wrap(body));
        self.unwrap(&expect(&reply, 201))
    }

    /// The ids of a workspace list, with `X-Total-Count`.
    #[track_caller]
    fn ids(self, server: &Server, key: &str, path: &str) -> (Vec<String>, usize) {
        let (items, total) = list(server, key, path);
        (
            items.iter().map(|item| self.unwrap(item).0).collect(),
            total,
        )
    }
}

/// The workspace-related changes of `key`'s feed after `since`: (type, state
/// of the record) for the workspace `ws` and its records.
fn feed_of(w: &World, key: &str, since: u64, ws: &str) -> Vec<(String, Value)> {
    let page = expect(
        &w.server
            .get(&format!("/v2/changes?since={since}&limit=1000"), key),
        200,
    );
    page["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter(|c| c["workspace_id"] == ws)
        .map(|c| (text(&c["type"]), c["record"]["body"]["state"].clone()))
        .collect()
}

/// The head of `key`'s feed.
fn head(w: &World, key: &str) -> u64 {
    expect(&w.server.get("/v2/changes?since=now", key), 200)["next"]
        .as_u64()
        .expect("next")
}

#[test]
fn an_invitation_is_pending_until_the_invited_tenant_accepts_on_both_generations() {
    let w = World::new();
    let (carol, _, _) = w.outsider("carol");
    for paths in GENERATIONS {
        let (ws, body) = paths.create(&w, &w.alice, &w.client_org, &w.vendor_org);
        assert_eq!(body["state"], "pending", "{paths:?}: {body}");
        assert_eq!(body["parties"]["vendor"]["id"], w.vendor_org.as_str());
        let path = paths.workspace(&ws);
        let jobs = format!("/workspaces/{ws}/jobs");

        // The inviter sees it as pending, in its lists too.
        let as_alice = expect(&w.server.get(&path, &w.alice), 200);
        assert_eq!(paths.unwrap(&as_alice).1, body);
        let pending = format!("{}?{}", paths.workspaces(), paths.state_filter("pending"));
        assert!(paths.ids(&w.server, &w.alice, &pending).0.contains(&ws));
        let active = format!("{}?{}", paths.workspaces(), paths.state_filter("active"));
        assert!(!paths.ids(&w.server, &w.alice, &active).0.contains(&ws));
        // Its own invitations list holds only invitations to it.
        assert_eq!(
            paths.ids(&w.server, &w.alice, &paths.invitations()),
            (vec![], 0)
        );

        // The invited tenant sees it only among its invitations.
        expect_404(&w.server.get(&path, &w.bob));
        expect_404(&w.server.get(&jobs, &w.bob));
        expect_404(
            &w.server
                .get(&format!("/v2/workspaces/{ws}/changes"), &w.bob),
        );
        expect_404(
            &w.server
                .patch(&path, &w.bob, &paths.wrap(json!({"description": "x"}))),
        );
        assert!(
            !paths
                .ids(&w.server, &w.bob, &paths.workspaces())
                .0
                .contains(&ws)
        );
        let reply = w.server.get(&paths.invitations(), &w.bob);
        assert_eq!(total(&reply), 1, "{paths:?}: {}", reply.text());
        assert_eq!(expect(&reply, 200), json!([as_alice]));

        // No documents before it is accepted (catalog records may be prepared).
        expect_error(
            &w.server.post(&jobs, &w.alice, &json!({})),
            409,
            "workspace_not_active",
            None,
        );
        expect(
            &w.server.post(
                &format!("/workspaces/{ws}/catalogs/products"),
                &w.alice,
                &json!({"name": "Crude"}),
            ),
            201,
        );

        // Only the invited party answers; to anyone else it is not there.
        paths
            .answer(&w.server, &w.alice, &ws, "accept")
            .assert_error(409, "not_invited");
        paths
            .answer(&w.server, &w.alice, &ws, "decline")
            .assert_error(409, "not_invited");
        expect_404(&paths.answer(&w.server, &carol, &ws, "accept"));
        expect_404(&paths.answer(&w.server, &carol, &ws, "decline"));
        assert_eq!(
            paths.unwrap(&expect(&w.server.get(&path, &w.alice), 200)).1,
            body
        );

        // Accepted: both parties see it, documents may be added.
        let accepted = expect(&paths.answer(&w.server, &w.bob, &ws, "accept"), 200);
        let (id, accepted_body) = paths.unwrap(&accepted);
        assert_eq!(id, ws);
        let mut expected = body.clone();
        expected["state"] = json!("active");
        assert_eq!(accepted_body, expected);
        if let Gen::V2 = paths {
            assert_eq!(accepted["created_at"], as_alice["created_at"]);
        }
        assert_eq!(expect(&w.server.get(&path, &w.bob), 200), accepted);
        assert_eq!(expect(&w.server.get(&path, &w.alice), 200), accepted);
        assert!(
            paths
                .ids(&w.server, &w.bob, &paths.workspaces())
                .0
                .contains(&ws)
        );
        assert_eq!(
            paths.ids(&w.server, &w.bob, &paths.invitations()),
            (vec![], 0)
        );
        let (_, job) = envelope(&expect(&w.server.post(&jobs, &w.bob, &json!({})), 201));
        assert_eq!(job["client"], w.client_org.as_str());
        assert_eq!(job["vendor"], w.vendor_org.as_str());

        // Answering again the same way changes nothing; the other way is a 409.
        assert_eq!(
            expect(&paths.answer(&w.server, &w.bob, &ws, "accept"), 200),
            accepted
        );
        paths
            .answer(&w.server, &w.bob, &ws, "decline")
            .assert_error(409, "invitation_answered");
        // An accepted workspace holds the invited organization.
        w.server
            .delete(&format!("/v2/organizations/{}", w.vendor_org), &w.bob)
            .assert_error(409, "organization_in_use");
        // A workspace without an invitation has nothing to answer.
        paths
            .answer(&w.server, &w.alice, &w.ws, "accept")
            .assert_error(409, "not_invited");
    }
}

#[test]
fn a_declined_invitation_stays_the_inviter_s_alone_and_frees_the_invited_organization() {
    let w = World::new();
    for paths in GENERATIONS {
        let survey = create_org(&w.server, &w.bob, &format!("Bob Survey {paths:?}"));
        let (ws, body) = paths.create(&w, &w.alice, &w.client_org, &survey);
        let path = paths.workspace(&ws);

        let declined = expect(&paths.answer(&w.server, &w.bob, &ws, "decline"), 200);
        let (_, declined_body) = paths.unwrap(&declined);
        let mut expected = body.clone();
        expected["state"] = json!("declined");
        assert_eq!(declined_body, expected);

        // Gone for the invited tenant, for good.
        expect_404(&w.server.get(&path, &w.bob));
        expect_404(&paths.answer(&w.server, &w.bob, &ws, "accept"));
        assert_eq!(
            paths.ids(&w.server, &w.bob, &paths.invitations()),
            (vec![], 0)
        );
        assert!(
            !paths
                .ids(&w.server, &w.bob, &paths.workspaces())
                .0
                .contains(&ws)
        );

        // The inviter sees it declined; still no documents.
        assert_eq!(expect(&w.server.get(&path, &w.alice), 200), declined);
        expect_error(
            &w.server
                .post(&format!("/workspaces/{ws}/jobs"), &w.alice, &json!({})),
            409,
            "workspace_not_active",
            None,
        );
        paths
            .answer(&w.server, &w.alice, &ws, "accept")
            .assert_error(409, "not_invited");
        // An admin answers for the invited party, but this one was answered.
        paths
            .answer(&w.server, &w.admin, &ws, "accept")
            .assert_error(409, "invitation_answered");

        // The declined invitation does not hold bob's organization.
        expect(
            &w.server
                .delete(&format!("/v2/organizations/{survey}"), &w.bob),
            200,
        );
        let after = paths.unwrap(&expect(&w.server.get(&path, &w.alice), 200)).1;
        assert_eq!(after["state"], "declined");
        assert_eq!(after["parties"]["vendor"]["id"], Value::Null);
        assert_eq!(after["parties"]["client"]["id"], w.client_org.as_str());
        // The inviter removes it.
        expect(&w.server.delete(&path, &w.alice), 200);
        expect_404(&w.server.get(&path, &w.alice));
    }
}

#[test]
fn a_pending_invitation_does_not_hold_the_invited_organization() {
    let w = World::new();
    for paths in GENERATIONS {
        let survey = create_org(&w.server, &w.bob, &format!("Bob Pending {paths:?}"));
        let (ws, _) = paths.create(&w, &w.alice, &w.client_org, &survey);
        let deleted = w
            .server
            .delete(&format!("/v2/organizations/{survey}"), &w.bob);
        assert_eq!(deleted.status, 200, "{paths:?}: {}", deleted.text());
        // Nobody is left to answer: the invitation ends as declined.
        let after = paths
            .unwrap(&expect(&w.server.get(&paths.workspace(&ws), &w.alice), 200))
            .1;
        assert_eq!(after["state"], "declined", "{after}");
        assert_eq!(after["parties"]["vendor"]["id"], Value::Null);
        assert_eq!(
            paths.ids(&w.server, &w.bob, &paths.invitations()),
            (vec![], 0)
        );
        expect_404(&paths.answer(&w.server, &w.bob, &ws, "accept"));
    }
}

#[test]
fn workspaces_within_one_tenant_or_made_by_an_admin_are_active_at_once() {
    let w = World::new();
    let second = create_org(&w.server, &w.alice, "Alice Terminals");
    for paths in GENERATIONS {
        // Both parties of the caller's own tenant, or one party: no invitation.
        let (_, own) = paths.create(&w, &w.alice, &w.client_org, &second);
        assert_eq!(own["state"], "active", "{own}");
        let reply = w.server.post(
            &paths.workspaces(),
            &w.alice,
            &paths.wrap(json!({"parties": {"client": {"id": w.client_org}}})),
        );
        assert_eq!(paths.unwrap(&expect(&reply, 201)).1["state"], "active");

        // An admin stands for both parties: its workspace is active for both.
        let (by_admin, body) = paths.create(&w, &w.admin, &w.client_org, &w.vendor_org);
        assert_eq!(body["state"], "active", "{body}");
        expect(&w.server.get(&paths.workspace(&by_admin), &w.bob), 200);
        expect(&w.server.get(&paths.workspace(&by_admin), &w.alice), 200);

        // An admin's invitations list holds every pending invitation, and an
        // admin may answer one.
        let (pending, _) = paths.create(&w, &w.alice, &w.client_org, &w.vendor_org);
        let (admin_sees, _) = paths.ids(&w.server, &w.admin, &paths.invitations());
        assert!(admin_sees.contains(&pending), "{paths:?}");
        let accepted = expect(&paths.answer(&w.server, &w.admin, &pending, "accept"), 200);
        assert_eq!(paths.unwrap(&accepted).1["state"], "active");
        expect(&w.server.get(&paths.workspace(&pending), &w.bob), 200);
    }
}

#[test]
fn the_invited_tenant_s_feed_shows_nothing_until_it_accepts() {
    // Webhooks to 127.0.0.1 (never delivered: the port is closed).
    let w = World::on(Server::start_with(&["--webhook-allow-private"]));
    let hook = |workspace: &str| {
        w.server.post(
            "/v2/webhooks",
            &w.bob,
            &json!({"body": {"url": "http://127.0.0.1:1/hook", "workspace_id": workspace}}),
        )
    };
    for paths in GENERATIONS {
        let (alice_from, bob_from) = (head(&w, &w.alice), head(&w, &w.bob));
        let (ws, _) = paths.create(&w, &w.alice, &w.client_org, &w.vendor_org);
        expect(
            &w.server.post(
                &format!("/workspaces/{ws}/catalogs/products"),
                &w.alice,
                &json!({"name": "Crude"}),
            ),
            201,
        );
        assert_eq!(
            feed_of(&w, &w.alice, alice_from, &ws),
            [
                ("workspace.created".to_string(), json!("pending")),
                ("catalogItem.created".to_string(), Value::Null)
            ]
        );
        assert_eq!(feed_of(&w, &w.bob, bob_from, &ws), []);
        // Nor can the invited tenant's webhook follow it yet.
        expect_error(&hook(&ws), 400, "invalid_field", Some("body.workspace_id"));
        // Accepting is a `workspace.updated`, the first the invited tenant sees.
        expect(&paths.answer(&w.server, &w.bob, &ws, "accept"), 200);
        expect(&hook(&ws), 201);
        let updated = ("workspace.updated".to_string(), json!("active"));
        assert_eq!(
            feed_of(&w, &w.bob, bob_from, &ws),
            std::slice::from_ref(&updated)
        );
        assert_eq!(
            feed_of(&w, &w.alice, alice_from, &ws).last(),
            Some(&updated)
        );
        let page = expect(
            &w.server.get(
                &format!("/v2/workspaces/{ws}/changes?since={bob_from}"),
                &w.bob,
            ),
            200,
        );
        let changes = page["changes"].as_array().expect("changes");
        assert_eq!(changes.len(), 1, "{page}");
        assert_eq!(changes[0]["actor"], "bob");

        // Declining shows only in the inviter's feed.
        let (alice_from, bob_from) = (head(&w, &w.alice), head(&w, &w.bob));
        let (declined, _) = paths.create(&w, &w.alice, &w.client_org, &w.vendor_org);
        expect(&paths.answer(&w.server, &w.bob, &declined, "decline"), 200);
        assert_eq!(feed_of(&w, &w.bob, bob_from, &declined), []);
        assert_eq!(
            feed_of(&w, &w.alice, alice_from, &declined),
            [
                ("workspace.created".to_string(), json!("pending")),
                ("workspace.updated".to_string(), json!("declined"))
            ]
        );
    }
}

#[test]
fn a_job_names_only_its_workspace_s_parties_as_client_and_vendor() {
    let w = World::new();
    let (_, carol_org, _) = w.outsider("carol");
    let (job, created) = w.create_job(json!({"client": w.vendor_org, "vendor": w.client_org}));
    assert_eq!(created["client"], w.vendor_org.as_str());
    for field in ["client", "vendor"] {
        expect_error(
            &w.server
                .post(&w.jobs_path(), &w.bob, &json!({ field: carol_org })),
            400,
            "invalid_field",
            Some(field),
        );
        expect_error(
            &w.patch(&w.job_path(&job), &json!({ field: carol_org })),
            400,
            "invalid_field",
            Some(field),
        );
    }
    let patched = expect(
        &w.patch(&w.job_path(&job), &json!({"client": w.client_org})),
        200,
    );
    assert_eq!(patched["client"], w.client_org.as_str());
    assert_eq!(w.read(&w.job_path(&job)), patched);
}

#[test]
fn a_workspace_body_read_back_may_carry_its_state_which_changes_nothing() {
    let w = World::new();
    for paths in GENERATIONS {
        let (ws, body) = paths.create(&w, &w.alice, &w.client_org, &w.vendor_org);
        let path = paths.workspace(&ws);
        let mut sent = body.clone();
        sent["description"] = json!("Read back and sent again");
        sent["state"] = json!("active");
        let patched = paths
            .unwrap(&expect(
                &w.server.patch(&path, &w.alice, &paths.wrap(sent)),
                200,
            ))
            .1;
        assert_eq!(patched["state"], "pending", "{patched}");
        assert_eq!(patched["description"], "Read back and sent again");
        let field = match paths {
            Gen::Older => "state",
            Gen::V2 => "body.state",
        };
        expect_error(
            &w.server
                .patch(&path, &w.alice, &paths.wrap(json!({"state": "accepted"}))),
            400,
            "invalid_field",
            Some(field),
        );
        // The state filter is an exact match, like every list filter.
        let sideways = format!("{}?{}", paths.workspaces(), paths.state_filter("sideways"));
        assert_eq!(paths.ids(&w.server, &w.alice, &sideways), (vec![], 0));
    }
}

/// A tenant's workspace list without a filter answers its total from a count
/// kept with the list's rows (`tenant_workspaces`): through an invitation,
/// its acceptance and its refusal, a workspace deleted, and past the bound
/// at which other totals stop counting, `X-Total-Count` of a page of one is
/// the number of workspaces the tenant finds walking the list, and exact.
#[test]
fn a_tenant_s_workspace_total_is_kept_through_invitations_deletes_and_past_the_bound() {
    let w = World::new();
    let (carol, carol_org, _) = w.outsider("carol");
    // The total at a page of one (so it is not the page's length), checked
    // against the list walked through.
    let total_of = |key: &str| -> usize {
        let reply = w.server.get("/v2/workspaces?limit=1", key);
        let counted = total(&reply);
        assert_eq!(reply.header("x-total-count-capped"), None);
        let mut seen = 0;
        let mut next = Some("/v2/workspaces?limit=1000".to_string());
        while let Some(path) = next.take() {
            let page = w.server.get(&path, key);
            seen += expect(&page, 200).as_array().expect("a page").len();
            next = page.header("link").map(|link| {
                link.trim_start_matches('<')
                    .split('>')
                    .next()
                    .unwrap()
                    .to_string()
            });
        }
        assert_eq!(counted, seen, "X-Total-Count against the list");
        counted
    };
    let (alice, bob, carol_count) = (total_of(&w.alice), total_of(&w.bob), total_of(&carol));
    assert_eq!((alice, bob, carol_count), (1, 1, 1));

    // An invitation counts for the inviter; accepted, for the invited too.
    let (accepted, _) = Gen::V2.create(&w, &w.alice, &w.client_org, &w.vendor_org);
    assert_eq!((total_of(&w.alice), total_of(&w.bob)), (2, 1));
    expect(&Gen::V2.answer(&w.server, &w.bob, &accepted, "accept"), 200);
    assert_eq!((total_of(&w.alice), total_of(&w.bob)), (2, 2));
    // Declined: the invited tenant never counts it.
    let (declined, _) = Gen::V2.create(&w, &carol, &carol_org, &w.vendor_org);
    assert_eq!((total_of(&carol), total_of(&w.bob)), (2, 2));
    expect(
        &Gen::V2.answer(&w.server, &w.bob, &declined, "decline"),
        200,
    );
    assert_eq!(total_of(&w.bob), 2);
    let carol_after = total_of(&carol);
    // Deleted: gone from both parties' totals.
    let reply = w
        .server
        .delete(&format!("/v2/workspaces/{accepted}"), &w.alice);
    assert!(
        reply.status < 300,
        "{}\n{}",
        reply.text(),
        w.server.log_text()
    );
    assert_eq!((total_of(&w.alice), total_of(&w.bob)), (1, 1));
    assert_eq!(total_of(&carol), carol_after);

    // Past the bound of a counted total (1,000): still exact, not capped.
    for i in 0..1000 {
        let body = workspace_body(&format!("Own {i}"), Some(&w.client_org), None);
        let reply = w
            .server
            .post("/v2/workspaces", &w.alice, &json!({ "body": body }));
        expect(&reply, 201);
    }
    assert_eq!(total_of(&w.alice), 1001);
    // A filter counts the rows, up to the bound, as every other list does.
    let filtered = w.server.get(
        "/v2/workspaces?limit=1&filter%5Bbody.state%5D=active",
        &w.alice,
    );
    assert_eq!(filtered.header("x-total-count"), Some("1000"));
    assert_eq!(filtered.header("x-total-count-capped"), Some("true"));
    assert_eq!(total_of(&w.bob), 1);
}

/// Reads keep a workspace in memory between the commits that leave the
/// workspaces alone (`workspaces::scope::Scopes`). The invited tenant, reading
/// again and again while documents are written in another workspace and in
/// this one, sees each change of the workspace itself at once: it is absent
/// while pending, there once accepted, gone once deleted.
#[test]
fn a_workspace_kept_for_reads_follows_its_consent_and_its_deletion_at_once() {
    let w = World::new();
    let (ws, _) = create_workspace(
        &w.server,
        &w.alice,
        &workspace_body("Kept", Some(&w.client_org), Some(&w.vendor_org)),
    );
    let jobs = format!("/workspaces/{ws}/jobs");
    let elsewhere = format!("/workspaces/{}/jobs", w.ws);
    // Read twice (the second finds it kept), then a write elsewhere.
    let read_twice = |key: &str, path: &str| {
        let first = w.server.get(path, key);
        let second = w.server.get(path, key);
        assert_eq!(first.status, second.status, "{}", second.text());
        assert_eq!(first.text(), second.text());
        expect(&w.server.post(&elsewhere, &w.alice, &json!({})), 201);
        second
    };

    expect_404(&read_twice(&w.bob, &jobs));
    expect_404(&read_twice(&w.bob, &jobs));
    expect(&read_twice(&w.alice, &jobs), 200);

    accept(&w.server, &w.bob, &ws);
    let (listed, total) = list(&w.server, &w.bob, &jobs);
    assert_eq!((listed.len(), total), (0, 0));
    let (job, _) = envelope(&expect(&w.server.post(&jobs, &w.alice, &json!({})), 201));
    let path = format!("{jobs}/{job}");
    expect(&read_twice(&w.bob, &path), 200);
    // A document of this workspace written: still the same workspace.
    expect(
        &w.server
            .post(&format!("{path}/quality"), &w.alice, &quality_sample()),
        201,
    );
    expect(&read_twice(&w.bob, &path), 200);

    // Emptied, then deleted: gone for both at once.
    delete_job_and_results(&w.server, &w.alice, &path);
    expect(&read_twice(&w.bob, &jobs), 200);
    expect(
        &w.server.delete(&format!("/workspaces/{ws}"), &w.alice),
        200,
    );
    expect_404(&w.server.get(&jobs, &w.bob));
    expect_404(&w.server.get(&jobs, &w.alice));
}
