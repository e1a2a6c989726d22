//! The in-memory caches (sessions, rendered location records) must never answer
//! with something the store no longer says: each test warms a cache, changes
//! the store (through the API, or from another process with the CLI), and
//! checks the very next request sees the change.

use crate::common::{self, Server, UNLOCODE_SAMPLE};
use serde_json::json;

const PORT: &str = "/api/rest/1.0/ports/NLQYS";

fn port(name: &str, status: &str) -> serde_json::Value {
    json!({"name": name, "countryCode": "NL", "statusCode": status})
}

/// Refreshes the caller's cached session (a store read confirms it), so that
/// the next request of that key takes the cached-answer path.
fn confirm_session(server: &Server, key: &str) {
    let search = server.get("/api/rest/1.0/ports?countryCode=NL", key);
    assert_eq!(search.status, 200);
}

/// Asks twice, so the second answer comes from the caches if they hold it.
fn warm(server: &Server, path: &str, key: &str) -> serde_json::Value {
    let first = server.get(path, key);
    assert_eq!(first.status, 200, "{}", first.text());
    let second = server.get(path, key);
    assert_eq!(second.status, 200);
    assert_eq!(first.json(), second.json());
    second.json()
}

#[test]
fn a_cached_port_is_never_served_after_it_changes() {
    let server = Server::start();
    let key = server.admin_key();
    assert_eq!(
        server.put(PORT, &key, &port("Quayside", "ACTIVE")).status,
        201
    );
    assert_eq!(warm(&server, PORT, &key)["name"], "Quayside");

    assert_eq!(
        server
            .put(PORT, &key, &port("Quayside Haven", "ACTIVE"))
            .status,
        200
    );
    confirm_session(&server, &key);
    assert_eq!(warm(&server, PORT, &key)["name"], "Quayside Haven");

    // Deactivate, then delete: both show at once.
    assert_eq!(server.delete(PORT, &key).status, 200);
    confirm_session(&server, &key);
    assert_eq!(warm(&server, PORT, &key)["statusCode"], "INACTIVE");
    assert_eq!(server.delete(PORT, &key).status, 200);
    confirm_session(&server, &key);
    server.get(PORT, &key).assert_error(404, "not_found");
}

#[test]
fn a_cached_port_sees_a_change_made_by_another_process() {
    let server = Server::start();
    let key = server.admin_key();
    let imported = server.cli(&["import-unlocode", UNLOCODE_SAMPLE], None);
    assert!(imported.status.success());
    let rotterdam = "/api/rest/1.0/ports/NLRTM";
    assert_eq!(warm(&server, rotterdam, &key)["name"], "Rotterdam");
    let edited = json!({"name": "Rotterdam (edited)", "countryCode": "NL", "statusCode": "ACTIVE"});
    assert_eq!(server.put(rotterdam, &key, &edited).status, 200);
    confirm_session(&server, &key);
    assert_eq!(warm(&server, rotterdam, &key)["name"], "Rotterdam (edited)");

    // The CLI writes the file directly, from its own process.
    let again = server.cli(&["import-unlocode", UNLOCODE_SAMPLE], None);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    confirm_session(&server, &key);
    assert_eq!(server.get(rotterdam, &key).json()["name"], "Rotterdam");
}

#[test]
fn a_removed_account_gets_no_cached_answer() {
    let server = Server::start();
    let admin = server.admin_key();
    assert_eq!(
        server.put(PORT, &admin, &port("Quayside", "ACTIVE")).status,
        201
    );
    let key = server.add_user("dora", &[]);
    // Both the session and the record are now cached.
    warm(&server, PORT, &key);
    let out = server.cli(&["user", "remove", "dora"], None);
    assert!(out.status.success());
    server.get(PORT, &key).assert_error(401, "unauthorized");
    // Writes and searches are refused as well.
    server
        .put(PORT, &key, &port("Hijacked", "ACTIVE"))
        .assert_error(401, "unauthorized");
    server
        .get("/api/rest/1.0/ports?countryCode=NL", &key)
        .assert_error(401, "unauthorized");
    assert_eq!(server.get(PORT, &admin).json()["name"], "Quayside");
}

#[test]
fn a_session_cached_before_an_unrelated_change_still_works_until_logout() {
    let server = Server::start();
    let admin = server.admin_key();
    let key = server.add_user("erik", &[]);
    assert_eq!(
        server.put(PORT, &admin, &port("Quayside", "ACTIVE")).status,
        201
    );
    warm(&server, PORT, &key);
    // Someone else's write moves the store on: erik's cached session must be
    // confirmed again, and it is still good.
    assert_eq!(
        server
            .put(PORT, &admin, &port("Quayside II", "ACTIVE"))
            .status,
        200
    );
    assert_eq!(warm(&server, PORT, &key)["name"], "Quayside II");
    assert_eq!(
        server
            .put(PORT, &key, &port("Quayside III", "ACTIVE"))
            .status,
        200
    );

    let logout = server.delete("/api/rest/1.0/sessions/erik", &key);
    assert_eq!(logout.status, 204);
    server.get(PORT, &key).assert_error(401, "unauthorized");
    server
        .put(PORT, &key, &port("After logout", "ACTIVE"))
        .assert_error(401, "unauthorized");
    // A handler that answers without reading the store (a bad body here)
    // still refuses a dead key rather than judging the body.
    let bad = server.request(
        "PUT",
        PORT,
        Some(&key),
        &[("Content-Type", "application/json")],
        Some(b"{not json"),
    );
    bad.assert_error(401, "unauthorized");
}

#[test]
fn a_search_renders_each_record_exactly_as_get_does() {
    // Search pages are rendered straight from the rows; a record must look the
    // same there as on its own, with every kind of field set and unset.
    let server = Server::start();
    let key = server.admin_key();
    let full = json!({
        "name": "Ärhus \"Quay\" \\ Ωmega", "countryCode": "DK", "geoRegionCode": "DK-82",
        "latitudeDeg": 56, "latitudeMin": 9, "latitudeSec": 30.25, "latitudeNs": "N",
        "longitudeDeg": 10, "longitudeMin": 12, "longitudeSec": 0.5, "longitudeWe": "E",
        "statusCode": "ACTIVE", "restrictions": "No LNG\nafter dark", "generalComments": "tab\there"
    });
    assert_eq!(
        server.put("/api/rest/1.0/ports/DKAAR", &key, &full).status,
        201
    );
    let bare = json!({"name": "Bare", "statusCode": "INACTIVE"});
    assert_eq!(
        server.put("/api/rest/1.0/ports/XXBAR", &key, &bare).status,
        201
    );
    for code in ["DKAAR", "XXBAR"] {
        let one = server.get(&format!("/api/rest/1.0/ports/{code}"), &key);
        let codes = common::urlencode(&format!("[\"{code}\"]"));
        let page = server.get(&format!("/api/rest/1.0/ports?clientCodes={codes}"), &key);
        assert_eq!(page.json()["results"][0], one.json(), "{code}");
        assert_eq!(page.json()["totalResultsAvailable"], 1);
    }
}
