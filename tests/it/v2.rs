//! The v2 generation: organizations, workspace envelopes, synonyms by xref,
//! and the cross-generation views of one data model, over real HTTP.

use crate::common::{Server, id};
use serde_json::{Value, json};

fn create_org(server: &Server, key: &str, name: &str, category: Value) -> String {
    let reply = server.post(
        "/v2/organizations",
        key,
        &json!({"body": {"name": name, "category": category}}),
    );
    assert_eq!(reply.status, 201, "{}", reply.text());
    id(&reply)
}

fn assert_envelope(value: &Value, entity_type: &str) {
    assert_eq!(value["type"], entity_type, "{value}");
    assert!(
        value["id"].as_str().is_some_and(|s| s.len() == 36),
        "{value}"
    );
    assert!(value["body"].is_object(), "{value}");
    for field in ["created_at", "updated_at"] {
        let t = value[field]
            .as_str()
            .unwrap_or_else(|| panic!("{field} in {value}"));
        assert!(t.ends_with('Z') && t.len() == 24, "{t}");
    }
}

#[test]
fn organizations_create_read_patch_delete() {
    let server = Server::start();
    let key = server.admin_key();
    let reply = server.post(
        "/v2/organizations",
        &key,
        &json!({"body": {"name": "Northsea Trading", "category": "shipper"}}),
    );
    assert_eq!(reply.status, 201);
    let org = reply.json();
    assert_envelope(&org, "svc.hub.organization");
    assert_eq!(org["body"]["name"], "Northsea Trading");
    assert_eq!(org["body"]["category"], "shipper");
    let audience = org["body"]["audience"].as_str().unwrap().to_string();
    assert_eq!(audience.len(), 36);
    let path = format!("/v2/organizations/{}", org["id"].as_str().unwrap());
    assert_eq!(server.get(&path, &key).json(), org);

    // A bare entity is accepted on POST.
    let bare = server.post("/v2/organizations", &key, &json!({"name": "Bare Co"}));
    assert_eq!(bare.status, 201, "{}", bare.text());
    assert_eq!(bare.json()["body"]["category"], Value::Null);

    let patched = server.patch(
        &path,
        &key,
        &json!({"body": {"name": "Northsea Trading BV"}}),
    );
    assert_eq!(patched.status, 200);
    assert_eq!(patched.json()["body"]["name"], "Northsea Trading BV");
    assert_eq!(patched.json()["body"]["audience"], audience.as_str());
    assert_eq!(patched.json()["created_at"], org["created_at"]);

    // PATCH needs the wrapper.
    server
        .patch(&path, &key, &json!({"name": "x"}))
        .assert_error(400, "missing_field");
    let deleted = server.delete(&path, &key);
    assert_eq!(deleted.status, 200);
    assert_eq!(deleted.json()["body"]["name"], "Northsea Trading BV");
    server.get(&path, &key).assert_error(404, "not_found");
}

#[test]
fn organization_names_are_unique_ignoring_case() {
    let server = Server::start();
    let key = server.admin_key();
    create_org(&server, &key, "Gulf Inspect", Value::Null);
    server
        .post(
            "/v2/organizations",
            &key,
            &json!({"body": {"name": "GULF inspect"}}),
        )
        .assert_error(409, "duplicate_name");
    // Across tenants too: the registry is global.
    let other = server.add_user("other", &[]);
    server
        .post(
            "/v2/organizations",
            &other,
            &json!({"body": {"name": "gulf INSPECT"}}),
        )
        .assert_error(409, "duplicate_name");
    // Renaming onto a taken name is refused as well.
    let second = create_org(&server, &key, "Second", Value::Null);
    server
        .patch(
            &format!("/v2/organizations/{second}"),
            &key,
            &json!({"body": {"name": "Gulf Inspect"}}),
        )
        .assert_error(409, "duplicate_name");
}

#[test]
fn audience_is_the_creators_tenant_and_never_changes() {
    let server = Server::start();
    let ann = server.add_user("ann", &[]);
    let ann_colleague = server.add_user("ann2", &["--tenant-of", "ann"]);
    let bob = server.add_user("bob", &[]);
    let reply = server.post(
        "/v2/organizations",
        &ann,
        &json!({"body": {"name": "Ann Co"}}),
    );
    let org = reply.json();
    let audience = org["body"]["audience"].clone();
    let path = format!("/v2/organizations/{}", org["id"].as_str().unwrap());
    // Same tenant: same audience, may patch.
    let colleague_org = server.post(
        "/v2/organizations",
        &ann_colleague,
        &json!({"name": "Ann Co 2"}),
    );
    assert_eq!(colleague_org.json()["body"]["audience"], audience);
    assert_eq!(
        server
            .patch(
                &path,
                &ann_colleague,
                &json!({"body": {"category": "inspector"}})
            )
            .status,
        200
    );
    // Changing the audience is refused; repeating it is fine.
    let refused = server.patch(
        &path,
        &ann,
        &json!({"body": {"audience": "00000000-0000-4000-8000-000000000000"}}),
    );
    refused.assert_error(400, "immutable_field");
    assert_eq!(refused.error_field().as_deref(), Some("body.audience"));
    assert_eq!(
        server
            .patch(&path, &ann, &json!({"body": {"audience": audience}}))
            .status,
        200
    );
    server
        .post("/v2/organizations", &ann, &json!({"body": {"name": "Forged", "audience": "00000000-0000-4000-8000-000000000000"}}))
        .assert_error(400, "immutable_field");
    // Another tenant reads it but cannot change or delete it.
    assert_eq!(server.get(&path, &bob).status, 200);
    server
        .patch(&path, &bob, &json!({"body": {"name": "Hijacked"}}))
        .assert_error(404, "not_found");
    server.delete(&path, &bob).assert_error(404, "not_found");
    assert_eq!(server.get(&path, &ann).json()["body"]["name"], "Ann Co");
    assert_eq!(server.get(&path, &ann).json()["body"]["audience"], audience);
}

#[test]
fn organization_list_filters_and_defaults() {
    let server = Server::start();
    let key = server.admin_key();
    for (name, category) in [
        ("Alpha Shipping", json!("shipper")),
        ("Beta Inspection", json!("inspector")),
        ("Gamma Shipping", json!("shipper")),
        ("Delta", Value::Null),
    ] {
        create_org(&server, &key, name, category);
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    let names = |query: &str| -> Vec<String> {
        let reply = server.get(&format!("/v2/organizations{query}"), &key);
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["body"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    // Default sort: newest first.
    assert_eq!(
        names(""),
        [
            "Delta",
            "Gamma Shipping",
            "Beta Inspection",
            "Alpha Shipping"
        ]
    );
    assert_eq!(
        names("?name=SHIPPING&sort=name:asc"),
        ["Alpha Shipping", "Gamma Shipping"]
    );
    assert_eq!(names("?category=inspector"), ["Beta Inspection"]);
    assert_eq!(names("?category=none"), ["Delta"]);
    assert_eq!(
        names("?limit=2&offset=1&sort=name:asc"),
        ["Beta Inspection", "Delta"]
    );
    let counted = server.get("/v2/organizations?limit=1", &key);
    assert_eq!(counted.header("x-total-count"), Some("4"));
    server
        .get("/v2/organizations?category=broker", &key)
        .assert_error(400, "invalid_query");
    server
        .get("/v2/organizations?limit=1001", &key)
        .assert_error(400, "invalid_query");
    server
        .get("/v2/organizations?sort=colour:asc", &key)
        .assert_error(400, "invalid_query");
}

#[test]
fn v2_list_defaults_to_25_newest_first() {
    let server = Server::start();
    let key = server.admin_key();
    let org = create_org(&server, &key, "Owner", Value::Null);
    let mut made = Vec::new();
    for i in 0..27 {
        let reply = server.post(
            "/v2/workspaces",
            &key,
            &json!({"body": {"description": format!("ws {i:02}"), "parties": {"client": {"id": org}}}}),
        );
        assert_eq!(reply.status, 201, "{}", reply.text());
        made.push(id(&reply));
    }
    let page = server.get("/v2/workspaces", &key);
    assert_eq!(page.header("x-total-count"), Some("27"));
    let items = page.json();
    let items = items.as_array().unwrap();
    assert_eq!(items.len(), 25);
    assert_envelope(&items[0], "svc.hub.workspace");
    // created_at descending, ties broken by id ascending.
    let keys: Vec<(String, String)> = items
        .iter()
        .map(|w| {
            (
                w["created_at"].as_str().unwrap().to_string(),
                w["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    assert_eq!(keys, sorted);
    // The older list has no default limit.
    assert_eq!(
        server
            .get("/workspaces", &key)
            .json()
            .as_array()
            .unwrap()
            .len(),
        27
    );
}

#[test]
fn v2_workspace_filters() {
    let server = Server::start();
    let key = server.admin_key();
    let a = create_org(&server, &key, "Client A", Value::Null);
    let b = create_org(&server, &key, "Client B", Value::Null);
    let v = create_org(&server, &key, "Vendor V", Value::Null);
    for (client, vendor, description) in [
        (&a, Some(&v), "one"),
        (&b, Some(&v), "two"),
        (&a, None, "three"),
    ] {
        let mut parties = json!({"client": {"id": client}});
        if let Some(vendor) = vendor {
            parties["vendor"] = json!({"id": vendor});
        }
        let reply = server.post(
            "/v2/workspaces",
            &key,
            &json!({"body": {"description": description, "parties": parties}}),
        );
        assert_eq!(reply.status, 201);
    }
    let descriptions = |query: &str| -> Vec<String> {
        let reply = server.get(&format!("/v2/workspaces{query}"), &key);
        assert_eq!(reply.status, 200, "{}", reply.text());
        let mut d: Vec<String> = reply
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["body"]["description"].as_str().unwrap().to_string())
            .collect();
        d.sort();
        d
    };
    assert_eq!(
        descriptions(&format!("?filter[body.parties.client.id]={a}")),
        ["one", "three"]
    );
    assert_eq!(
        descriptions(&format!("?filter[body.parties.vendor.id]={v}")),
        ["one", "two"]
    );
    assert_eq!(descriptions("?filter[body.description]=two"), ["two"]);
    assert_eq!(
        descriptions(&format!(
            "?filter[body.parties.client.id]={a}&filter[body.parties.vendor.id]={v}"
        )),
        ["one"]
    );
    server
        .get("/v2/workspaces?filter[body.colour]=red", &key)
        .assert_error(400, "invalid_query");
    server
        .get("/v2/workspaces?description=one", &key)
        .assert_error(400, "invalid_query");
}

#[test]
fn one_workspace_two_generations() {
    let server = Server::start();
    let key = server.admin_key();
    let org = create_org(&server, &key, "Owner", Value::Null);
    // Created on the older path, read and patched on v2.
    let older = server.post(
        "/workspaces",
        &key,
        &json!({"description": "made old", "parties": {"client": {"id": org, "xref": "C-1"}}}),
    );
    assert_eq!(older.status, 201);
    let ws = id(&older);
    assert_eq!(older.json()["body"]["parties"]["client"]["xref"], "C-1");
    let v2 = server.get(&format!("/v2/workspaces/{ws}"), &key);
    assert_envelope(&v2.json(), "svc.hub.workspace");
    assert_eq!(v2.json()["body"], older.json()["body"]);
    let patched = server.patch(&format!("/v2/workspaces/{ws}"), &key, &json!({"body": {"description": "patched on v2", "parties": {"client": {"id": "ignored"}}}}));
    assert_eq!(patched.status, 200, "{}", patched.text());
    assert_eq!(
        patched.json()["body"]["parties"]["client"]["id"],
        org.as_str()
    );
    assert_eq!(
        server.get(&format!("/workspaces/{ws}"), &key).json()["body"]["description"],
        "patched on v2"
    );
    // Deleted on v2: gone on both.
    let deleted = server.delete(&format!("/v2/workspaces/{ws}"), &key);
    assert_eq!(deleted.status, 200);
    assert_envelope(&deleted.json(), "svc.hub.workspace");
    server
        .get(&format!("/workspaces/{ws}"), &key)
        .assert_error(404, "not_found");

    // Created on v2, a job added on the older path: v2 delete is refused.
    let made = server.post(
        "/v2/workspaces",
        &key,
        &json!({"body": {"description": "made new", "parties": {"client": {"id": org}}}}),
    );
    let ws = id(&made);
    assert_eq!(
        server.get(&format!("/workspaces/{ws}"), &key).json()["body"]["description"],
        "made new"
    );
    assert_eq!(
        server
            .post(&format!("/workspaces/{ws}/jobs"), &key, &json!({}))
            .status,
        201
    );
    let refused = server.delete(&format!("/v2/workspaces/{ws}"), &key);
    refused.assert_error(409, "workspace_not_empty");
    assert_eq!(refused.json()["error"]["message"], "Workspace is not empty");
    // An organization a workspace refers to cannot be deleted.
    server
        .delete(&format!("/v2/organizations/{org}"), &key)
        .assert_error(409, "organization_in_use");
}

#[test]
fn v2_workspaces_are_tenant_isolated() {
    let server = Server::start();
    let owner = server.add_user("owner", &[]);
    let stranger = server.add_user("stranger", &[]);
    let org = create_org(&server, &owner, "Owner Org", Value::Null);
    let ws = id(&server.post(
        "/v2/workspaces",
        &owner,
        &json!({"body": {"parties": {"client": {"id": org}}}}),
    ));
    let path = format!("/v2/workspaces/{ws}");
    server.get(&path, &stranger).assert_error(404, "not_found");
    server
        .patch(&path, &stranger, &json!({"body": {"description": "x"}}))
        .assert_error(404, "not_found");
    server
        .delete(&path, &stranger)
        .assert_error(404, "not_found");
    server
        .get(&format!("{path}/synonyms"), &stranger)
        .assert_error(404, "not_found");
    assert_eq!(
        server
            .get("/v2/workspaces", &stranger)
            .header("x-total-count"),
        Some("0")
    );
    // The stranger cannot create a workspace on someone else's organization.
    server
        .post(
            "/v2/workspaces",
            &stranger,
            &json!({"body": {"parties": {"client": {"id": org}}}}),
        )
        .assert_error(400, "invalid_field");
    assert_eq!(server.get(&path, &owner).status, 200);
    assert_eq!(
        server.get(&path, &owner).json()["body"]["description"],
        Value::Null
    );
}

#[test]
fn v2_synonyms_by_xref() {
    let server = Server::start();
    let key = server.admin_key();
    let org = create_org(&server, &key, "Owner", Value::Null);
    let ws = id(&server.post(
        "/workspaces",
        &key,
        &json!({"parties": {"client": {"id": org}}}),
    ));
    let item = |catalog: &str, name: &str| {
        id(&server.post(
            &format!("/workspaces/{ws}/catalogs/{catalog}"),
            &key,
            &json!({"name": name}),
        ))
    };
    let (gasoil, diesel, ulsd) = (
        item("products", "Gasoil"),
        item("products", "Diesel"),
        item("products", "ULSD"),
    );
    let tonne = item("uom", "MT");
    let tonne2 = item("uom", "Metric tonne");

    let link = server.request(
        "POST",
        &format!("/v2/workspaces/{ws}/xrefs/products/{gasoil}/synonyms/{diesel}"),
        Some(&key),
        &[],
        None,
    );
    assert_eq!(link.status, 201, "{}", link.text());
    assert_envelope(&link.json(), "svc.hub.synonym");
    assert_eq!(
        link.json()["body"],
        json!({"workspace": ws, "baseItem": gasoil, "linkedItem": diesel})
    );
    // The same pair, either way round, is the same link.
    let again = server.request(
        "POST",
        &format!("/v2/workspaces/{ws}/xrefs/products/{diesel}/synonyms/{gasoil}"),
        Some(&key),
        &[],
        None,
    );
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["id"], link.json()["id"]);
    let second = server.request(
        "POST",
        &format!("/v2/workspaces/{ws}/xrefs/products/{gasoil}/synonyms/{ulsd}"),
        Some(&key),
        &[],
        None,
    );
    assert_eq!(second.status, 201);
    let uom = server.request(
        "POST",
        &format!("/v2/workspaces/{ws}/xrefs/uom/{tonne}/synonyms/{tonne2}"),
        Some(&key),
        &[],
        None,
    );
    assert_eq!(uom.status, 201);

    assert_eq!(
        server
            .get(&format!("/v2/workspaces/{ws}/synonyms"), &key)
            .header("x-total-count"),
        Some("3")
    );
    let products = server.get(
        &format!("/v2/workspaces/{ws}/synonyms?xtype=products"),
        &key,
    );
    assert_eq!(products.header("x-total-count"), Some("2"));
    assert!(
        products
            .json()
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["type"] == "svc.hub.synonym")
    );
    server
        .get(&format!("/v2/workspaces/{ws}/synonyms?xtype=colours"), &key)
        .assert_error(400, "invalid_query");
    let of_diesel = server.get(
        &format!("/v2/workspaces/{ws}/xrefs/products/{diesel}/synonyms"),
        &key,
    );
    assert_eq!(of_diesel.json().as_array().unwrap().len(), 1);
    // The older path sees the same links.
    let older = server.get(
        &format!("/workspaces/{ws}/catalogs/products/{gasoil}/synonyms"),
        &key,
    );
    let mut ids: Vec<String> = older
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    ids.sort();
    let mut expected = vec![diesel.clone(), ulsd.clone()];
    expected.sort();
    assert_eq!(ids, expected);

    // Self links, other catalogs, unknown catalogs.
    server
        .request(
            "POST",
            &format!("/v2/workspaces/{ws}/xrefs/products/{gasoil}/synonyms/{gasoil}"),
            Some(&key),
            &[],
            None,
        )
        .assert_error(400, "invalid_field");
    server
        .request(
            "POST",
            &format!("/v2/workspaces/{ws}/xrefs/products/{gasoil}/synonyms/{tonne}"),
            Some(&key),
            &[],
            None,
        )
        .assert_error(404, "not_found");
    server
        .get(
            &format!("/v2/workspaces/{ws}/xrefs/colours/{gasoil}/synonyms"),
            &key,
        )
        .assert_error(404, "not_found");

    let unlinked = server.delete(
        &format!("/v2/workspaces/{ws}/xrefs/products/{diesel}/synonyms/{gasoil}"),
        &key,
    );
    assert_eq!(unlinked.status, 200);
    assert_eq!(unlinked.json()["id"], link.json()["id"]);
    server
        .delete(
            &format!("/v2/workspaces/{ws}/xrefs/products/{diesel}/synonyms/{gasoil}"),
            &key,
        )
        .assert_error(404, "not_found");
    server
        .get(
            &format!("/workspaces/{ws}/catalogs/products/{gasoil}/synonyms/{diesel}"),
            &key,
        )
        .assert_error(404, "not_found");
}
