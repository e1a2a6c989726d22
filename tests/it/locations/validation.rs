//! Validation of PUT: refused bodies name their field and change nothing, edge
//! values are stored, malformed JSON, the media type, client codes in the path,
//! and a read shape sent back.

use super::*;

/// `{"name": "Valid", ...extra}`.
fn named(extra: Value) -> Value {
    let mut body = json!({"name": "Valid"});
    for (k, v) in extra.as_object().expect("object") {
        body[k] = v.clone();
    }
    body
}

/// Bodies PUT must refuse with 400: (body, field named, error code). The path
/// code is `V1`.
fn rejected_bodies() -> Vec<(Value, &'static str, &'static str)> {
    const INVALID: &str = "invalid_field";
    vec![
        // name
        (json!({"countryCode": "NL"}), "name", "missing_field"),
        (json!({"name": null}), "name", "missing_field"),
        (json!({"name": ""}), "name", INVALID),
        (json!({"name": "   "}), "name", INVALID),
        (json!({"name": 42}), "name", INVALID),
        (json!({"name": ["Rotterdam"]}), "name", INVALID),
        (json!({"name": "x".repeat(257)}), "name", INVALID),
        (json!({"name": "nul\u{0}byte"}), "name", INVALID),
        // countryCode
        (named(json!({"countryCode": "nl"})), "countryCode", INVALID),
        (named(json!({"countryCode": "NLD"})), "countryCode", INVALID),
        (named(json!({"countryCode": "QQ"})), "countryCode", INVALID),
        (named(json!({"countryCode": ""})), "countryCode", INVALID),
        (named(json!({"countryCode": 31})), "countryCode", INVALID),
        // latitude
        (named(json!({"latitudeDeg": 91})), "latitudeDeg", INVALID),
        (named(json!({"latitudeDeg": -1})), "latitudeDeg", INVALID),
        (named(json!({"latitudeDeg": 51.5})), "latitudeDeg", INVALID),
        (named(json!({"latitudeDeg": "51"})), "latitudeDeg", INVALID),
        (named(json!({"latitudeDeg": true})), "latitudeDeg", INVALID),
        (named(json!({"latitudeDeg": 1e300})), "latitudeDeg", INVALID),
        (named(json!({"latitudeMin": 60})), "latitudeMin", INVALID),
        (named(json!({"latitudeMin": -1})), "latitudeMin", INVALID),
        (named(json!({"latitudeMin": 1.5})), "latitudeMin", INVALID),
        (named(json!({"latitudeSec": 60})), "latitudeSec", INVALID),
        (named(json!({"latitudeSec": 60.0})), "latitudeSec", INVALID),
        (named(json!({"latitudeSec": -0.1})), "latitudeSec", INVALID),
        (named(json!({"latitudeSec": "1"})), "latitudeSec", INVALID),
        (named(json!({"latitudeNs": "X"})), "latitudeNs", INVALID),
        (named(json!({"latitudeNs": "n"})), "latitudeNs", INVALID),
        (named(json!({"latitudeNs": ""})), "latitudeNs", INVALID),
        (named(json!({"latitudeNs": "North"})), "latitudeNs", INVALID),
        // longitude
        (named(json!({"longitudeDeg": 181})), "longitudeDeg", INVALID),
        (named(json!({"longitudeDeg": -1})), "longitudeDeg", INVALID),
        (named(json!({"longitudeMin": 60})), "longitudeMin", INVALID),
        (named(json!({"longitudeSec": 60})), "longitudeSec", INVALID),
        (named(json!({"longitudeWe": "Q"})), "longitudeWe", INVALID),
        (named(json!({"longitudeWe": "w"})), "longitudeWe", INVALID),
        // No minutes or seconds at the pole or the antimeridian.
        (
            named(json!({"latitudeDeg": 90, "latitudeMin": 1})),
            "latitudeMin",
            INVALID,
        ),
        (
            named(json!({"latitudeDeg": 90, "latitudeSec": 0.5})),
            "latitudeSec",
            INVALID,
        ),
        (
            named(json!({"longitudeDeg": 180, "longitudeMin": 1})),
            "longitudeMin",
            INVALID,
        ),
        // statusCode
        (
            named(json!({"statusCode": "DELETED"})),
            "statusCode",
            INVALID,
        ),
        (
            named(json!({"statusCode": "active"})),
            "statusCode",
            INVALID,
        ),
        (named(json!({"statusCode": ""})), "statusCode", INVALID),
        (named(json!({"statusCode": 1})), "statusCode", INVALID),
        // free text and codes
        (named(json!({"geoRegionCode": 5})), "geoRegionCode", INVALID),
        (
            named(json!({"restrictions": {"draught": 24}})),
            "restrictions",
            INVALID,
        ),
        (
            named(json!({"generalComments": ["a", "b"]})),
            "generalComments",
            INVALID,
        ),
        // unknown fields (names are case-sensitive)
        (named(json!({"foo": 1})), "foo", "unknown_field"),
        (json!({"Name": "Rotterdam"}), "Name", "unknown_field"),
        (
            named(json!({"status": "ACTIVE"})),
            "status",
            "unknown_field",
        ),
        // clientCode in the body must match the path exactly
        (named(json!({"clientCode": "OTHER"})), "clientCode", INVALID),
        (named(json!({"clientCode": "v1"})), "clientCode", INVALID),
        (named(json!({"clientCode": 1})), "clientCode", INVALID),
        // the body itself is not an object
        (json!([]), "$", INVALID),
        (json!([{"name": "Rotterdam"}]), "$", INVALID),
        (json!("Rotterdam"), "$", INVALID),
        (json!(42), "$", INVALID),
        (json!(null), "$", INVALID),
    ]
}

fn assert_rejected(reply: &Reply, body: &Value, field: &str, code: &str) {
    assert_eq!(reply.status, 400, "body {body}: {}", reply.text());
    reply.assert_error(400, code);
    assert_eq!(
        reply.error_field().as_deref(),
        Some(field),
        "body {body}: {}",
        reply.text()
    );
}

#[test]
fn invalid_bodies_are_rejected_with_the_field_named() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        for (body, field, code) in rejected_bodies() {
            let reply = api.put(catalog, "V1", &body);
            assert_rejected(&reply, &body, field, code);
        }
        // Nothing was created by any of them.
        api.get(catalog, "V1").assert_error(404, "not_found");
        assert_eq!(api.search_codes(catalog, &[], 0), Vec::<String>::new());
    }
}

#[test]
fn rejected_puts_leave_an_existing_record_untouched() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        api.create(catalog, "V1", &full_body("Original"));
        let before = api.read(catalog, "V1");
        tick();
        for (body, field, code) in rejected_bodies() {
            let reply = api.put(catalog, "V1", &body);
            assert_rejected(&reply, &body, field, code);
        }
        assert_eq!(api.read(catalog, "V1"), before);
    }
}

#[test]
fn edge_values_inside_the_ranges_are_accepted_and_stored() {
    let server = Server::start();
    let api = Api::admin(&server);
    let accepted = vec![
        json!({"name": "Seconds", "latitudeSec": 59.99, "longitudeSec": 0}),
        json!({"name": "Pole", "latitudeDeg": 90, "latitudeMin": 0, "latitudeSec": 0, "latitudeNs": "S"}),
        json!({"name": "Antimeridian", "longitudeDeg": 180, "longitudeMin": 0, "longitudeSec": 0.0, "longitudeWe": "W"}),
        json!({"name": "Whole float", "latitudeDeg": 51.0, "latitudeMin": 59, "longitudeDeg": 0, "longitudeMin": 0}),
        json!({"name": "Zero", "latitudeDeg": 0, "latitudeMin": 0, "latitudeSec": 0, "latitudeNs": "N", "longitudeWe": "E"}),
        json!({
            "name": "Nulls", "countryCode": null, "geoRegionCode": null, "latitudeDeg": null,
            "latitudeMin": null, "latitudeSec": null, "latitudeNs": null, "longitudeDeg": null,
            "longitudeMin": null, "longitudeSec": null, "longitudeWe": null, "statusCode": null,
            "restrictions": null, "generalComments": null
        }),
        json!({"name": "Inactive", "statusCode": "INACTIVE"}),
        json!({"name": " Spaced name ", "restrictions": "", "generalComments": "line 1\nline 2"}),
        json!({"name": "x".repeat(256)}),
        json!({"name": "Łódź — 港口 🚢", "countryCode": "PL"}),
        json!({"name": "International waters", "countryCode": "XZ"}),
    ];
    for catalog in CATALOGS {
        for (i, body) in accepted.iter().enumerate() {
            let code = format!("EDGE{i}");
            api.create(catalog, &code, body);
            let record = api.read(catalog, &code);
            assert_eq!(
                numbers_as_f64(&write_part(&record)),
                numbers_as_f64(&stored_write_shape(body)),
                "{body}"
            );
            // Sending it again changes nothing.
            tick();
            api.put_expect(catalog, &code, body, 200);
            assert_eq!(api.read(catalog, &code), record, "{body}");
        }
    }
}

#[test]
fn malformed_and_empty_bodies_are_invalid_json() {
    let server = Server::start();
    let api = Api::admin(&server);
    let cases: [&[u8]; 6] = [
        b"{\"name\": ",
        b"{name: 'Rotterdam'}",
        b"{\"name\":\"a\"} trailing",
        b"\xff\xfe",
        b"",
        b"  \n ",
    ];
    for catalog in CATALOGS {
        for raw in cases {
            let reply = server.request(
                "PUT",
                &format!("{catalog}/BROKEN"),
                Some(&api.key),
                &[("Content-Type", "application/json")],
                Some(raw),
            );
            reply.assert_error(400, "invalid_json");
        }
        api.get(catalog, "BROKEN").assert_error(404, "not_found");
    }
}

#[test]
fn put_needs_a_json_content_type() {
    let server = Server::start();
    let api = Api::admin(&server);
    let body = br#"{"name":"Rotterdam"}"#;
    for catalog in CATALOGS {
        let path = format!("{catalog}/CT");
        for headers in [
            &[("Content-Type", "text/plain")][..],
            &[("Content-Type", "application/x-www-form-urlencoded")][..],
            &[][..],
        ] {
            server
                .request("PUT", &path, Some(&api.key), headers, Some(body))
                .assert_error(415, "unsupported_media_type");
        }
        api.get(catalog, "CT").assert_error(404, "not_found");
        // Parameters on the media type are fine.
        let reply = server.request(
            "PUT",
            &path,
            Some(&api.key),
            &[("Content-Type", "application/json; charset=utf-8")],
            Some(body),
        );
        assert_eq!(reply.status, 201, "{}", reply.text());
    }
}

#[test]
fn invalid_client_codes_in_the_path_are_400() {
    let server = Server::start();
    let api = Api::admin(&server);
    let too_long = "a".repeat(65);
    let longest = "b".repeat(64);
    let bad = [
        "bad%20code",
        "caf%C3%A9",
        "bad*code",
        "bad%2Fcode",
        "bad:code",
        too_long.as_str(),
    ];
    let body = json!({"name": "Valid"});
    for catalog in CATALOGS {
        for code in bad {
            for reply in [
                api.get(catalog, code),
                api.put(catalog, code, &body),
                api.delete(catalog, code),
            ] {
                reply.assert_error(400, "invalid_field");
                assert_eq!(reply.error_field().as_deref(), Some("clientCode"), "{code}");
            }
        }
        // A broken percent escape is refused before routing.
        assert_eq!(api.get(catalog, "bad%zz").status, 400);
        // Every allowed character, and the longest code, work.
        for code in ["a.b_c-D9", longest.as_str(), "0", "-"] {
            api.create(catalog, code, &body);
            api.read(catalog, code);
        }
        assert_eq!(api.search_codes(catalog, &[], 4).len(), 4);
    }
}

#[test]
fn a_read_shape_sent_back_is_accepted_by_put() {
    let server = Server::start();
    let admin = Api::admin(&server);
    let bob = Api::user(&server, "bob");
    for catalog in CATALOGS {
        admin.create(catalog, "NLRTM", &full_body("Rotterdam"));
        let record = admin.read(catalog, "NLRTM");

        // The GET body as it is: accepted, 200, nothing changes.
        tick();
        let reply = bob.put(catalog, "NLRTM", &record);
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.json(), write_part(&record));
        assert_eq!(admin.read(catalog, "NLRTM"), record);

        // Service fields are the service's: values sent for them are ignored.
        let mut forged = record.clone();
        forged["creator"] = json!("mallory");
        forged["modifier"] = json!("mallory");
        forged["dateCreated"] = json!("1999-01-01T00:00:00.000Z");
        forged["dateModified"] = json!("not even a date");
        forged["name"] = json!("Rotterdam Europoort");
        tick();
        let reply = bob.put(catalog, "NLRTM", &forged);
        assert_eq!(reply.status, 200, "{}", reply.text());
        let after = admin.read(catalog, "NLRTM");
        assert_eq!(after["name"], "Rotterdam Europoort");
        assert_eq!(after["creator"], "admin");
        assert_eq!(after["modifier"], bob.username);
        assert_eq!(after["dateCreated"], record["dateCreated"]);
        assert!(after["dateModified"].as_str() > record["dateModified"].as_str());

        // Another record's GET body names another code: refused.
        let reply = admin.put(catalog, "NLAMS", &record);
        assert_rejected(&reply, &record, "clientCode", "invalid_field");
        // Without its clientCode it can be copied to a new code.
        let mut copy = record.clone();
        copy.as_object_mut().unwrap().remove("clientCode");
        admin.create(catalog, "NLAMS", &copy);
        assert_eq!(
            write_part(&admin.read(catalog, "NLAMS")),
            write_part(&record)
        );
    }
}
