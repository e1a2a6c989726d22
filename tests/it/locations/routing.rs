//! Routing and authentication: unknown paths, wrong methods with `Allow`, and
//! the session key every catalog route needs.

use super::*;

#[test]
fn unknown_paths_are_404_with_the_error_body() {
    let server = Server::start();
    let api = Api::admin(&server);
    for path in [
        "/api/rest/1.0/harbours",
        "/api/rest/1.0/ports/NLRTM/extra",
        "/api/rest/1.0/inland_facilities/NLRTM/extra",
        "/api/rest/2.0/ports",
        "/api/rest/1.0/Ports",
        "/api/rest/1.0/inland-facilities",
        // Deeper than any route (the router takes at most 16 segments).
        "/api/rest/1.0/ports/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p",
        // Escaped segments are decoded before routing.
        "/api/rest/1.0/po%72ts/NLRTM/extra",
    ] {
        for method in ["GET", "PUT", "DELETE"] {
            let reply = server.request(method, path, Some(&api.key), &[], None);
            reply.assert_error(404, "not_found");
        }
        // Unknown paths are 404 even without a key.
        server
            .request("GET", path, None, &[], None)
            .assert_error(404, "not_found");
    }
}

#[test]
fn escaped_path_segments_route_as_their_decoded_text() {
    let server = Server::start();
    let api = Api::admin(&server);
    api.create_named(PORTS, "NLRTM", "Rotterdam");
    // `po%72ts` is `ports`, `NL%52TM` is `NLRTM`.
    let reply = server.request(
        "GET",
        "/api/rest/1.0/po%72ts/NL%52TM",
        Some(&api.key),
        &[],
        None,
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["clientCode"], "NLRTM");
    // `%2F` is a slash inside one segment, not a separator: no such port.
    server
        .request(
            "GET",
            "/api/rest/1.0/ports%2FNLRTM",
            Some(&api.key),
            &[],
            None,
        )
        .assert_error(404, "not_found");
}

fn allowed(reply: &Reply) -> Vec<String> {
    let mut methods: Vec<String> = reply
        .header("allow")
        .unwrap_or_else(|| panic!("no Allow header: {:?}", reply.headers))
        .split(',')
        .map(|m| m.trim().to_string())
        .collect();
    methods.sort();
    methods
}

#[test]
fn wrong_methods_are_405_with_allow() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        api.create_named(catalog, "NLRTM", "Rotterdam");
        let item = format!("{catalog}/NLRTM");
        for method in ["PATCH", "POST"] {
            let reply = server.send_json(method, &item, &api.key, &json!({"name": "x"}));
            reply.assert_error(405, "method_not_allowed");
            assert_eq!(allowed(&reply), ["DELETE", "GET", "OPTIONS", "PUT"]);
        }
        // Also for a code with no record: the path exists, the method does not.
        let reply = server.send_json("PATCH", &format!("{catalog}/NEW"), &api.key, &json!({}));
        reply.assert_error(405, "method_not_allowed");
        assert_eq!(allowed(&reply), ["DELETE", "GET", "OPTIONS", "PUT"]);
        for method in ["POST", "PUT", "DELETE", "PATCH"] {
            let reply = server.request(method, catalog, Some(&api.key), &[], None);
            reply.assert_error(405, "method_not_allowed");
            assert_eq!(allowed(&reply), ["GET", "OPTIONS"]);
        }
        // Nothing was changed by any of them.
        assert_eq!(api.read(catalog, "NLRTM")["name"], "Rotterdam");
        api.get(catalog, "NEW").assert_error(404, "not_found");
    }
}

#[test]
fn catalog_routes_need_a_session_key() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        api.create_named(catalog, "NLRTM", "Rotterdam");
        let item = format!("{catalog}/NLRTM");
        let body = br#"{"name":"Hijacked"}"#;
        let json_type = [("Content-Type", "application/json")];
        for (method, path, headers, body) in [
            ("GET", catalog, &[][..], None),
            ("GET", item.as_str(), &[][..], None),
            ("PUT", item.as_str(), &json_type[..], Some(&body[..])),
            ("DELETE", item.as_str(), &[][..], None),
        ] {
            server
                .request(method, path, None, headers, body)
                .assert_error(401, "unauthorized");
            server
                .request(method, path, Some("not-a-key"), headers, body)
                .assert_error(401, "unauthorized");
        }
        let record = api.read(catalog, "NLRTM");
        assert_eq!(record["name"], "Rotterdam");
        assert_eq!(record["statusCode"], "ACTIVE");
    }
}
