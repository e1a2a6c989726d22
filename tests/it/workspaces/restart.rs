//! Restart: a furnished workspace reads back identically from the same file.

use super::*;

#[test]
fn workspace_data_survives_a_restart() {
    let mut server = Server::start();
    let _dir = server.take_dir();
    let mut w = World::on(server);
    let f = w.furnish();
    let paths = w.readable_paths(&f);
    let before = snapshot(&w.server, &w.alice, &paths);
    let (workspaces, _) = list(&w.server, &w.alice, "/workspaces");
    w.server.stop();

    let again = Server::spawn(&w.server.data, &[]);
    let alice = again.login("alice", "alice-password");
    assert_eq!(snapshot(&again, &alice, &paths), before);
    assert_eq!(list(&again, &alice, "/workspaces").0, workspaces);
    let mallory = again.add_user("mallory", &[]);
    expect_404(&again.get(&w.ws_path(), &mallory));

    // The store goes on working: references still resolve to the same records.
    let reply = again.post(
        &w.jobs_path(),
        &alice,
        &json!({"location": {"xref": "NLRTM"}}),
    );
    let (_, job) = envelope(&expect(&reply, 201));
    let first_job = expect(&again.get(&w.job_path(&f.job), &alice), 200);
    assert_eq!(job["location"], first_job["location"]);
    let reply = again.post(
        &w.results_path(&f.job, &QUANTITY),
        &alice,
        &json!({"direction": "source"}),
    );
    expect_error(&reply, 409, "duplicate_direction", None);
}
