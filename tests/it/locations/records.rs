//! Create, replace, read and delete: the stored write shape, the read shape
//! with its service fields, the two independent catalogs, and a replacement
//! that changes one field at a time.

use super::*;

#[test]
fn put_creates_with_201_and_answers_the_stored_write_shape() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        // Every field set: answered exactly as sent.
        let full = full_body("Rotterdam");
        let answer = api.create(catalog, "NLRTM", &full);
        assert_eq!(answer, full);

        // Only the name: every other field null, status ACTIVE by default.
        let answer = api.create_named(catalog, "NLAMS", "Amsterdam");
        let mut expected = Map::new();
        for field in WRITE_FIELDS {
            expected.insert(field.to_string(), Value::Null);
        }
        expected.insert("name".into(), json!("Amsterdam"));
        expected.insert("statusCode".into(), json!("ACTIVE"));
        assert_eq!(answer, Value::Object(expected));

        // What GET answers is what PUT stored.
        let record = api.read(catalog, "NLRTM");
        assert_eq!(write_part(&record), full);
        assert_eq!(record["creator"], "admin");
        assert_eq!(record["modifier"], "admin");
        assert_eq!(record["dateCreated"], record["dateModified"]);
        let record = api.read(catalog, "NLAMS");
        assert_eq!(write_part(&record), stored_write_shape(&answer));
    }
}

#[test]
fn put_on_an_existing_code_replaces_the_whole_record_with_200() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        api.create(catalog, "NLRTM", &full_body("Rotterdam"));
        let before = api.read(catalog, "NLRTM");
        tick();
        // A replacement, not a merge: fields left out become null.
        let replacement = json!({"name": "Rotterdam Maasvlakte", "countryCode": "NL"});
        api.put_expect(catalog, "NLRTM", &replacement, 200);
        let after = api.read(catalog, "NLRTM");
        assert_eq!(write_part(&after), stored_write_shape(&replacement));
        assert_eq!(after["latitudeDeg"], Value::Null);
        assert_eq!(after["restrictions"], Value::Null);
        assert_eq!(after["dateCreated"], before["dateCreated"]);
        assert_eq!(after["creator"], "admin");
        assert!(
            after["dateModified"].as_str() > before["dateModified"].as_str(),
            "dateModified did not move: {before} -> {after}"
        );
    }
}

#[test]
fn a_put_that_changes_nothing_answers_200_and_keeps_date_modified() {
    let server = Server::start();
    let api = Api::admin(&server);
    let bob = Api::user(&server, "bob");
    for catalog in CATALOGS {
        for (code, body) in [
            ("FULL", full_body("Rotterdam")),
            ("MINIMAL", json!({"name": "Minimal"})),
            // Defaults spelled out equal defaults left out.
            (
                "SPELLED",
                json!({"name": "Spelled", "statusCode": "ACTIVE", "countryCode": null}),
            ),
        ] {
            api.create(catalog, code, &body);
            let before = api.read(catalog, code);
            tick();
            api.put_expect(catalog, code, &body, 200);
            // Not even another account's identical PUT counts as a change.
            tick();
            bob.put_expect(catalog, code, &body, 200);
            let after = api.read(catalog, code);
            assert_eq!(after, before, "an unchanged PUT changed the record");
        }
        // The spelled-out defaults compare equal to the minimal form.
        let before = api.read(catalog, "MINIMAL");
        tick();
        api.put_expect(
            catalog,
            "MINIMAL",
            &json!({"name": "Minimal", "statusCode": "ACTIVE", "geoRegionCode": null}),
            200,
        );
        assert_eq!(api.read(catalog, "MINIMAL"), before);
    }
}

#[test]
fn creator_stays_while_modifier_and_date_modified_follow_changes() {
    let server = Server::start();
    let admin = Api::admin(&server);
    let bob = Api::user(&server, "bob");
    for catalog in CATALOGS {
        admin.create(catalog, "BEANR", &full_body("Antwerp"));
        let created = admin.read(catalog, "BEANR");
        assert_eq!(created["creator"], "admin");
        assert_eq!(created["modifier"], "admin");

        tick();
        let mut changed = full_body("Antwerpen");
        changed["countryCode"] = json!("BE");
        bob.put_expect(catalog, "BEANR", &changed, 200);
        let by_bob = bob.read(catalog, "BEANR");
        assert_eq!(by_bob["creator"], "admin");
        assert_eq!(by_bob["dateCreated"], created["dateCreated"]);
        assert_eq!(by_bob["modifier"], bob.username);
        assert!(by_bob["dateModified"].as_str() > created["dateModified"].as_str());
        assert_eq!(write_part(&by_bob), changed);

        tick();
        changed["latitudeSec"] = json!(13.25);
        admin.put_expect(catalog, "BEANR", &changed, 200);
        let by_admin = admin.read(catalog, "BEANR");
        assert_eq!(by_admin["creator"], "admin");
        assert_eq!(by_admin["dateCreated"], created["dateCreated"]);
        assert_eq!(by_admin["modifier"], admin.username);
        assert!(by_admin["dateModified"].as_str() > by_bob["dateModified"].as_str());
    }
}

#[test]
fn get_answers_the_read_shape_with_utc_millisecond_dates() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        let body = json!({"name": "Łódź — 港口 🚢", "countryCode": "PL", "latitudeSec": 30});
        api.create(catalog, "PLLOD", &body);
        let record = api.read(catalog, "PLLOD");
        // Field by field, read shape = write shape + service fields.
        assert_eq!(record["clientCode"], "PLLOD");
        assert_eq!(record["name"], "Łódź — 港口 🚢");
        assert_eq!(record["countryCode"], "PL");
        assert_eq!(record["latitudeSec"].as_f64(), Some(30.0));
        assert_eq!(record["statusCode"], "ACTIVE");
        assert_eq!(record["geoRegionCode"], Value::Null);
        assert_eq!(record["creator"], "admin");
        assert_eq!(record["modifier"], "admin");
        let created = assert_timestamp(&record["dateCreated"]);
        assert_eq!(assert_timestamp(&record["dateModified"]), created);
        // The reply is JSON with the right media type.
        let reply = api.get(catalog, "PLLOD");
        assert!(
            reply
                .header("content-type")
                .is_some_and(|t| t.starts_with("application/json")),
            "{:?}",
            reply.headers
        );
    }
}

#[test]
fn get_of_an_unknown_code_is_404_with_the_error_body() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        let reply = api.get(catalog, "NOPE");
        reply.assert_error(404, "not_found");
        assert_eq!(reply.error_field(), None);
        let body = reply.json();
        assert_eq!(sorted_keys(&body), ["error"]);
        assert_eq!(sorted_keys(&body["error"]), ["code", "message", "status"]);
    }
}

#[test]
fn the_two_catalogs_are_independent_and_codes_are_case_sensitive() {
    let server = Server::start();
    let api = Api::admin(&server);
    api.create_named(PORTS, "SHARED", "Port side");
    api.create_named(INLAND, "SHARED", "Inland side");
    assert_eq!(api.read(PORTS, "SHARED")["name"], "Port side");
    assert_eq!(api.read(INLAND, "SHARED")["name"], "Inland side");

    // A code in one catalog only is unknown in the other.
    api.create_named(PORTS, "ONLYPORT", "Only a port");
    api.get(INLAND, "ONLYPORT").assert_error(404, "not_found");
    api.delete(INLAND, "ONLYPORT")
        .assert_error(404, "not_found");
    assert_eq!(
        api.search_codes(INLAND, &[], 1),
        ["SHARED"],
        "the ports record leaked into inland facilities"
    );

    // Deleting on one side leaves the other untouched.
    api.delete_expect(PORTS, "SHARED", "INACTIVE");
    api.delete_expect(PORTS, "SHARED", "DELETED");
    api.get(PORTS, "SHARED").assert_error(404, "not_found");
    let inland = api.read(INLAND, "SHARED");
    assert_eq!(inland["statusCode"], "ACTIVE");
    assert_eq!(inland["name"], "Inland side");

    for catalog in CATALOGS {
        api.create_named(catalog, "abc", "lower");
        api.create_named(catalog, "ABC", "upper");
        assert_eq!(api.read(catalog, "abc")["name"], "lower");
        assert_eq!(api.read(catalog, "ABC")["name"], "upper");
        api.get(catalog, "Abc").assert_error(404, "not_found");
        assert_eq!(
            api.search_codes(catalog, &[("clientCodes", r#"["abc"]"#)], 1),
            ["abc"]
        );
        api.delete_expect(catalog, "abc", "INACTIVE");
        assert_eq!(api.read(catalog, "ABC")["statusCode"], "ACTIVE");
    }
}

#[test]
fn concurrent_puts_of_one_new_code_create_it_exactly_once() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        let statuses: Vec<u16> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..12)
                .map(|_| scope.spawn(|| api.put(catalog, "RACE", &json!({"name": "Race"})).status))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(
            statuses.iter().filter(|s| **s == 201).count(),
            1,
            "{statuses:?}"
        );
        assert_eq!(
            statuses.iter().filter(|s| **s == 200).count(),
            11,
            "{statuses:?}"
        );
        assert_eq!(api.search_codes(catalog, &[], 1), ["RACE"]);
    }
}

#[test]
fn delete_deactivates_an_active_record_then_removes_it() {
    let server = Server::start();
    let admin = Api::admin(&server);
    let bob = Api::user(&server, "bob");
    for catalog in CATALOGS {
        admin.create(catalog, "NLRTM", &full_body("Rotterdam"));
        let before = admin.read(catalog, "NLRTM");
        tick();
        bob.delete_expect(catalog, "NLRTM", "INACTIVE");

        // Still readable: only status, dateModified and modifier moved.
        let inactive = admin.read(catalog, "NLRTM");
        assert_eq!(inactive["statusCode"], "INACTIVE");
        assert!(inactive["dateModified"].as_str() > before["dateModified"].as_str());
        assert_eq!(inactive["modifier"], bob.username);
        let mut expected = before.clone();
        expected["statusCode"] = json!("INACTIVE");
        expected["dateModified"] = inactive["dateModified"].clone();
        expected["modifier"] = inactive["modifier"].clone();
        assert_eq!(inactive, expected);
        // It is found by a search for inactive records.
        assert_eq!(
            admin.search_codes(catalog, &[("statusCode", "INACTIVE")], 1),
            ["NLRTM"]
        );

        // The second DELETE removes it for good.
        admin.delete_expect(catalog, "NLRTM", "DELETED");
        admin.get(catalog, "NLRTM").assert_error(404, "not_found");
        admin
            .delete(catalog, "NLRTM")
            .assert_error(404, "not_found");
        assert_eq!(admin.search_codes(catalog, &[], 0), Vec::<String>::new());
    }
}

#[test]
fn delete_of_an_inactive_record_removes_it_at_once_and_the_code_can_be_reused() {
    let server = Server::start();
    let admin = Api::admin(&server);
    let bob = Api::user(&server, "bob");
    for catalog in CATALOGS {
        admin.create(
            catalog,
            "DORMANT",
            &json!({"name": "Dormant", "statusCode": "INACTIVE"}),
        );
        admin.delete_expect(catalog, "DORMANT", "DELETED");
        admin.get(catalog, "DORMANT").assert_error(404, "not_found");

        // The code is free again: a new record, a new creator.
        bob.create_named(catalog, "DORMANT", "Reborn");
        let reborn = bob.read(catalog, "DORMANT");
        assert_eq!(reborn["creator"], bob.username);
        assert_eq!(reborn["statusCode"], "ACTIVE");

        // A PUT can reactivate a deactivated record; DELETE then deactivates again.
        admin.delete_expect(catalog, "DORMANT", "INACTIVE");
        admin.put_expect(catalog, "DORMANT", &json!({"name": "Reborn"}), 200);
        assert_eq!(admin.read(catalog, "DORMANT")["statusCode"], "ACTIVE");
        admin.delete_expect(catalog, "DORMANT", "INACTIVE");
    }
}

#[test]
fn delete_of_an_unknown_code_is_404() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        let reply = api.delete(catalog, "GHOST");
        reply.assert_error(404, "not_found");
        assert_eq!(reply.error_field(), None);
        // And it did not create anything.
        api.get(catalog, "GHOST").assert_error(404, "not_found");
    }
}

#[test]
fn a_replacement_changing_each_field_in_turn_stores_exactly_that_field() {
    // A PUT writes only the columns that changed; each field, set, changed and
    // cleared one at a time, must still come back exactly as sent.
    let server = Server::start();
    let key = server.admin_key();
    let path = format!("{PORTS}/DKAAR");
    let mut body = json!({
        "name": "Aarhus", "countryCode": "DK", "geoRegionCode": "DK-82",
        "latitudeDeg": 56, "latitudeMin": 9, "latitudeSec": 30.25, "latitudeNs": "N",
        "longitudeDeg": 10, "longitudeMin": 12, "longitudeSec": 0.5, "longitudeWe": "E",
        "statusCode": "ACTIVE", "restrictions": "No LNG", "generalComments": "Quay 3"
    });
    assert_eq!(server.put(&path, &key, &body).status, 201);
    let changes: [(&str, Value); 14] = [
        ("name", json!("Århus")),
        ("countryCode", json!("SE")),
        ("geoRegionCode", Value::Null),
        ("latitudeDeg", json!(57)),
        ("latitudeMin", Value::Null),
        ("latitudeSec", json!(1.5)),
        ("latitudeNs", json!("S")),
        ("longitudeDeg", json!(11)),
        ("longitudeMin", json!(0)),
        ("longitudeSec", Value::Null),
        ("longitudeWe", json!("W")),
        ("statusCode", json!("INACTIVE")),
        ("restrictions", Value::Null),
        ("generalComments", json!("Quay 4")),
    ];
    for (field, value) in changes {
        body[field] = value;
        let reply = server.put(&path, &key, &body);
        assert_eq!(reply.status, 200, "{field}: {}", reply.text());
        let stored = server.get(&path, &key).json();
        for name in WRITE_FIELDS {
            assert_eq!(stored[name], body[name], "after changing {field}, {name}");
        }
    }
    // The folded name follows the name: search finds the new one only.
    let found = server.get(&format!("{PORTS}?name=%C3%85rhus"), &key).json();
    assert_eq!(found["totalResultsAvailable"], 1);
    let old = server.get(&format!("{PORTS}?name=Aarhus"), &key).json();
    assert_eq!(old["totalResultsAvailable"], 0);
}

/// Negative zero seconds are zero: stored as SQLite stores it, and answered,
/// read and recorded in the change log as `0.0`, never `-0.0` (the change
/// log's entry is what a read of the record gives).
#[test]
fn negative_zero_seconds_are_zero_in_the_answer_the_read_and_the_change_log() {
    let server = Server::start();
    let api = Api::admin(&server);
    let mut body = full_body("Zero");
    body["latitudeSec"] = json!(-0.0);
    body["longitudeSec"] = json!(-0.0);
    assert_eq!(body["latitudeSec"].to_string(), "-0.0");
    let answer = api.create(PORTS, "NLZRO", &body);
    let record = api.read(PORTS, "NLZRO");
    let reply = server.get("/api/rest/1.0/changes?since=0", &api.key);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let changes = reply.json()["changes"].as_array().unwrap().clone();
    let logged = changes
        .iter()
        .find(|c| c["entity_id"] == "NLZRO")
        .unwrap_or_else(|| panic!("no change for NLZRO in {changes:?}"));
    assert_eq!(logged["type"], "port.created");
    for (what, shown) in [
        ("the answer", &answer),
        ("the read", &record),
        ("the change", &logged["record"]["body"]),
    ] {
        for field in ["latitudeSec", "longitudeSec"] {
            assert_eq!(
                shown[field].to_string(),
                "0.0",
                "{what}: {field} in {shown}"
            );
        }
    }
    assert_eq!(logged["record"]["body"], record);
}
