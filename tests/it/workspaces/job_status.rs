//! Job status: the allowed and disallowed transitions, and completion only with
//! what the job requested.

use super::*;

#[test]
fn every_allowed_status_transition_works() {
    let w = World::new();
    for (from, to) in ALLOWED_TRANSITIONS {
        let (id, _) = w.create_job(json!({"status": from, "notes": "n"}));
        let answer = expect(&w.patch(&w.job_path(&id), &json!({"status": to})), 200);
        assert_eq!(answer["status"], to, "{from} -> {to}");
        assert_eq!(answer["notes"], "n");
        assert_eq!(w.job_status(&id), to, "{from} -> {to}");
    }
    // Staying in a status is no transition.
    for status in STATUSES {
        let (id, _) = w.create_job(json!({"status": status}));
        let answer = expect(
            &w.patch(
                &w.job_path(&id),
                &json!({"status": status, "notes": "same"}),
            ),
            200,
        );
        assert_eq!(answer["status"], status);
        assert_eq!(answer["notes"], "same");
    }
    // A whole life: pending, active, complete, reopened, cancelled, reinstated.
    let (id, _) = w.create_job(json!({}));
    for status in [
        "active",
        "complete",
        "active",
        "cancelled",
        "pending",
        "active",
    ] {
        let answer = expect(&w.patch(&w.job_path(&id), &json!({"status": status})), 200);
        assert_eq!(answer["status"], status);
    }
}

#[test]
fn disallowed_status_transitions_answer_409_and_change_nothing() {
    let w = World::new();
    // The table is exactly the complement of the allowed ones.
    for from in STATUSES {
        for to in STATUSES.iter().filter(|to| **to != from) {
            assert!(
                ALLOWED_TRANSITIONS.contains(&(from, *to))
                    != DISALLOWED_TRANSITIONS.contains(&(from, *to))
            );
        }
    }
    for (from, to) in DISALLOWED_TRANSITIONS {
        let (id, before) = w.create_job(json!({"status": from, "notes": "before"}));
        let reply = w.patch(&w.job_path(&id), &json!({"status": to, "notes": "after"}));
        assert_eq!(reply.status, 409, "{from} -> {to}: {}", reply.text());
        expect_error(&reply, 409, "invalid_status_transition", None);
        assert_eq!(w.read(&w.job_path(&id)), before, "{from} -> {to}");
    }
}

#[test]
fn completing_a_job_needs_what_it_requested() {
    let w = World::new();
    // One requested kind at a time.
    for (flag, kind) in [
        ("quality", &QUALITY),
        ("quantity", &QUANTITY),
        ("timelog", &TIMELOG),
    ] {
        let (id, _) = w
            .create_job(json!({"status": "active", "activity": "load", "requested": {flag: true}}));
        let reply = w.patch(&w.job_path(&id), &json!({"status": "complete"}));
        expect_error(&reply, 409, "job_incomplete", None);
        assert_eq!(w.job_status(&id), "active");
        w.create_sample(&id, kind);
        let answer = expect(
            &w.patch(&w.job_path(&id), &json!({"status": "complete"})),
            200,
        );
        assert_eq!(answer["status"], "complete", "requested {flag}");
    }

    // Everything requested, nothing there: the message names all three.
    let (id, _) = w.create_job(json!({
        "status": "active",
        "activity": "load",
        "requested": {"quality": true, "quantity": true, "timelog": true}
    }));
    let reply = w.patch(&w.job_path(&id), &json!({"status": "complete"}));
    expect_error(&reply, 409, "job_incomplete", None);
    let message = text(&reply.json()["error"]["message"]);
    for needed in ["quality result", "quantity result", "time log"] {
        assert!(message.contains(needed), "{message}");
    }
    for kind in [&QUALITY, &QUANTITY] {
        w.create_sample(&id, kind);
        expect_error(
            &w.patch(&w.job_path(&id), &json!({"status": "complete"})),
            409,
            "job_incomplete",
            None,
        );
    }
    w.create_sample(&id, &TIMELOG);
    expect(
        &w.patch(&w.job_path(&id), &json!({"status": "complete"})),
        200,
    );

    // A discharge job that requested quantity also needs load port information.
    let (id, _) = w.create_job(
        json!({"status": "active", "activity": "discharge", "requested": {"quantity": true}}),
    );
    w.create_sample(&id, &QUANTITY);
    let reply = w.patch(&w.job_path(&id), &json!({"status": "complete"}));
    expect_error(&reply, 409, "job_incomplete", None);
    assert!(text(&reply.json()["error"]["message"]).contains("load port information"));
    w.create_sample(&id, &LPI);
    expect(
        &w.patch(&w.job_path(&id), &json!({"status": "complete"})),
        200,
    );
    assert_eq!(w.job_status(&id), "complete");

    // Nothing requested: nothing needed. Created complete with a request: refused.
    let (id, _) = w.create_job(json!({"status": "active", "activity": "discharge"}));
    expect(
        &w.patch(&w.job_path(&id), &json!({"status": "complete"})),
        200,
    );
    let reply = w.server.post(
        &w.jobs_path(),
        &w.alice,
        &json!({"status": "complete", "requested": {"quality": true}}),
    );
    expect_error(&reply, 409, "job_incomplete", None);
}
