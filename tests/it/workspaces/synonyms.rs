//! Synonyms: links between two records of one catalog, checked, listed and
//! unlinked from either end.

use super::*;

#[test]
fn synonyms_link_check_list_and_unlink() {
    let w = World::new();
    let p1 = w.create_item("products", "Brent", "BRENT");
    let p2 = w.create_item("products", "Brent blend", "BRENT-B");
    let p3 = w.create_item("products", "North Sea crude", "NSC");

    let reply = w
        .server
        .post(&w.synonym_path("products", &p1, &p2), &w.alice, &json!({}));
    let link = expect(&reply, 201);
    let (link_id, body) = envelope(&link);
    assert_eq!(
        body,
        json!({"workspace": w.ws, "baseItem": p1, "linkedItem": p2})
    );
    assert_eq!(keys(&body), ["workspace", "baseItem", "linkedItem"]);

    // Linking again, either way round, answers the same link with 200.
    for (a, b) in [(&p1, &p2), (&p2, &p1)] {
        let again = w
            .server
            .post(&w.synonym_path("products", a, b), &w.bob, &json!({}));
        assert_eq!(expect(&again, 200), link);
    }
    let empty_body = w.server.request(
        "POST",
        &w.synonym_path("products", &p1, &p2),
        Some(&w.alice),
        &[],
        None,
    );
    assert_eq!(expect(&empty_body, 200)["id"], link_id.as_str());

    // Check, both ways; 404 when not linked.
    assert_eq!(w.read(&w.synonym_path("products", &p1, &p2)), link);
    assert_eq!(w.read(&w.synonym_path("products", &p2, &p1)), link);
    expect_404(
        &w.server
            .get(&w.synonym_path("products", &p1, &p3), &w.alice),
    );

    expect(
        &w.server
            .post(&w.synonym_path("products", &p3, &p1), &w.alice, &json!({})),
        201,
    );
    let synonyms = |record: &str, params: &[(&str, &str)]| {
        let reply = w.server.get(
            &with_query(
                &format!("{}/synonyms", w.item_path("products", record)),
                params,
            ),
            &w.alice,
        );
        let ids: Vec<String> = expect(&reply, 200)
            .as_array()
            .expect("array")
            .iter()
            .map(text)
            .collect();
        (ids, total(&reply))
    };
    let (of_p1, count) = synonyms(&p1, &[]);
    assert_eq!(
        (sorted(of_p1), count),
        (sorted(vec![p2.clone(), p3.clone()]), 2)
    );
    assert_eq!(synonyms(&p2, &[]), (vec![p1.clone()], 1));
    assert_eq!(synonyms(&p3, &[]), (vec![p1.clone()], 1));
    assert_eq!(synonyms(&p1, &[("limit", "1")]).1, 2);
    assert_eq!(synonyms(&p1, &[("limit", "1")]).0.len(), 1);
    expect_error(
        &w.server.get(
            &with_query(
                &format!("{}/synonyms", w.item_path("products", &p1)),
                &[("colour", "x")],
            ),
            &w.alice,
        ),
        400,
        "invalid_query",
        Some("colour"),
    );

    // Unlink answers the body of the unlinked record.
    let p2_body = w.item("products", &p2);
    let unlinked = expect(
        &w.server
            .delete(&w.synonym_path("products", &p1, &p2), &w.alice),
        200,
    );
    assert_eq!(unlinked, p2_body);
    expect_404(
        &w.server
            .get(&w.synonym_path("products", &p1, &p2), &w.alice),
    );
    expect_404(
        &w.server
            .get(&w.synonym_path("products", &p2, &p1), &w.alice),
    );
    expect_404(
        &w.server
            .delete(&w.synonym_path("products", &p1, &p2), &w.alice),
    );
    assert_eq!(synonyms(&p2, &[]), (vec![], 0));
    assert_eq!(synonyms(&p1, &[]), (vec![p3.clone()], 1));
    // The records themselves stay.
    assert_eq!(w.item("products", &p2), p2_body);

    // Unlinking from the other end works too; then relinking makes a new link.
    let p1_body = w.item("products", &p1);
    assert_eq!(
        expect(
            &w.server
                .delete(&w.synonym_path("products", &p3, &p1), &w.alice),
            200
        ),
        p1_body
    );
    let relinked = expect(
        &w.server
            .post(&w.synonym_path("products", &p1, &p2), &w.alice, &json!({})),
        201,
    );
    assert_ne!(relinked["id"], link_id.as_str());

    // Deleting a linked record takes its links with it.
    expect(
        &w.server.delete(&w.item_path("products", &p2), &w.alice),
        200,
    );
    assert_eq!(synonyms(&p1, &[]), (vec![], 0));
}

#[test]
fn synonyms_join_two_distinct_records_of_one_catalog() {
    let w = World::new();
    let p1 = w.create_item("products", "Brent", "BRENT");
    let location = w.create_item("locations", "Rotterdam", "NLRTM");
    let self_link = w
        .server
        .post(&w.synonym_path("products", &p1, &p1), &w.alice, &json!({}));
    expect_error(&self_link, 400, "invalid_field", Some("synonymRecordId"));
    for path in [
        w.synonym_path("products", &p1, &location),
        w.synonym_path("locations", &location, &p1),
        w.synonym_path("locations", &p1, &location),
        w.synonym_path("products", &p1, MISSING),
        w.synonym_path("products", MISSING, &p1),
        w.synonym_path("vessels", &p1, &location),
    ] {
        expect_404(&w.server.post(&path, &w.alice, &json!({})));
        expect_404(&w.server.get(&path, &w.alice));
        expect_404(&w.server.delete(&path, &w.alice));
    }
    expect_404(&w.server.get(
        &format!("{}/synonyms", w.item_path("products", MISSING)),
        &w.alice,
    ));
    expect_404(&w.server.get(
        &format!("{}/synonyms", w.item_path("locations", &p1)),
        &w.alice,
    ));
    let reply = w.server.get(
        &format!("{}/synonyms", w.item_path("products", &p1)),
        &w.alice,
    );
    assert_eq!(expect(&reply, 200), json!([]));
}
