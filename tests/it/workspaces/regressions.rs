//! Known bugs found while these tests were written, fixed since; each is kept
//! as a regression test.

use super::*;

/// Sends one job body with `eta` set and expects 400 naming `eta`.
#[track_caller]
fn assert_eta_refused(w: &World, eta: &str) {
    let reply = w
        .server
        .post(&w.jobs_path(), &w.alice, &json!({"eta": eta}));
    assert_eq!(reply.status, 400, "eta {eta}: {}", reply.text());
    expect_error(&reply, 400, "invalid_field", Some("eta"));
    expect(&w.server.get("/healthz", &w.alice), 200);
}

#[test]
fn regression_a_datetime_past_year_9999_in_utc_is_refused_not_a_500() {
    let w = World::new();
    assert_eta_refused(&w, "9999-12-31T23:59:59-01:00");
}

#[test]
fn regression_a_datetime_before_year_0_in_utc_is_refused() {
    let w = World::new();
    assert_eta_refused(&w, "0000-01-01T00:30:00+01:00");
}

#[test]
fn regression_clearing_a_job_status_leaves_it_pending() {
    let w = World::new();
    let (id, _) = w.create_job(json!({}));
    let answer = expect(&w.patch(&w.job_path(&id), &json!({"status": null})), 200);
    assert_eq!(answer["status"], "pending", "{answer}");
    assert_eq!(w.job_status(&id), "pending");
    let (ids, count) = list_ids(
        &w.server,
        &w.alice,
        &with_query(&w.jobs_path(), &[("status", "pending")]),
    );
    assert_eq!((ids, count), (vec![id], 1));
}

#[test]
fn regression_a_job_that_is_a_parent_is_not_deleted_from_under_its_child() {
    let w = World::new();
    let (parent, parent_body) = w.create_job(json!({}));
    let (child, _) = w.create_job(json!({"parent": parent}));
    // The contract: deleting something still referenced answers 409.
    let reply = w.server.delete(&w.job_path(&parent), &w.alice);
    assert_eq!(reply.status, 409, "{}", reply.text());
    assert_eq!(w.read(&w.job_path(&parent)), parent_body);
    let answer = expect(
        &w.patch(&w.job_path(&child), &json!({"notes": "still editable"})),
        200,
    );
    assert_eq!(answer["parent"], parent.as_str());
}

#[test]
fn regression_an_organization_a_job_names_is_not_deleted_from_under_it() {
    let w = World::new();
    // A job names only its workspace's parties (party consent), so it cannot
    // pin any other organization.
    let broker = create_org(&w.server, &w.alice, "Alice Brokers");
    expect_error(
        &w.server
            .post(&w.jobs_path(), &w.alice, &json!({"client": broker})),
        400,
        "invalid_field",
        Some("client"),
    );
    expect(
        &w.server
            .delete(&format!("/v2/organizations/{broker}"), &w.alice),
        200,
    );
    // The organization a job does name stays.
    let (job, _) = w.create_job(json!({"vendor": w.client_org}));
    let reply = w
        .server
        .delete(&format!("/v2/organizations/{}", w.client_org), &w.alice);
    assert_eq!(reply.status, 409, "{}", reply.text());
    expect(
        &w.server
            .get(&format!("/v2/organizations/{}", w.client_org), &w.alice),
        200,
    );
    let answer = expect(
        &w.patch(&w.job_path(&job), &json!({"notes": "still editable"})),
        200,
    );
    assert_eq!(answer["vendor"], w.client_org.as_str());
}

#[test]
fn regression_a_catalog_item_cannot_be_patched_to_a_blank_name_without_xref() {
    let w = World::new();
    let id = w.create_item("products", "Brent", "BRENT");
    let path = w.item_path("products", &id);
    for name in ["", "   "] {
        let reply = w.patch(&path, &json!({"name": name, "xref": null}));
        assert_eq!(reply.status, 400, "name {name:?}: {}", reply.text());
        assert_eq!(reply.error_field().as_deref(), Some("name"));
    }
    assert_eq!(
        w.read(&path),
        json!({"name": "Brent", "xref": "BRENT", "ownerParty": w.client_org})
    );
}
