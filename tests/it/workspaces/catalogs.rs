//! The eight catalogs of a workspace and their aliases: items created,
//! filtered, read, patched, and deleted only when nothing refers to them.

use super::*;

#[test]
fn the_eight_catalogs_and_their_aliases() {
    let w = World::new();
    for catalog in CATALOGS {
        let (id, body) = w.create_item_as(
            &w.alice,
            catalog,
            &json!({"name": format!("{catalog} one"), "xref": "X1"}),
        );
        assert_eq!(
            body,
            json!({"name": format!("{catalog} one"), "xref": "X1", "ownerParty": w.client_org})
        );
        assert_eq!(keys(&body), ["name", "xref", "ownerParty"]);
        let reply = w.server.get(&w.catalog_path(catalog), &w.alice);
        assert_eq!(
            expect(&reply, 200),
            json!([{"id": id, "body": body}]),
            "{catalog}"
        );
        assert_eq!(total(&reply), 1);
    }
    // The same xref in each catalog was fine: xrefs are unique per catalog.
    for (alias, catalog) in CATALOG_ALIASES {
        let (id, _) = w.create_item_as(&w.alice, alias, &json!({"name": "by alias"}));
        assert_eq!(w.items(catalog).len(), 2, "{alias}");
        assert_eq!(w.item(catalog, &id)["name"], "by alias");
        assert_eq!(w.items(alias), w.items(catalog));
        expect_error(
            &w.server
                .post(&w.catalog_path(alias), &w.alice, &json!({"xref": "X1"})),
            409,
            "duplicate_xref",
            None,
        );
    }
    for unknown in ["vessels", "Products", "timelog", "methodz"] {
        expect_404(&w.server.get(&w.catalog_path(unknown), &w.alice));
        expect_404(
            &w.server
                .post(&w.catalog_path(unknown), &w.alice, &json!({"name": "x"})),
        );
    }
    // A record is found only under its own catalog.
    let product = w.items("products")[0].0.clone();
    expect_404(&w.server.get(&w.item_path("locations", &product), &w.alice));
    expect_404(&w.server.get(&w.item_path("vessels", &product), &w.alice));
}

#[test]
fn catalog_items_are_created_filtered_read_and_patched() {
    let w = World::new();
    let (crude, crude_body) = w.create_item_as(
        &w.alice,
        "products",
        &json!({"name": "Crude", "xref": "CR", "ownerParty": "ignored"}),
    );
    assert_eq!(crude_body["ownerParty"], w.client_org.as_str());
    let (_, named_only) = w.create_item_as(&w.alice, "products", &json!({"name": "Naphtha"}));
    assert_eq!(
        named_only,
        json!({"name": "Naphtha", "xref": null, "ownerParty": w.client_org})
    );
    let (xref_only, _) = w.create_item_as(&w.alice, "products", &json!({"xref": "GO-1"}));
    let (diesel, diesel_body) = w.create_item_as(
        &w.bob,
        "products",
        &json!({"name": "Diesel", "xref": "DSL"}),
    );
    assert_eq!(diesel_body["ownerParty"], w.vendor_org.as_str());
    let (admin_item, admin_body) = w.create_item_as(&w.admin, "products", &json!({"name": "Jet"}));
    assert_eq!(admin_body["ownerParty"], Value::Null);

    let products = w.catalog_path("products");
    let query =
        |params: &[(&str, &str)]| list_ids(&w.server, &w.alice, &with_query(&products, params));
    assert_eq!(query(&[]).1, 5);
    assert_eq!(query(&[("name", "Crude")]), (vec![crude.clone()], 1));
    assert_eq!(query(&[("name", "crude")]), (vec![], 0));
    assert_eq!(query(&[("xref", "GO-1")]), (vec![xref_only.clone()], 1));
    assert_eq!(
        query(&[("ownerParty", w.vendor_org.as_str())]),
        (vec![diesel.clone()], 1)
    );
    assert_eq!(query(&[("ownerParty", w.client_org.as_str())]).1, 3);
    assert_eq!(
        query(&[("ownerParty", w.client_org.as_str()), ("xref", "CR")]),
        (vec![crude.clone()], 1)
    );
    assert_eq!(query(&[("sort", "name:asc"), ("limit", "2")]).1, 5);
    assert_eq!(
        query(&[("sort", "name:desc"), ("limit", "1"), ("offset", "1")]),
        (vec![admin_item.clone()], 5)
    );
    for (params, field) in [
        (vec![("colour", "x")], "colour"),
        (vec![("sort", "colour")], "sort"),
        (vec![("limit", "1001")], "limit"),
    ] {
        let reply = w.server.get(&with_query(&products, &params), &w.alice);
        expect_error(&reply, 400, "invalid_query", Some(field));
    }

    // GET and PATCH answer the body; the owner never changes.
    let path = w.item_path("products", &crude);
    assert_eq!(w.read(&path), crude_body);
    let answer = expect(
        &w.patch(
            &path,
            &json!({"name": "Crude oil", "ownerParty": w.vendor_org}),
        ),
        200,
    );
    assert_eq!(
        answer,
        json!({"name": "Crude oil", "xref": "CR", "ownerParty": w.client_org})
    );
    let answer = expect(
        &w.server.patch(&path, &w.bob, &json!({"xref": "CR-2"})),
        200,
    );
    assert_eq!(
        answer,
        json!({"name": "Crude oil", "xref": "CR-2", "ownerParty": w.client_org})
    );
    assert_eq!(w.read(&path), answer);

    // Duplicate xrefs, on create and on patch.
    let reply = w.server.post(
        &products,
        &w.alice,
        &json!({"name": "Other", "xref": "DSL"}),
    );
    expect_error(&reply, 409, "duplicate_xref", None);
    expect_error(
        &w.patch(&path, &json!({"xref": "GO-1"})),
        409,
        "duplicate_xref",
        None,
    );
    assert_eq!(w.read(&path), answer);
    // Keeping its own xref is no duplicate.
    assert_eq!(
        expect(&w.patch(&path, &json!({"xref": "CR-2"})), 200),
        answer
    );

    for (body, code, field) in [
        (json!({}), "missing_field", "name"),
        (json!({"name": "  "}), "missing_field", "name"),
        (json!({"name": 5}), "invalid_field", "name"),
        (
            json!({"name": "x", "colour": "red"}),
            "unknown_field",
            "colour",
        ),
    ] {
        expect_error(
            &w.server.post(&products, &w.alice, &body),
            400,
            code,
            Some(field),
        );
    }
    expect_error(
        &w.patch(&path, &json!({"colour": 1})),
        400,
        "unknown_field",
        Some("colour"),
    );
    expect_error(
        &w.patch(&path, &json!({"name": null, "xref": null})),
        400,
        "invalid_field",
        Some("name"),
    );
    assert_eq!(query(&[]).1, 5);
    expect_404(&w.server.get(&w.item_path("products", MISSING), &w.alice));
    expect_404(&w.patch(&w.item_path("products", MISSING), &json!({"name": "x"})));
}

/// A catalog item's delete is refused while documents use it, and says how
/// many: the count follows every create, certificate, change of a reference
/// and delete, and a write that fails leaves it as it was.
#[test]
fn the_documents_using_a_catalog_item_are_counted() {
    let w = World::new();
    let product = |xref: &str| json!({"cargo": {"product": {"xref": xref, "name": xref}}});
    let (first, first_body) = w.create_job(product("P1"));
    let (second, _) = w.create_job(product("P1"));
    let p1 = text(&first_body["cargo"]["product"]);
    let uses = |catalog: &str, id: &str| -> Option<String> {
        let reply = w.server.delete(&w.item_path(catalog, id), &w.alice);
        if reply.status == 200 {
            return None;
        }
        expect_error(&reply, 409, "catalog_item_in_use", None);
        Some(reply.text())
    };
    let in_use = |catalog: &str, id: &str, count: usize| {
        let message = uses(catalog, id).expect("the item is in use");
        assert!(
            message.contains(&format!("referenced by {count} document(s)")),
            "{message}"
        );
    };
    in_use("products", &p1, 2);

    // A change of the reference moves the use; a change of anything else,
    // and a change that fails, leave the counts alone.
    let moved = expect(&w.patch(&w.job_path(&second), &product("P2")), 200);
    let p2 = text(&moved["cargo"]["product"]);
    assert_ne!(p1, p2);
    in_use("products", &p1, 1);
    in_use("products", &p2, 1);
    expect(
        &w.patch(&w.job_path(&second), &json!({"activity": "discharge"})),
        200,
    );
    expect_error(
        &w.patch(
            &w.job_path(&second),
            &json!({"cargo": {"product": {"id": MISSING}}}),
        ),
        400,
        "invalid_field",
        Some("cargo.product"),
    );
    in_use("products", &p2, 1);

    // A certificate of three results naming one test counts three uses, as
    // three results made one by one do.
    let certificate = Value::Array(
        (0..3)
            .map(|n| {
                let mut result = quality_sample();
                result["testNumber"] = json!(n);
                result
            })
            .collect(),
    );
    let made = expect(
        &w.server
            .post(&w.results_path(&first, &QUALITY), &w.alice, &certificate),
        201,
    );
    let test = text(&made[0]["body"]["test"]["id"]);
    in_use("tests", &test, 3);
    // A certificate whose items share some records, stored together: each
    // record counts the items naming it, a record the certificate itself
    // created too.
    let mut mixed = certificate.clone();
    for n in 0..2 {
        mixed[n]["test"] = json!({"xref": "VIS", "name": "Viscosity"});
    }
    let mixed = expect(
        &w.server
            .post(&w.results_path(&first, &QUALITY), &w.alice, &mixed),
        201,
    );
    let viscosity = text(&mixed[0]["body"]["test"]["id"]);
    assert_eq!(text(&mixed[1]["body"]["test"]["id"]), viscosity);
    assert_eq!(text(&mixed[2]["body"]["test"]["id"]), test);
    in_use("tests", &viscosity, 2);
    in_use("tests", &test, 4);
    for result in mixed.as_array().unwrap() {
        let id = text(&result["id"]);
        expect(
            &w.server
                .delete(&w.result_path(&first, &QUALITY, &id), &w.alice),
            200,
        );
    }
    assert_eq!(uses("tests", &viscosity), None, "VIS is free and deleted");
    in_use("tests", &test, 3);
    // A certificate refused at its last item, in the writer after the
    // others were stored, stores none and counts nothing.
    let mut refused = certificate.clone();
    refused[2]["test"] = json!({"id": MISSING});
    expect(
        &w.server
            .post(&w.results_path(&first, &QUALITY), &w.alice, &refused),
        400,
    );
    in_use("tests", &test, 3);
    let (single, _) = w.create_sample(&second, &QUALITY);
    in_use("tests", &test, 4);

    // Each delete gives its uses back.
    expect(
        &w.server
            .delete(&w.result_path(&second, &QUALITY, &single), &w.alice),
        200,
    );
    in_use("tests", &test, 3);
    for result in made.as_array().unwrap() {
        let id = text(&result["id"]);
        expect(
            &w.server
                .delete(&w.result_path(&first, &QUALITY, &id), &w.alice),
            200,
        );
    }
    assert_eq!(uses("tests", &test), None, "the test is free and deleted");
    expect(&w.server.delete(&w.job_path(&first), &w.alice), 200);
    assert_eq!(uses("products", &p1), None, "P1 is free and deleted");
    in_use("products", &p2, 1);
    expect(&w.server.delete(&w.job_path(&second), &w.alice), 200);
    assert_eq!(uses("products", &p2), None, "P2 is free and deleted");
}

#[test]
fn a_catalog_item_in_use_cannot_be_deleted() {
    let w = World::new();
    let (job, job_body) = w.create_job(json!({
        "location": {"xref": "NLRTM", "name": "Rotterdam"},
        "cargo": {"product": {"name": "Brent"}}
    }));
    let location = text(&job_body["location"]);
    let product = text(&job_body["cargo"]["product"]);
    let (quality, quality_body) = w.create_sample(&job, &QUALITY);
    let test = text(&quality_body["test"]["id"]);

    for (catalog, id) in [
        ("locations", &location),
        ("products", &product),
        ("tests", &test),
    ] {
        let path = w.item_path(catalog, id);
        let before = w.read(&path);
        expect_error(
            &w.server.delete(&path, &w.alice),
            409,
            "catalog_item_in_use",
            None,
        );
        assert_eq!(w.read(&path), before);
    }

    // Dropping the reference frees the record.
    expect(&w.patch(&w.job_path(&job), &json!({"location": null})), 200);
    let deleted = expect(
        &w.server
            .delete(&w.item_path("locations", &location), &w.alice),
        200,
    );
    assert_eq!(
        deleted,
        json!({"name": "Rotterdam", "xref": "NLRTM", "ownerParty": w.client_org})
    );
    expect_404(&w.server.get(&w.item_path("locations", &location), &w.alice));
    expect_404(
        &w.server
            .delete(&w.item_path("locations", &location), &w.alice),
    );
    // Deleting the document frees its records.
    expect(
        &w.server
            .delete(&w.result_path(&job, &QUALITY, &quality), &w.alice),
        200,
    );
    expect(
        &w.server.delete(&w.item_path("tests", &test), &w.alice),
        200,
    );
    expect_error(
        &w.server
            .delete(&w.item_path("products", &product), &w.alice),
        409,
        "catalog_item_in_use",
        None,
    );
    expect(&w.server.delete(&w.job_path(&job), &w.alice), 200);
    expect(
        &w.server
            .delete(&w.item_path("products", &product), &w.alice),
        200,
    );

    // A record nothing refers to goes at once.
    let spare = w.create_item("vcfTable", "Table 54B", "54B");
    let deleted = expect(
        &w.server.delete(&w.item_path("vcfTable", &spare), &w.alice),
        200,
    );
    assert_eq!(
        deleted,
        json!({"name": "Table 54B", "xref": "54B", "ownerParty": w.client_org})
    );
    assert_eq!(w.items("vcfTable"), vec![]);
    // The path's catalog counts: a vcfTable id is not found among products.
    let spare = w.create_item("vcfTable", "Table 6A", "6A");
    expect_404(&w.server.delete(&w.item_path("products", &spare), &w.alice));
    assert_eq!(w.items("vcfTable").len(), 1);
}

/// The writer keeps the rows most writes read first (the workspace, the
/// job a result goes under, a catalog record found by xref) between writes
/// (`db::kept`); each is forgotten as soon as a write changes it, so the
/// next write sees the change.
#[test]
fn what_the_writer_keeps_of_a_record_is_forgotten_when_the_record_changes() {
    let w = World::new();
    let rotterdam = json!({"location": {"xref": "NLRTM", "name": "Rotterdam"}});
    // The first job creates the record; the next ones find it by xref (the
    // second one reads it, the third one finds it kept).
    let (_, first) = w.create_job(rotterdam.clone());
    let location = text(&first["location"]);
    for _ in 0..2 {
        assert_eq!(
            text(&w.create_job(rotterdam.clone()).1["location"]),
            location
        );
    }
    // Its xref changed: the old xref now finds nothing (a new record is
    // made), the new one finds it.
    let path = w.item_path("locations", &location);
    expect(&w.patch(&path, &json!({"xref": "NLRTM-1"})), 200);
    let (_, second) = w.create_job(rotterdam.clone());
    let made = text(&second["location"]);
    assert_ne!(made, location);
    assert_eq!(w.item("locations", &made)["xref"], "NLRTM");
    let renamed = json!({"location": {"xref": "NLRTM-1", "name": "Rotterdam"}});
    assert_eq!(text(&w.create_job(renamed).1["location"]), location);
    assert_eq!(w.items("locations").len(), 2);

    // A job written under, then deleted: a result under it is a 404.
    let (job, _) = w.create_job(json!({}));
    let (result, _) = w.create_sample(&job, &QUALITY);
    w.create_sample(&job, &QUALITY);
    for quality in w
        .server
        .get(&w.results_path(&job, &QUALITY), &w.alice)
        .json()
        .as_array()
        .unwrap()
    {
        let id = text(&quality["id"]);
        expect(
            &w.server
                .delete(&w.result_path(&job, &QUALITY, &id), &w.alice),
            200,
        );
    }
    assert!(!result.is_empty());
    expect(&w.server.delete(&w.job_path(&job), &w.alice), 200);
    expect_404(
        &w.server
            .post(&w.results_path(&job, &QUALITY), &w.alice, &quality_sample()),
    );

    // A workspace written in, then deleted: a write in it is a 404.
    let other = w.shared("Antwerp");
    let items = format!("/workspaces/{other}/catalogs/products");
    for name in ["Gasoil", "Diesel"] {
        expect(&w.server.post(&items, &w.bob, &json!({"name": name})), 201);
    }
    expect(
        &w.server.delete(&format!("/workspaces/{other}"), &w.alice),
        200,
    );
    expect_404(&w.server.post(&items, &w.bob, &json!({"name": "Jet"})));
}
