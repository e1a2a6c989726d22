//! Durability: records, searches and sessions survive a restart unchanged.

use super::*;

#[test]
fn records_survive_a_restart_unchanged() {
    let mut server = Server::start();
    let _dir = server.take_dir();
    let (key, bob_key, snapshot) = {
        let admin = Api::admin(&server);
        let bob = Api::user(&server, "bob");
        let mut snapshot = Vec::new();
        for catalog in CATALOGS {
            admin.create(catalog, "NLRTM", &full_body("Rotterdam"));
            admin.create_named(catalog, "PLLOD", "Łódź — 港口 🚢");
            bob.create(
                catalog,
                "EDGE",
                &json!({"name": "Edge", "latitudeSec": 59.99, "latitudeDeg": 89, "statusCode": "INACTIVE"}),
            );
            admin.create_named(catalog, "GONE", "Gone");
            tick();
            bob.put_expect(catalog, "NLRTM", &full_body("Rotterdam (bob)"), 200);
            bob.delete_expect(catalog, "PLLOD", "INACTIVE");
            admin.delete_expect(catalog, "GONE", "INACTIVE");
            admin.delete_expect(catalog, "GONE", "DELETED");
            let page = admin.search(catalog, &[("resultsPerPage", "200")]);
            assert_eq!(codes_of(&page), ["EDGE", "NLRTM", "PLLOD"]);
            snapshot.push((catalog, page));
        }
        (admin.key.clone(), bob.key.clone(), snapshot)
    };

    let status = server.stop();
    assert!(
        status.success(),
        "server did not exit cleanly: {status:?}; log: {}",
        server.log_text()
    );
    let again = Server::spawn(&server.data, &[]);

    // Every record reads back identically, and the search too.
    let admin = Api::admin(&again);
    for (catalog, page) in &snapshot {
        assert_eq!(&admin.search(catalog, &[("resultsPerPage", "200")]), page);
        for record in page["results"].as_array().unwrap() {
            let code = record["clientCode"].as_str().unwrap();
            assert_eq!(&admin.read(catalog, code), record);
        }
        admin.get(catalog, "GONE").assert_error(404, "not_found");
        // Sending a stored record back still changes nothing.
        let nlrtm = admin.read(catalog, "NLRTM");
        tick();
        admin.put_expect(catalog, "NLRTM", &write_part(&nlrtm), 200);
        assert_eq!(admin.read(catalog, "NLRTM"), nlrtm);
    }
    // Logins work, and sessions from before the restart are still valid.
    again.login("bob", "bob-password");
    for old in [&key, &bob_key] {
        assert_eq!(again.get(PORTS, old).status, 200);
    }
}
