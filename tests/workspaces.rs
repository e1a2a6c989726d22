//! The workspace service on the older paths (`/workspaces/...`), over real HTTP
//! against the real binary: workspaces, tenancy, jobs and their status rules,
//! the four result kinds of a job, list filters, catalogs with implicit
//! creation, synonyms, and survival across a restart.
//!
//! Most tests start from a [`World`]: two tenants (a client, alice, and a
//! vendor, bob), one organization each, and one workspace between them.

mod common;

use serde_json::{Value, json};

use common::{Reply, Server, urlencode};

/// A well-formed id that names nothing.
const MISSING: &str = "00000000-0000-4000-8000-000000000000";

/// The eight catalogs of a workspace, by their path names.
const CATALOGS: [&str; 8] = [
    "products",
    "locations",
    "transports",
    "uom",
    "tests",
    "testMethods",
    "eventTypes",
    "vcfTable",
];

/// Path aliases of catalogs and the catalog they stand for.
const CATALOG_ALIASES: [(&str, &str); 2] =
    [("methods", "testMethods"), ("timelogEvents", "eventTypes")];

const STATUSES: [&str; 4] = ["pending", "active", "complete", "cancelled"];

/// The job status transitions the contract allows.
const ALLOWED_TRANSITIONS: [(&str, &str); 6] = [
    ("pending", "active"),
    ("pending", "cancelled"),
    ("active", "complete"),
    ("active", "cancelled"),
    ("complete", "active"),
    ("cancelled", "pending"),
];

/// Every other change of status.
const DISALLOWED_TRANSITIONS: [(&str, &str); 6] = [
    ("pending", "complete"),
    ("active", "pending"),
    ("complete", "pending"),
    ("complete", "cancelled"),
    ("cancelled", "active"),
    ("cancelled", "complete"),
];

// ---------------------------------------------------------------------------
// Generic helpers
// ---------------------------------------------------------------------------

/// Asserts the status and returns the JSON body.
#[track_caller]
fn expect(reply: &Reply, status: u16) -> Value {
    assert_eq!(
        reply.status,
        status,
        "unexpected status; body: {}",
        reply.text()
    );
    reply.json()
}

/// Asserts the contract's error body, and the `field` it names (or none).
#[track_caller]
fn expect_error(reply: &Reply, status: u16, code: &str, field: Option<&str>) {
    reply.assert_error(status, code);
    assert_eq!(reply.error_field().as_deref(), field, "{}", reply.text());
}

#[track_caller]
fn expect_404(reply: &Reply) {
    expect_error(reply, 404, "not_found", None);
}

/// The `X-Total-Count` header as a number.
#[track_caller]
fn total(reply: &Reply) -> usize {
    reply
        .header("x-total-count")
        .expect("X-Total-Count header")
        .parse()
        .expect("X-Total-Count is a number")
}

fn is_uuid(value: &Value) -> bool {
    value.as_str().is_some_and(|s| {
        s.len() == 36
            && s.char_indices().all(|(i, c)| match i {
                8 | 13 | 18 | 23 => c == '-',
                _ => c.is_ascii_hexdigit(),
            })
    })
}

fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .map(String::as_str)
        .collect()
}

/// Splits an older-path envelope `{id, body}` (exactly those keys, a UUID id).
#[track_caller]
fn envelope(value: &Value) -> (String, Value) {
    assert_eq!(keys(value), ["id", "body"], "{value}");
    assert!(is_uuid(&value["id"]), "{value}");
    assert!(value["body"].is_object(), "{value}");
    (
        value["id"].as_str().expect("id").to_string(),
        value["body"].clone(),
    )
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"))
        .to_string()
}

/// A list answer: the array of envelopes and `X-Total-Count`.
#[track_caller]
fn list(server: &Server, key: &str, path: &str) -> (Vec<Value>, usize) {
    let reply = server.get(path, key);
    let items = expect(&reply, 200)
        .as_array()
        .unwrap_or_else(|| panic!("GET {path} is not an array: {}", reply.text()))
        .clone();
    (items, total(&reply))
}

/// The ids of a list of envelopes, in order.
#[track_caller]
fn list_ids(server: &Server, key: &str, path: &str) -> (Vec<String>, usize) {
    let (items, total) = list(server, key, path);
    (items.iter().map(|item| envelope(item).0).collect(), total)
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

/// Builds `path?a=b&c=d` with percent-encoded values.
fn with_query(path: &str, params: &[(&str, &str)]) -> String {
    if params.is_empty() {
        return path.to_string();
    }
    let query: Vec<String> = params
        .iter()
        .map(|(name, value)| format!("{name}={}", urlencode(value)))
        .collect();
    format!("{path}?{}", query.join("&"))
}

/// Removes the value at a dotted path (`sample.location`).
fn without(mut body: Value, path: &str) -> Value {
    let mut target = &mut body;
    let mut parts: Vec<&str> = path.split('.').collect();
    let last = parts.pop().expect("a path");
    for part in parts {
        target = &mut target[part];
    }
    target.as_object_mut().expect("an object").remove(last);
    body
}

/// Sets the value at a dotted path.
fn with(mut body: Value, path: &str, value: Value) -> Value {
    let mut target = &mut body;
    for part in path.split('.') {
        target = &mut target[part];
    }
    *target = value;
    body
}

/// GETs every path (each must answer 200) and keeps the bodies.
#[track_caller]
fn snapshot(server: &Server, key: &str, paths: &[String]) -> Vec<Value> {
    paths
        .iter()
        .map(|path| expect(&server.get(path, key), 200))
        .collect()
}

// ---------------------------------------------------------------------------
// Organizations and workspaces
// ---------------------------------------------------------------------------

/// Creates an organization owned by the caller's tenant; returns its id.
#[track_caller]
fn create_org(server: &Server, key: &str, name: &str) -> String {
    let reply = server.post(
        "/v2/organizations",
        key,
        &json!({"body": {"name": name, "category": "shipper"}}),
    );
    let org = expect(&reply, 201);
    assert_eq!(org["type"], "svc.hub.organization", "{org}");
    assert_eq!(org["body"]["name"], name, "{org}");
    assert!(is_uuid(&org["id"]), "{org}");
    text(&org["id"])
}

fn workspace_body(description: &str, client: Option<&str>, vendor: Option<&str>) -> Value {
    let mut parties = json!({});
    if let Some(id) = client {
        parties["client"] = json!({ "id": id });
    }
    if let Some(id) = vendor {
        parties["vendor"] = json!({ "id": id });
    }
    json!({"description": description, "parties": parties})
}

/// `POST /workspaces` that must answer 201; returns the id and the body.
#[track_caller]
fn create_workspace(server: &Server, key: &str, body: &Value) -> (String, Value) {
    let reply = server.post("/workspaces", key, body);
    envelope(&expect(&reply, 201))
}

// ---------------------------------------------------------------------------
// The four result kinds of a job
// ---------------------------------------------------------------------------

/// How an operation answers (the older paths' oddities included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Body,
    Envelope,
    EnvelopeInArray,
}

/// Takes the body out of an answer of the given shape, checking the shape.
#[track_caller]
fn unshape(shape: Shape, id: &str, answer: &Value) -> Value {
    match shape {
        Shape::Body => {
            assert!(answer.get("id").is_none(), "a bare body: {answer}");
            assert!(answer.is_object(), "{answer}");
            answer.clone()
        }
        Shape::Envelope => {
            let (got, body) = envelope(answer);
            assert_eq!(got, id);
            body
        }
        Shape::EnvelopeInArray => {
            let items = answer.as_array().expect("an array");
            assert_eq!(items.len(), 1, "{answer}");
            unshape(Shape::Envelope, id, &items[0])
        }
    }
}

struct ResultKind {
    /// Path segment under a job.
    path: &'static str,
    /// A valid create body.
    sample: fn() -> Value,
    /// A PATCH body, a field it changes and the value that field then holds.
    patch: fn() -> (Value, &'static str, Value),
    get_shape: Shape,
    patch_shape: Shape,
}

fn lpi_sample() -> Value {
    json!({
        "billOfLadingDate": "2026-11-01T12:00:00Z",
        "portOfLoading": {"xref": "SAJED", "name": "Jeddah"},
        "measurements": [
            {"code": "GSV", "name": "GSV", "uom": {"xref": "BBL", "name": "Barrels"}, "value": 500000.5}
        ]
    })
}

fn lpi_patch() -> (Value, &'static str, Value) {
    (
        json!({"billOfLadingDate": "2026-11-02T12:00:00+02:00"}),
        "billOfLadingDate",
        json!("2026-11-02T10:00:00.000Z"),
    )
}

fn quantity_sample() -> Value {
    json!({
        "date": "2026-11-21T08:00:00Z",
        "direction": "source",
        "activeShoreTank": false,
        "measurements": [
            {"code": "TCV", "name": "TCV", "uom": {"xref": "BBL", "name": "Barrels"}, "value": 499000}
        ],
        "waterPerc": 0.1,
        "meanTemp": {"value": 15.5, "uom": {"xref": "DEGC", "name": "Celsius"}},
        "api": 32.4
    })
}

fn quantity_patch() -> (Value, &'static str, Value) {
    (json!({"waterPerc": 0.25}), "waterPerc", json!(0.25))
}

fn quality_sample() -> Value {
    json!({
        "status": "preliminary",
        "setNumber": 1,
        "testNumber": 2,
        "sample": {"location": "TANK-1", "refNumber": "S-1"},
        "test": {"xref": "DENS", "name": "Density"},
        "method": {"xref": "D1298", "name": "ASTM D1298"},
        "uom": {"xref": "KGM3", "name": "kg/m3"},
        "resultOperator": "eq",
        "result": "845.2"
    })
}

fn quality_patch() -> (Value, &'static str, Value) {
    (json!({"status": "confirmed"}), "status", json!("confirmed"))
}

fn timelog_sample() -> Value {
    json!({
        "type": {"xref": "NOR", "name": "Notice of readiness"},
        "category": "event",
        "start": "2026-11-21T06:00:00Z",
        "end": "2026-11-21T07:00:00Z"
    })
}

fn timelog_patch() -> (Value, &'static str, Value) {
    (
        json!({"notes": "pilot on board"}),
        "notes",
        json!("pilot on board"),
    )
}

const LPI: ResultKind = ResultKind {
    path: "load-port-information",
    sample: lpi_sample,
    patch: lpi_patch,
    get_shape: Shape::Body,
    patch_shape: Shape::Body,
};
const QUANTITY: ResultKind = ResultKind {
    path: "quantity",
    sample: quantity_sample,
    patch: quantity_patch,
    get_shape: Shape::Body,
    patch_shape: Shape::Envelope,
};
const QUALITY: ResultKind = ResultKind {
    path: "quality",
    sample: quality_sample,
    patch: quality_patch,
    get_shape: Shape::EnvelopeInArray,
    patch_shape: Shape::Body,
};
const TIMELOG: ResultKind = ResultKind {
    path: "timelog",
    sample: timelog_sample,
    patch: timelog_patch,
    get_shape: Shape::Body,
    patch_shape: Shape::Body,
};
const KINDS: [&ResultKind; 4] = [&LPI, &QUANTITY, &QUALITY, &TIMELOG];

// ---------------------------------------------------------------------------
// The world most tests start from
// ---------------------------------------------------------------------------

struct World {
    server: Server,
    admin: String,
    /// The client's tenant.
    alice: String,
    /// The vendor's tenant.
    bob: String,
    client_org: String,
    vendor_org: String,
    /// The workspace between them, created by alice.
    ws: String,
}

impl World {
    fn new() -> World {
        World::on(Server::start())
    }

    fn on(server: Server) -> World {
        let admin = server.admin_key();
        let alice = server.add_user("alice", &[]);
        let bob = server.add_user("bob", &[]);
        let client_org = create_org(&server, &alice, "Alice Shipping");
        let vendor_org = create_org(&server, &bob, "Bob Inspections");
        let (ws, _) = create_workspace(
            &server,
            &alice,
            &workspace_body("Rotterdam crude", Some(&client_org), Some(&vendor_org)),
        );
        World {
            server,
            admin,
            alice,
            bob,
            client_org,
            vendor_org,
            ws,
        }
    }

    /// A third tenant with an organization and a workspace of its own.
    fn outsider(&self, name: &str) -> (String, String, String) {
        let key = self.server.add_user(name, &[]);
        let org = create_org(&self.server, &key, &format!("{name} Trading"));
        let (ws, _) = create_workspace(
            &self.server,
            &key,
            &workspace_body(&format!("{name}'s own"), Some(&org), None),
        );
        (key, org, ws)
    }

    fn ws_path(&self) -> String {
        format!("/workspaces/{}", self.ws)
    }

    fn jobs_path(&self) -> String {
        format!("/workspaces/{}/jobs", self.ws)
    }

    fn job_path(&self, job: &str) -> String {
        format!("/workspaces/{}/jobs/{job}", self.ws)
    }

    fn results_path(&self, job: &str, kind: &ResultKind) -> String {
        format!("/workspaces/{}/jobs/{job}/{}", self.ws, kind.path)
    }

    fn result_path(&self, job: &str, kind: &ResultKind, id: &str) -> String {
        format!("{}/{id}", self.results_path(job, kind))
    }

    fn catalog_path(&self, catalog: &str) -> String {
        format!("/workspaces/{}/catalogs/{catalog}", self.ws)
    }

    fn item_path(&self, catalog: &str, id: &str) -> String {
        format!("{}/{id}", self.catalog_path(catalog))
    }

    fn synonym_path(&self, catalog: &str, record: &str, other: &str) -> String {
        format!("{}/synonyms/{other}", self.item_path(catalog, record))
    }

    /// GET as alice that must answer 200.
    #[track_caller]
    fn read(&self, path: &str) -> Value {
        expect(&self.server.get(path, &self.alice), 200)
    }

    #[track_caller]
    fn patch(&self, path: &str, body: &Value) -> Reply {
        self.server.patch(path, &self.alice, body)
    }

    /// Creates a job as `key`; returns its id and body.
    #[track_caller]
    fn create_job_as(&self, key: &str, body: &Value) -> (String, Value) {
        let reply = self.server.post(&self.jobs_path(), key, body);
        let (id, created) = envelope(&expect(&reply, 201));
        assert_eq!(created["workspace"], self.ws.as_str(), "{created}");
        (id, created)
    }

    #[track_caller]
    fn create_job(&self, body: Value) -> (String, Value) {
        self.create_job_as(&self.alice, &body)
    }

    /// Creates a result of a kind under a job as `key`; returns its id and body.
    #[track_caller]
    fn create_result_as(
        &self,
        key: &str,
        job: &str,
        kind: &ResultKind,
        body: &Value,
    ) -> (String, Value) {
        let reply = self.server.post(&self.results_path(job, kind), key, body);
        let (id, created) = envelope(&expect(&reply, 201));
        assert_eq!(created["workspace"], self.ws.as_str(), "{created}");
        assert_eq!(created["parent"], job, "{created}");
        (id, created)
    }

    #[track_caller]
    fn create_result(&self, job: &str, kind: &ResultKind, body: Value) -> (String, Value) {
        self.create_result_as(&self.alice, job, kind, &body)
    }

    #[track_caller]
    fn create_sample(&self, job: &str, kind: &ResultKind) -> (String, Value) {
        self.create_result(job, kind, (kind.sample)())
    }

    /// Creates a catalog item as `key`; returns its id and body.
    #[track_caller]
    fn create_item_as(&self, key: &str, catalog: &str, body: &Value) -> (String, Value) {
        let reply = self.server.post(&self.catalog_path(catalog), key, body);
        envelope(&expect(&reply, 201))
    }

    #[track_caller]
    fn create_item(&self, catalog: &str, name: &str, xref: &str) -> String {
        self.create_item_as(&self.alice, catalog, &json!({"name": name, "xref": xref}))
            .0
    }

    /// The items of a catalog as alice sees them: `(id, body)` pairs.
    #[track_caller]
    fn items(&self, catalog: &str) -> Vec<(String, Value)> {
        let (items, total) = list(&self.server, &self.alice, &self.catalog_path(catalog));
        assert_eq!(items.len(), total);
        items.iter().map(envelope).collect()
    }

    /// The body of one catalog item.
    #[track_caller]
    fn item(&self, catalog: &str, id: &str) -> Value {
        self.read(&self.item_path(catalog, id))
    }

    #[track_caller]
    fn job_status(&self, job: &str) -> Value {
        self.read(&self.job_path(job))["status"].clone()
    }
}

// ---------------------------------------------------------------------------
// Workspaces
// ---------------------------------------------------------------------------

#[test]
fn workspace_create_answers_an_envelope_with_the_body_as_stored() {
    let w = World::new();
    let body = json!({
        "description": "Crude discharge",
        "parties": {
            "client": {"id": w.client_org, "xref": "CL-1"},
            "vendor": {"id": w.vendor_org, "xref": "VN-9"}
        }
    });
    let (id, created) = create_workspace(&w.server, &w.alice, &body);
    assert_eq!(created, body);
    assert_eq!(keys(&created), ["description", "parties"]);
    assert_eq!(keys(&created["parties"]), ["client", "vendor"]);
    assert_eq!(keys(&created["parties"]["client"]), ["id", "xref"]);

    let read = w.read(&format!("/workspaces/{id}"));
    assert_eq!(read, json!({"id": id, "body": body}));

    // One party, no xref, no description: the rest reads back as null.
    let (_, lone) = create_workspace(
        &w.server,
        &w.alice,
        &json!({"parties": {"client": {"id": w.client_org}}}),
    );
    assert_eq!(
        lone,
        json!({
            "description": null,
            "parties": {
                "client": {"id": w.client_org, "xref": null},
                "vendor": {"id": null, "xref": null}
            }
        })
    );

    // The vendor's tenant may create one too, owning the vendor party.
    let (_, by_vendor) = create_workspace(
        &w.server,
        &w.bob,
        &workspace_body(
            "Invited by the vendor",
            Some(&w.client_org),
            Some(&w.vendor_org),
        ),
    );
    assert_eq!(by_vendor["parties"]["vendor"]["id"], w.vendor_org.as_str());
}

#[test]
fn workspace_create_checks_its_parties() {
    let w = World::new();
    let (_, carol_org, _) = w.outsider("carol");
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"description": "no parties"}),
            "invalid_field",
            "parties",
        ),
        (json!({"parties": {}}), "invalid_field", "parties"),
        (json!({"parties": null}), "invalid_field", "parties"),
        (
            json!({"parties": {"client": {"xref": "only an xref"}}}),
            "invalid_field",
            "parties",
        ),
        (
            json!({"parties": {"client": {"id": MISSING}}}),
            "invalid_field",
            "parties.client.id",
        ),
        (
            json!({"parties": {"client": {"id": w.client_org}, "vendor": {"id": "not-an-org"}}}),
            "invalid_field",
            "parties.vendor.id",
        ),
        // Neither party is an organization of alice's tenant.
        (
            json!({"parties": {"vendor": {"id": w.vendor_org}}}),
            "invalid_field",
            "parties.vendor.id",
        ),
        (
            json!({"parties": {"client": {"id": carol_org}, "vendor": {"id": w.vendor_org}}}),
            "invalid_field",
            "parties.client.id",
        ),
        (
            json!({"parties": {"client": {"id": 42}}}),
            "invalid_field",
            "parties.client.id",
        ),
        (
            json!({"description": 7, "parties": {"client": {"id": w.client_org}}}),
            "invalid_field",
            "description",
        ),
        (
            json!({"colour": "red", "parties": {"client": {"id": w.client_org}}}),
            "unknown_field",
            "colour",
        ),
        (
            json!({"parties": {"broker": {"id": w.client_org}}}),
            "unknown_field",
            "parties.broker",
        ),
        (
            json!({"parties": {"client": {"id": w.client_org, "name": "x"}}}),
            "unknown_field",
            "parties.client.name",
        ),
        (json!(["not", "an", "object"]), "invalid_field", "$"),
    ];
    for (body, code, field) in &cases {
        let reply = w.server.post("/workspaces", &w.alice, body);
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        expect_error(&reply, 400, code, Some(field));
    }
    let broken = w.server.request(
        "POST",
        "/workspaces",
        Some(&w.alice),
        &[("Content-Type", "application/json")],
        Some(b"{\"description\":"),
    );
    broken.assert_error(400, "invalid_json");

    // Nothing was created.
    let (ids, count) = list_ids(&w.server, &w.alice, "/workspaces");
    assert_eq!((ids, count), (vec![w.ws.clone()], 1));
}

#[test]
fn workspace_list_shows_only_visible_ones_with_filters_sort_and_paging() {
    let w = World::new();
    let mut named = vec![("Rotterdam crude".to_string(), w.ws.clone())];
    for description in ["Charlie", "Alpha", "Bravo"] {
        let (id, _) = create_workspace(
            &w.server,
            &w.alice,
            &workspace_body(description, Some(&w.client_org), Some(&w.vendor_org)),
        );
        named.push((description.to_string(), id));
    }
    let (_carol, _, carol_ws) = w.outsider("carol");
    let id_of = |description: &str| {
        named
            .iter()
            .find(|(d, _)| d == description)
            .map(|(_, id)| id.clone())
            .expect("known description")
    };
    let page = |key: &str, params: &[(&str, &str)]| {
        list_ids(&w.server, key, &with_query("/workspaces", params))
    };

    let (all, count) = page(&w.alice, &[]);
    assert_eq!(count, 4);
    assert_eq!(
        sorted(all.clone()),
        sorted(named.iter().map(|(_, id)| id.clone()).collect())
    );
    assert!(!all.contains(&carol_ws));
    // The envelopes of a list are those of GET.
    let (items, _) = list(&w.server, &w.alice, "/workspaces");
    for item in &items {
        let (id, _) = envelope(item);
        assert_eq!(*item, w.read(&format!("/workspaces/{id}")));
    }

    assert_eq!(
        page(&w.alice, &[("description", "Bravo")]),
        (vec![id_of("Bravo")], 1)
    );
    assert_eq!(page(&w.alice, &[("description", "bravo")]), (vec![], 0));
    assert_eq!(page(&w.alice, &[("description", "Brav")]), (vec![], 0));
    assert_eq!(
        page(&w.alice, &[("sort", "description:asc")]),
        (
            ["Alpha", "Bravo", "Charlie", "Rotterdam crude"]
                .map(id_of)
                .to_vec(),
            4
        )
    );
    assert_eq!(
        page(
            &w.alice,
            &[
                ("sort", "description:desc"),
                ("limit", "2"),
                ("offset", "1")
            ]
        ),
        (["Charlie", "Bravo"].map(id_of).to_vec(), 4)
    );
    assert_eq!(
        page(&w.alice, &[("sort", "description"), ("limit", "1")]),
        (vec![id_of("Alpha")], 4)
    );
    assert_eq!(page(&w.alice, &[("limit", "0")]), (vec![], 4));
    assert_eq!(page(&w.alice, &[("offset", "10")]), (vec![], 4));
    assert_eq!(page(&w.alice, &[("limit", "1000")]).1, 4);

    // The vendor sees the four; carol her one; the admin all five.
    assert_eq!(page(&w.bob, &[]).1, 4);
    let carol = w.server.login("carol", "carol-password");
    assert_eq!(page(&carol, &[]), (vec![carol_ws.clone()], 1));
    let (admin_all, admin_count) = page(&w.admin, &[]);
    assert_eq!(admin_count, 5);
    assert!(admin_all.contains(&carol_ws));

    for (params, field) in [
        (vec![("limit", "1001")], "limit"),
        (vec![("limit", "-1")], "limit"),
        (vec![("limit", "many")], "limit"),
        (vec![("offset", "-3")], "offset"),
        (vec![("colour", "red")], "colour"),
        (vec![("status", "active")], "status"),
        (vec![("sort", "colour:asc")], "sort"),
        (vec![("sort", "description:sideways")], "sort"),
        (
            vec![("description", "Alpha"), ("description", "Bravo")],
            "description",
        ),
    ] {
        let reply = w.server.get(&with_query("/workspaces", &params), &w.alice);
        expect_error(&reply, 400, "invalid_query", Some(field));
    }
}

#[test]
fn workspace_patch_changes_the_description_and_never_the_parties() {
    let w = World::new();
    let path = w.ws_path();
    let before = w.read(&path);

    let answer = expect(&w.patch(&path, &json!({"description": "Renamed"})), 200);
    let (id, body) = envelope(&answer);
    assert_eq!(id, w.ws);
    assert_eq!(body["description"], "Renamed");
    assert_eq!(body["parties"], before["body"]["parties"]);
    assert_eq!(w.read(&path), answer);

    // Parties in a patch are accepted and change nothing.
    let (_, carol_org, _) = w.outsider("carol");
    let answer = expect(
        &w.patch(
            &path,
            &json!({
                "description": "Again",
                "parties": {"client": {"id": carol_org, "xref": "NEW"}, "vendor": null}
            }),
        ),
        200,
    );
    assert_eq!(answer["body"]["description"], "Again");
    assert_eq!(answer["body"]["parties"], before["body"]["parties"]);
    let only_parties = expect(
        &w.patch(&path, &json!({"parties": {"vendor": {"id": MISSING}}})),
        200,
    );
    assert_eq!(only_parties, answer);
    assert_eq!(w.read(&path), answer);

    // An empty patch changes nothing; null clears the description.
    assert_eq!(expect(&w.patch(&path, &json!({})), 200), answer);
    let cleared = expect(&w.patch(&path, &json!({"description": null})), 200);
    assert_eq!(cleared["body"]["description"], Value::Null);

    expect_error(
        &w.patch(&path, &json!({"colour": "red"})),
        400,
        "unknown_field",
        Some("colour"),
    );
    expect_error(
        &w.patch(&path, &json!({"description": ["x"]})),
        400,
        "invalid_field",
        Some("description"),
    );
    expect_404(&w.patch(
        &format!("/workspaces/{MISSING}"),
        &json!({"description": "x"}),
    ));
    assert_eq!(w.read(&path), cleared);
}

#[test]
fn deleting_an_empty_workspace_answers_its_envelope_then_it_is_gone() {
    let w = World::new();
    let (id, _) = create_workspace(
        &w.server,
        &w.alice,
        &workspace_body("Short-lived", Some(&w.client_org), Some(&w.vendor_org)),
    );
    let path = format!("/workspaces/{id}");
    // Catalog records and synonyms do not keep a workspace alive.
    let item = |name: &str| {
        let reply = w.server.post(
            &format!("{path}/catalogs/products"),
            &w.alice,
            &json!({"name": name}),
        );
        envelope(&expect(&reply, 201)).0
    };
    let (a, b) = (item("Crude"), item("Crude oil"));
    expect(
        &w.server.post(
            &format!("{path}/catalogs/products/{a}/synonyms/{b}"),
            &w.alice,
            &json!({}),
        ),
        201,
    );

    let before = w.read(&path);
    let deleted = expect(&w.server.delete(&path, &w.alice), 200);
    assert_eq!(deleted, before);
    expect_404(&w.server.get(&path, &w.alice));
    expect_404(&w.server.get(&format!("{path}/catalogs/products"), &w.alice));
    expect_404(&w.server.delete(&path, &w.alice));
    expect_404(&w.patch(&path, &json!({"description": "back?"})));
    let (ids, count) = list_ids(&w.server, &w.alice, "/workspaces");
    assert_eq!((ids, count), (vec![w.ws.clone()], 1));

    expect_404(&w.server.delete(&format!("/workspaces/{MISSING}"), &w.alice));
    expect_404(&w.server.delete("/workspaces/not-a-uuid", &w.alice));
}

#[test]
fn deleting_a_workspace_with_a_job_is_refused_and_changes_nothing() {
    let w = World::new();
    let (job, job_body) = w.create_job(json!({"notes": "keep me"}));
    let before = w.read(&w.ws_path());

    let reply = w.server.delete(&w.ws_path(), &w.alice);
    expect_error(&reply, 409, "workspace_not_empty", None);
    assert_eq!(reply.json()["error"]["message"], "Workspace is not empty");

    assert_eq!(w.read(&w.ws_path()), before);
    assert_eq!(w.read(&w.job_path(&job)), job_body);
    assert_eq!(
        list_ids(&w.server, &w.alice, &w.jobs_path()),
        (vec![job], 1)
    );
}

// ---------------------------------------------------------------------------
// Tenancy
// ---------------------------------------------------------------------------

/// A workspace with one of everything in it, for the tenancy tests.
struct Furnished {
    job: String,
    results: Vec<(&'static ResultKind, String)>,
    products: (String, String),
}

impl World {
    fn furnish(&self) -> Furnished {
        let (job, _) = self.create_job(json!({
            "location": {"xref": "NLRTM", "name": "Rotterdam"},
            "requested": {"quality": true}
        }));
        let results = KINDS
            .iter()
            .map(|kind| (*kind, self.create_sample(&job, kind).0))
            .collect();
        let products = (
            self.create_item("products", "Brent", "BRENT"),
            self.create_item("products", "Brent blend", "BRENT-B"),
        );
        expect(
            &self.server.post(
                &self.synonym_path("products", &products.0, &products.1),
                &self.alice,
                &json!({}),
            ),
            201,
        );
        Furnished {
            job,
            results,
            products,
        }
    }

    /// Every readable path of a furnished workspace.
    fn readable_paths(&self, f: &Furnished) -> Vec<String> {
        let mut paths = vec![self.ws_path(), self.jobs_path(), self.job_path(&f.job)];
        for (kind, id) in &f.results {
            paths.push(self.results_path(&f.job, kind));
            paths.push(self.result_path(&f.job, kind, id));
        }
        for catalog in CATALOGS {
            paths.push(self.catalog_path(catalog));
        }
        paths.push(self.item_path("products", &f.products.0));
        paths.push(format!(
            "{}/synonyms",
            self.item_path("products", &f.products.0)
        ));
        paths.push(self.synonym_path("products", &f.products.0, &f.products.1));
        paths
    }
}

#[test]
fn a_foreign_tenant_gets_404_everywhere_and_changes_nothing() {
    let w = World::new();
    let f = w.furnish();
    let (mallory, _, _) = w.outsider("mallory");
    let paths = w.readable_paths(&f);
    let before = snapshot(&w.server, &w.alice, &paths);

    let (p1, p2) = &f.products;
    let mut requests: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", w.ws_path(), None),
        (
            "PATCH",
            w.ws_path(),
            Some(json!({"description": "mine now"})),
        ),
        ("DELETE", w.ws_path(), None),
        ("GET", w.jobs_path(), None),
        ("POST", w.jobs_path(), Some(json!({"notes": "intruder"}))),
        ("GET", w.job_path(&f.job), None),
        ("PATCH", w.job_path(&f.job), Some(json!({"notes": "x"}))),
        ("DELETE", w.job_path(&f.job), None),
    ];
    for (kind, id) in &f.results {
        let item = w.result_path(&f.job, kind, id);
        requests.extend([
            ("GET", w.results_path(&f.job, kind), None),
            ("POST", w.results_path(&f.job, kind), Some((kind.sample)())),
            ("GET", item.clone(), None),
            ("PATCH", item.clone(), Some((kind.patch)().0)),
            ("DELETE", item, None),
        ]);
    }
    for catalog in CATALOGS.iter().chain(&["methods", "timelogEvents"]) {
        requests.push(("GET", w.catalog_path(catalog), None));
        requests.push(("POST", w.catalog_path(catalog), Some(json!({"name": "x"}))));
    }
    let item = w.item_path("products", p1);
    requests.extend([
        ("GET", item.clone(), None),
        ("PATCH", item.clone(), Some(json!({"name": "renamed"}))),
        ("DELETE", item.clone(), None),
        ("GET", format!("{item}/synonyms"), None),
        ("GET", w.synonym_path("products", p1, p2), None),
        ("POST", w.synonym_path("products", p1, p2), Some(json!({}))),
        ("DELETE", w.synonym_path("products", p1, p2), None),
    ]);
    for (method, path, body) in &requests {
        let reply = match body {
            Some(body) => w.server.send_json(method, path, &mallory, body),
            None => w.server.request(method, path, Some(&mallory), &[], None),
        };
        assert_eq!(reply.status, 404, "{method} {path}: {}", reply.text());
        expect_404(&reply);
    }
    // The same requests on a workspace that does not exist answer alike.
    let missing = w
        .server
        .get(&format!("/workspaces/{MISSING}/jobs"), &mallory);
    expect_404(&missing);

    assert_eq!(snapshot(&w.server, &w.alice, &paths), before);
    let (ids, count) = list_ids(&w.server, &mallory, "/workspaces");
    assert_eq!(count, 1);
    assert!(!ids.contains(&w.ws));
}

#[test]
fn the_same_tenant_the_vendor_and_the_admin_see_the_workspace() {
    let w = World::new();
    let f = w.furnish();
    let paths = w.readable_paths(&f);
    let seen_by_alice = snapshot(&w.server, &w.alice, &paths);
    let colleague = w.server.add_user("alice2", &["--tenant-of", "alice"]);
    let (_, _, carol_ws) = w.outsider("carol");

    for key in [&colleague, &w.bob, &w.admin] {
        assert_eq!(snapshot(&w.server, key, &paths), seen_by_alice);
        let (ids, _) = list_ids(&w.server, key, "/workspaces");
        assert!(ids.contains(&w.ws));
    }
    assert_eq!(list_ids(&w.server, &colleague, "/workspaces").1, 1);
    assert_eq!(list_ids(&w.server, &w.bob, "/workspaces").1, 1);
    let (admin_ids, admin_count) = list_ids(&w.server, &w.admin, "/workspaces");
    assert_eq!(admin_count, 2);
    assert!(admin_ids.contains(&carol_ws));

    // Each may also write; catalog records record the writer's party.
    let (job, _) = w.create_job_as(&colleague, &json!({"notes": "by a colleague"}));
    let (_, quality) = w.create_result_as(&w.bob, &job, &QUALITY, &quality_sample());
    assert_eq!(quality["test"]["xref"], "DENS");
    let owner_of = |key: &str, name: &str| {
        w.create_item_as(key, "transports", &json!({"name": name}))
            .1["ownerParty"]
            .clone()
    };
    assert_eq!(owner_of(&colleague, "MT Alpha"), w.client_org.as_str());
    assert_eq!(owner_of(&w.bob, "MT Bravo"), w.vendor_org.as_str());
    assert_eq!(owner_of(&w.admin, "MT Charlie"), Value::Null);
    let renamed = expect(
        &w.server.patch(
            &w.ws_path(),
            &w.bob,
            &json!({"description": "vendor's word"}),
        ),
        200,
    );
    assert_eq!(renamed["body"]["description"], "vendor's word");
    // The admin reads a workspace of which it is no party.
    expect(
        &w.server.get(&format!("/workspaces/{carol_ws}"), &w.admin),
        200,
    );
}

// ---------------------------------------------------------------------------
// Jobs
// ---------------------------------------------------------------------------

#[test]
fn a_new_job_is_pending_and_names_the_workspace_parties() {
    let w = World::new();
    let (id, body) = w.create_job(json!({}));
    assert_eq!(
        body,
        json!({"workspace": w.ws, "status": "pending", "vendor": w.vendor_org, "client": w.client_org})
    );
    assert_eq!(keys(&body), ["workspace", "status", "vendor", "client"]);
    // GET answers the bare body.
    assert_eq!(w.read(&w.job_path(&id)), body);
    assert_eq!(
        list(&w.server, &w.alice, &w.jobs_path()).0,
        vec![json!({"id": id, "body": body})]
    );

    // Explicit values win over the defaults; `workspace` may repeat the path.
    let (_, carol_org, _) = w.outsider("carol");
    let (_, explicit) = w.create_job(json!({
        "workspace": w.ws,
        "status": "active",
        "client": carol_org,
        "xref": "PO-77",
        "refNumber": "R-1",
        "tripNumber": "T-9",
        "activity": "sts"
    }));
    assert_eq!(explicit["status"], "active");
    assert_eq!(explicit["client"], carol_org.as_str());
    assert_eq!(explicit["vendor"], w.vendor_org.as_str());
    assert_eq!(
        keys(&explicit),
        [
            "workspace",
            "xref",
            "refNumber",
            "tripNumber",
            "status",
            "activity",
            "vendor",
            "client"
        ]
    );

    // `parent` names another document of the workspace.
    let (_, child) = w.create_job(json!({"parent": id}));
    assert_eq!(child["parent"], id.as_str());
    expect_error(
        &w.server
            .post(&w.jobs_path(), &w.alice, &json!({"parent": MISSING})),
        400,
        "invalid_field",
        Some("parent"),
    );

    // A workspace with only a client party: no vendor default.
    let (lone, _) = create_workspace(
        &w.server,
        &w.alice,
        &workspace_body("client only", Some(&w.client_org), None),
    );
    let reply = w
        .server
        .post(&format!("/workspaces/{lone}/jobs"), &w.alice, &json!({}));
    let (_, lone_job) = envelope(&expect(&reply, 201));
    assert_eq!(
        lone_job,
        json!({"workspace": lone, "status": "pending", "client": w.client_org})
    );
}

#[test]
fn job_catalog_references_become_record_ids_created_once_and_reused() {
    let w = World::new();
    let (_, first) = w.create_job(json!({
        "location": {"xref": "NLRTM", "name": "Rotterdam"},
        "transports": [{"xref": "IMO9000001", "name": "MT Alpha"}, {"name": "MT Bravo"}],
        "cargo": {"product": {"xref": "BRENT", "name": "Brent"}, "quantity": 5000, "uom": {"name": "Barrels"}}
    }));
    let location = text(&first["location"]);
    let transports: Vec<String> = first["transports"]
        .as_array()
        .expect("transports")
        .iter()
        .map(text)
        .collect();
    let product = text(&first["cargo"]["product"]);
    let uom = text(&first["cargo"]["uom"]);
    for id in [&location, &product, &uom].into_iter().chain(&transports) {
        assert!(is_uuid(&json!(id)), "{first}");
    }
    assert_eq!(first["cargo"]["quantity"], 5000);

    // The records exist in their catalogs, owned by the writer's party.
    let expect_item = |catalog: &str, id: &str, name: &str, xref: Option<&str>| {
        assert_eq!(
            w.item(catalog, id),
            json!({"name": name, "xref": xref, "ownerParty": w.client_org})
        );
    };
    expect_item("locations", &location, "Rotterdam", Some("NLRTM"));
    expect_item("transports", &transports[0], "MT Alpha", Some("IMO9000001"));
    expect_item("transports", &transports[1], "MT Bravo", None);
    expect_item("products", &product, "Brent", Some("BRENT"));
    expect_item("uom", &uom, "Barrels", None);
    assert_eq!(w.items("locations").len(), 1);
    assert_eq!(w.items("transports").len(), 2);

    // The same xref finds the same record (the name is not needed, nor compared).
    let (_, second) = w.create_job(json!({
        "location": {"xref": "NLRTM"},
        "transports": [{"xref": "IMO9000001", "name": "another name"}],
        "cargo": {"uom": {"name": "BARRELS"}}
    }));
    assert_eq!(second["location"], location.as_str());
    assert_eq!(second["transports"], json!([transports[0]]));
    // By name, ignoring case.
    assert_eq!(second["cargo"]["uom"], uom.as_str());
    let (_, third) =
        w.create_job(json!({"location": {"name": "ROTTERDAM"}, "cargo": {"product": product}}));
    assert_eq!(third["location"], location.as_str());
    // A record id is taken as it is, and so is the `{id}` form.
    assert_eq!(third["cargo"]["product"], product.as_str());
    let (_, fourth) = w.create_job(json!({"location": {"id": location}}));
    assert_eq!(fourth["location"], location.as_str());
    assert_eq!(w.items("locations").len(), 1);
    assert_eq!(w.items("uom").len(), 1);
    assert_eq!(w.items("products").len(), 1);

    // A record created through the vendor's job belongs to the vendor.
    let (_, by_vendor) = w.create_job_as(
        &w.bob,
        &json!({"location": {"xref": "BEANR", "name": "Antwerp"}}),
    );
    let antwerp = text(&by_vendor["location"]);
    assert_eq!(
        w.item("locations", &antwerp)["ownerParty"],
        w.vendor_org.as_str()
    );
    assert_eq!(w.items("locations").len(), 2);
}

#[test]
fn job_references_that_do_not_resolve_are_refused_and_nothing_is_created() {
    let w = World::new();
    let (_, job) = w.create_job(json!({"location": {"xref": "NLRTM", "name": "Rotterdam"}}));
    let location = text(&job["location"]);
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({"location": MISSING}), "invalid_field", "location"),
        (
            json!({"location": "not-an-id"}),
            "invalid_field",
            "location",
        ),
        // A record of another catalog.
        (
            json!({"cargo": {"uom": location}}),
            "invalid_field",
            "cargo.uom",
        ),
        (
            json!({"location": {"id": MISSING}}),
            "invalid_field",
            "location",
        ),
        (json!({"location": {}}), "invalid_field", "location"),
        (
            json!({"location": {"name": "  "}}),
            "invalid_field",
            "location",
        ),
        (json!({"location": 5}), "invalid_field", "location"),
        (
            json!({"location": {"xref": 5}}),
            "invalid_field",
            "location.xref",
        ),
        (
            json!({"location": {"code": "X"}}),
            "unknown_field",
            "location.code",
        ),
        (
            json!({"transports": [{"name": "MT Alpha"}, MISSING]}),
            "invalid_field",
            "transports[1]",
        ),
        (
            json!({"transports": [null]}),
            "invalid_field",
            "transports[0]",
        ),
        (
            json!({"transports": "MT Alpha"}),
            "invalid_field",
            "transports",
        ),
        (json!({"vendor": MISSING}), "invalid_field", "vendor"),
        (json!({"client": location}), "invalid_field", "client"),
        // A new record with a bad one beside it: the whole write is refused.
        (
            json!({"location": {"xref": "DEHAM", "name": "Hamburg"}, "cargo": {"product": MISSING}}),
            "invalid_field",
            "cargo.product",
        ),
    ];
    for (body, code, field) in &cases {
        let reply = w.server.post(&w.jobs_path(), &w.alice, body);
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        expect_error(&reply, 400, code, Some(field));
    }
    assert_eq!(list(&w.server, &w.alice, &w.jobs_path()).1, 1);
    assert_eq!(w.items("locations").len(), 1);
    assert_eq!(w.items("transports").len(), 0);
    assert_eq!(w.items("products").len(), 0);
}

#[test]
fn job_datetimes_are_stored_in_utc_with_milliseconds() {
    let w = World::new();
    let (id, body) = w.create_job(json!({
        "eta": "2026-11-21T10:30:00+01:00",
        "etc": "2026-11-22T00:00:00.5-05:00"
    }));
    assert_eq!(body["eta"], "2026-11-21T09:30:00.000Z");
    assert_eq!(body["etc"], "2026-11-22T05:00:00.500Z");
    let patched = expect(
        &w.patch(
            &w.job_path(&id),
            &json!({"eta": "2026-11-21T23:59:59.1234Z"}),
        ),
        200,
    );
    assert_eq!(patched["eta"], "2026-11-21T23:59:59.123Z");
    assert_eq!(patched["etc"], "2026-11-22T05:00:00.500Z");
    for bad in [
        json!("tomorrow"),
        json!("2026-11-21"),
        json!("2026-11-21 10:00:00"),
        json!(1795253400),
    ] {
        let reply = w
            .server
            .post(&w.jobs_path(), &w.alice, &json!({"eta": bad}));
        expect_error(&reply, 400, "invalid_field", Some("eta"));
    }
}

#[test]
fn job_bodies_are_checked_field_by_field() {
    let w = World::new();
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({"status": "done"}), "invalid_field", "status"),
        (json!({"status": "Pending"}), "invalid_field", "status"),
        (json!({"activity": "fly"}), "invalid_field", "activity"),
        (json!({"colour": "red"}), "unknown_field", "colour"),
        (
            json!({"cargo": {"colour": "red"}}),
            "unknown_field",
            "cargo.colour",
        ),
        (
            json!({"requested": {"photos": true}}),
            "unknown_field",
            "requested.photos",
        ),
        (
            json!({"cargo": {"quantity": "x"}}),
            "invalid_field",
            "cargo.quantity",
        ),
        (json!({"cargo": "oil"}), "invalid_field", "cargo"),
        (
            json!({"requested": {"quality": "yes"}}),
            "invalid_field",
            "requested.quality",
        ),
        (
            json!({"requested": {"timelog": 1}}),
            "invalid_field",
            "requested.timelog",
        ),
        (json!({"notes": 5}), "invalid_field", "notes"),
        (json!({"xref": ["a"]}), "invalid_field", "xref"),
        (json!({"workspace": MISSING}), "invalid_field", "workspace"),
        (json!([]), "invalid_field", "$"),
    ];
    for (body, code, field) in &cases {
        let reply = w.server.post(&w.jobs_path(), &w.alice, body);
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        expect_error(&reply, 400, code, Some(field));
    }
    let wrong_type = w.server.request(
        "POST",
        &w.jobs_path(),
        Some(&w.alice),
        &[("Content-Type", "text/plain")],
        Some(b"{}"),
    );
    wrong_type.assert_error(415, "unsupported_media_type");
    assert_eq!(list(&w.server, &w.alice, &w.jobs_path()), (vec![], 0));
    expect_404(
        &w.server
            .post(&format!("/workspaces/{MISSING}/jobs"), &w.alice, &json!({})),
    );
}

#[test]
fn job_patch_merges_only_what_is_sent() {
    let w = World::new();
    let (id, created) = w.create_job(json!({
        "notes": "first",
        "refNumber": "R-1",
        "activity": "load",
        "cargo": {"product": {"name": "Brent"}, "quantity": 5000, "uom": {"name": "Barrels"}},
        "requested": {"quality": true, "timelog": false}
    }));
    let path = w.job_path(&id);
    let answer = expect(
        &w.patch(
            &path,
            &json!({"notes": "second", "cargo": {"quantity": 6000.5}}),
        ),
        200,
    );
    let mut expected = created.clone();
    expected["notes"] = json!("second");
    expected["cargo"]["quantity"] = json!(6000.5);
    assert_eq!(answer, expected);
    assert_eq!(w.read(&path), expected);

    // null clears, at the top level and inside an object.
    let answer = expect(
        &w.patch(
            &path,
            &json!({"refNumber": null, "requested": {"timelog": null}}),
        ),
        200,
    );
    let expected = without(without(expected, "refNumber"), "requested.timelog");
    assert_eq!(answer, expected);
    assert!(answer.get("refNumber").is_none());

    // A new reference in a patch is resolved like on create.
    let answer = expect(
        &w.patch(
            &path,
            &json!({"location": {"xref": "NLRTM", "name": "Rotterdam"}}),
        ),
        200,
    );
    let location = text(&answer["location"]);
    assert_eq!(w.item("locations", &location)["xref"], "NLRTM");

    // A refused patch changes nothing.
    let before = w.read(&path);
    for (body, code, field) in [
        (
            json!({"workspace": MISSING, "notes": "x"}),
            "invalid_field",
            "workspace",
        ),
        (
            json!({"cargo": {"quantity": "lots"}}),
            "invalid_field",
            "cargo.quantity",
        ),
        (json!({"activity": "fly"}), "invalid_field", "activity"),
        (json!({"colour": 1}), "unknown_field", "colour"),
        (json!({"location": MISSING}), "invalid_field", "location"),
    ] {
        expect_error(&w.patch(&path, &body), 400, code, Some(field));
    }
    assert_eq!(w.read(&path), before);
    // Repeating the workspace is fine.
    assert_eq!(
        expect(&w.patch(&path, &json!({"workspace": w.ws})), 200),
        before
    );
    expect_404(&w.patch(&w.job_path(MISSING), &json!({"notes": "x"})));
}

// ---------------------------------------------------------------------------
// Job status
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Deleting jobs
// ---------------------------------------------------------------------------

#[test]
fn a_job_with_results_cannot_be_deleted_until_they_are_gone() {
    let w = World::new();
    for kind in KINDS {
        let (job, body) = w.create_job(json!({"notes": kind.path}));
        let (result, _) = w.create_sample(&job, kind);
        let reply = w.server.delete(&w.job_path(&job), &w.alice);
        assert_eq!(reply.status, 409, "{}: {}", kind.path, reply.text());
        expect_error(&reply, 409, "job_not_empty", None);
        assert_eq!(w.read(&w.job_path(&job)), body);

        expect(
            &w.server
                .delete(&w.result_path(&job, kind, &result), &w.alice),
            200,
        );
        let deleted = expect(&w.server.delete(&w.job_path(&job), &w.alice), 200);
        assert_eq!(deleted, body);
        expect_404(&w.server.get(&w.job_path(&job), &w.alice));
        expect_404(&w.server.delete(&w.job_path(&job), &w.alice));
        expect_404(&w.server.get(&w.results_path(&job, kind), &w.alice));
    }
    expect_404(&w.server.delete(&w.job_path(MISSING), &w.alice));
    assert_eq!(list(&w.server, &w.alice, &w.jobs_path()), (vec![], 0));
    // Now the workspace is empty and can go.
    expect(&w.server.delete(&w.ws_path(), &w.alice), 200);
}

// ---------------------------------------------------------------------------
// The four result kinds
// ---------------------------------------------------------------------------

#[test]
fn each_result_kind_is_created_listed_read_patched_and_deleted() {
    let w = World::new();
    let (elsewhere, _) = create_workspace(
        &w.server,
        &w.alice,
        &workspace_body("elsewhere", Some(&w.client_org), Some(&w.vendor_org)),
    );
    let reply = w.server.post(
        &format!("/workspaces/{elsewhere}/jobs"),
        &w.alice,
        &json!({}),
    );
    let (foreign_job, _) = envelope(&expect(&reply, 201));
    for kind in KINDS {
        let (job, _) = w.create_job(json!({}));
        let (sibling, _) = w.create_job(json!({}));
        let (id, body) = w.create_sample(&job, kind);
        let path = w.result_path(&job, kind, &id);

        let reply = w.server.get(&w.results_path(&job, kind), &w.alice);
        assert_eq!(
            expect(&reply, 200),
            json!([{"id": id, "body": body}]),
            "{}",
            kind.path
        );
        assert_eq!(total(&reply), 1);
        assert_eq!(
            unshape(kind.get_shape, &id, &w.read(&path)),
            body,
            "{}",
            kind.path
        );

        let (patch, field, value) = (kind.patch)();
        let answer = expect(&w.patch(&path, &patch), 200);
        let patched = unshape(kind.patch_shape, &id, &answer);
        assert_eq!(patched[field], value, "{}: {patched}", kind.path);
        assert_eq!(with(body.clone(), field, value), patched, "{}", kind.path);
        assert_eq!(unshape(kind.get_shape, &id, &w.read(&path)), patched);

        // Unknown ids, a sibling job's path, another workspace's job.
        let misses = [
            w.result_path(&job, kind, MISSING),
            w.result_path(&sibling, kind, &id),
            w.result_path(MISSING, kind, &id),
            format!("/workspaces/{elsewhere}/jobs/{job}/{}/{id}", kind.path),
            format!(
                "/workspaces/{elsewhere}/jobs/{foreign_job}/{}/{id}",
                kind.path
            ),
        ];
        for miss in &misses {
            expect_404(&w.server.get(miss, &w.alice));
            expect_404(&w.patch(miss, &patch));
            expect_404(&w.server.delete(miss, &w.alice));
        }
        expect_404(&w.server.get(&w.results_path(MISSING, kind), &w.alice));
        expect_404(
            &w.server
                .post(&w.results_path(MISSING, kind), &w.alice, &(kind.sample)()),
        );
        assert_eq!(
            list(&w.server, &w.alice, &w.results_path(&sibling, kind)),
            (vec![], 0)
        );
        // A result's id is no job id, nor a result of another kind.
        expect_404(&w.server.get(&w.job_path(&id), &w.alice));
        for other in KINDS.iter().filter(|k| k.path != kind.path) {
            expect_404(&w.server.get(&w.result_path(&job, other, &id), &w.alice));
        }

        let deleted = expect(&w.server.delete(&path, &w.alice), 200);
        assert_eq!(deleted, patched, "{}", kind.path);
        expect_404(&w.server.get(&path, &w.alice));
        expect_404(&w.server.delete(&path, &w.alice));
        assert_eq!(
            list(&w.server, &w.alice, &w.results_path(&job, kind)),
            (vec![], 0)
        );
    }
}

#[test]
fn result_bodies_may_repeat_but_not_contradict_their_workspace_and_job() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let (other, _) = w.create_job(json!({}));
    for kind in KINDS {
        let sample = (kind.sample)();
        let same = with(
            with(sample.clone(), "workspace", json!(w.ws)),
            "parent",
            json!(job),
        );
        let (id, _) = w.create_result(&job, kind, same);
        expect(
            &w.server.delete(&w.result_path(&job, kind, &id), &w.alice),
            200,
        );
        for (field, value) in [("workspace", MISSING), ("parent", other.as_str())] {
            let body = with(sample.clone(), field, json!(value));
            let reply = w.server.post(&w.results_path(&job, kind), &w.alice, &body);
            expect_error(&reply, 400, "invalid_field", Some(field));
        }
        let reply = w.server.post(
            &w.results_path(&job, kind),
            &w.alice,
            &with(sample, "colour", json!(1)),
        );
        expect_error(&reply, 400, "unknown_field", Some("colour"));
        assert_eq!(list(&w.server, &w.alice, &w.results_path(&job, kind)).1, 0);
    }
}

#[test]
fn quantity_results_one_per_direction_and_the_vcftable_alias() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let path = w.results_path(&job, &QUANTITY);

    let reply = w.server.post(&path, &w.alice, &json!({"waterPerc": 1.5}));
    expect_error(&reply, 400, "missing_field", Some("direction"));
    let reply = w.server.post(&path, &w.alice, &json!({"direction": null}));
    expect_error(&reply, 400, "missing_field", Some("direction"));
    let reply = w
        .server
        .post(&path, &w.alice, &json!({"direction": "sideways"}));
    expect_error(&reply, 400, "invalid_field", Some("direction"));

    let (source, source_body) = w.create_result(&job, &QUANTITY, json!({"direction": "source"}));
    let reply = w
        .server
        .post(&path, &w.alice, &json!({"direction": "source", "api": 30}));
    expect_error(&reply, 409, "duplicate_direction", None);

    let (destination, dest_body) = w.create_result(
        &job,
        &QUANTITY,
        json!({"direction": "destination", "vcftable": {"xref": "ASTM-54B", "name": "Table 54B"}}),
    );
    assert!(dest_body.get("vcftable").is_none(), "{dest_body}");
    let table = text(&dest_body["vcfTable"]);
    assert_eq!(
        w.items("vcfTable"),
        vec![(
            table.clone(),
            json!({"name": "Table 54B", "xref": "ASTM-54B", "ownerParty": w.client_org})
        )]
    );
    assert_eq!(
        unshape(
            Shape::Body,
            &destination,
            &w.read(&w.result_path(&job, &QUANTITY, &destination))
        ),
        dest_body
    );
    assert_eq!(list(&w.server, &w.alice, &path).1, 2);

    // Both names of one field at once.
    let (other_job, _) = w.create_job(json!({}));
    let reply = w.server.post(
        &w.results_path(&other_job, &QUANTITY),
        &w.alice,
        &json!({"direction": "source", "vcftable": table, "vcfTable": table}),
    );
    expect_error(&reply, 400, "invalid_field", Some("vcfTable"));
    // Another job has its own pair of directions.
    w.create_result(
        &other_job,
        &QUANTITY,
        json!({"direction": "source", "vcfTable": table}),
    );

    // A patch may not take a direction that is taken; the alias works in a patch.
    let source_path = w.result_path(&job, &QUANTITY, &source);
    let reply = w.patch(&source_path, &json!({"direction": "destination"}));
    expect_error(&reply, 409, "duplicate_direction", None);
    assert_eq!(w.read(&source_path), source_body);
    let answer = expect(
        &w.patch(&source_path, &json!({"vcftable": {"xref": "ASTM-54B"}})),
        200,
    );
    assert_eq!(
        answer,
        json!({"id": source, "body": with(source_body, "vcfTable", json!(table))})
    );
    assert_eq!(w.items("vcfTable").len(), 1);

    // Once the destination is gone, the source may become one.
    expect(
        &w.server
            .delete(&w.result_path(&job, &QUANTITY, &destination), &w.alice),
        200,
    );
    let answer = expect(
        &w.patch(&source_path, &json!({"direction": "destination"})),
        200,
    );
    assert_eq!(answer["body"]["direction"], "destination");
}

#[test]
fn quality_results_require_the_documented_fields() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let path = w.results_path(&job, &QUALITY);
    for field in [
        "status",
        "setNumber",
        "sample.location",
        "test",
        "method",
        "uom",
        "result",
    ] {
        for body in [
            without(quality_sample(), field),
            with(quality_sample(), field, Value::Null),
        ] {
            let reply = w.server.post(&path, &w.alice, &body);
            assert_eq!(reply.status, 400, "without {field}: {}", reply.text());
            expect_error(&reply, 400, "missing_field", Some(field));
        }
    }
    let reply = w
        .server
        .post(&path, &w.alice, &without(quality_sample(), "sample"));
    expect_error(&reply, 400, "missing_field", Some("sample.location"));

    for (field, value) in [
        ("status", json!("final")),
        ("setNumber", json!(1.5)),
        ("setNumber", json!("1")),
        ("testNumber", json!(true)),
        ("resultOperator", json!("ne")),
        ("isOffSpec", json!("no")),
        ("sample.location", json!(7)),
        ("test", json!(7)),
        ("result", json!(["a"])),
        ("date", json!("yesterday")),
    ] {
        let reply = w.server.post(
            &path,
            &w.alice,
            &with(quality_sample(), field, value.clone()),
        );
        assert_eq!(reply.status, 400, "{field} = {value}: {}", reply.text());
        expect_error(&reply, 400, "invalid_field", Some(field));
    }
    assert_eq!(list(&w.server, &w.alice, &path).1, 0);

    // A patch may not remove a required field either.
    let (id, body) = w.create_sample(&job, &QUALITY);
    let item = w.result_path(&job, &QUALITY, &id);
    let reply = w.patch(&item, &json!({"result": null}));
    expect_error(&reply, 400, "missing_field", Some("result"));
    let reply = w.patch(&item, &json!({"sample": {"location": null}}));
    expect_error(&reply, 400, "missing_field", Some("sample.location"));
    assert_eq!(unshape(Shape::EnvelopeInArray, &id, &w.read(&item)), body);
}

#[test]
fn quality_results_take_aliases_expand_references_and_stringify_results() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let mut body = quality_sample();
    body["testDate"] = json!("2026-11-21T12:00:00+01:00");
    body["comment"] = json!("retest requested");
    body["result"] = json!(0.85);
    body["uom"] = json!({"name": "kg/m3"});
    let (id, created) = w.create_result(&job, &QUALITY, body);
    assert_eq!(created["date"], "2026-11-21T11:00:00.000Z");
    assert_eq!(created["notes"], "retest requested");
    assert!(
        created.get("testDate").is_none() && created.get("comment").is_none(),
        "{created}"
    );
    assert_eq!(created["result"], "0.85");

    // References read back as {id, xref, name}, pointing at the catalogs' records.
    for (field, catalog, xref, name) in [
        ("test", "tests", json!("DENS"), "Density"),
        ("method", "testMethods", json!("D1298"), "ASTM D1298"),
        ("uom", "uom", Value::Null, "kg/m3"),
    ] {
        let reference = &created[field];
        assert_eq!(keys(reference), ["id", "xref", "name"], "{reference}");
        assert_eq!(reference["xref"], xref);
        assert_eq!(reference["name"], name);
        let record = text(&reference["id"]);
        assert_eq!(w.item(catalog, &record)["name"], name);
    }
    let method = text(&created["method"]["id"]);
    assert_eq!(w.item("methods", &method)["xref"], "D1298");

    // GET answers [{id, body}]; the list shows the same expanded body.
    let item = w.result_path(&job, &QUALITY, &id);
    assert_eq!(w.read(&item), json!([{"id": id, "body": created}]));
    assert_eq!(
        list(&w.server, &w.alice, &w.results_path(&job, &QUALITY)).0,
        vec![json!({"id": id, "body": created})]
    );

    // PATCH answers the bare body, aliases included; a boolean result is stringified.
    let answer = expect(
        &w.patch(
            &item,
            &json!({"comment": "fine", "result": true, "testDate": null}),
        ),
        200,
    );
    let mut expected = without(created.clone(), "date");
    expected["notes"] = json!("fine");
    expected["result"] = json!("true");
    assert_eq!(answer, expected);
    // The read shape can be sent back as it is.
    assert_eq!(expect(&w.patch(&item, &answer), 200), answer);
    // Whole numbers too; text stays text.
    for (sent, stored) in [
        (json!(5), "5"),
        (json!("<0.1"), "<0.1"),
        (json!(-2.5), "-2.5"),
    ] {
        let answer = expect(&w.patch(&item, &json!({"result": sent})), 200);
        assert_eq!(answer["result"], stored);
    }
    let reply = w.patch(&item, &json!({"notes": "a", "comment": "b"}));
    expect_error(&reply, 400, "invalid_field", Some("notes"));
}

#[test]
fn time_logs_require_type_category_start_and_end_not_before_start() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let path = w.results_path(&job, &TIMELOG);
    for field in ["type", "category", "start"] {
        let reply = w
            .server
            .post(&path, &w.alice, &without(timelog_sample(), field));
        expect_error(&reply, 400, "missing_field", Some(field));
    }
    let reply = w.server.post(
        &path,
        &w.alice,
        &with(timelog_sample(), "category", json!("break")),
    );
    expect_error(&reply, 400, "invalid_field", Some("category"));
    let reply = w.server.post(
        &path,
        &w.alice,
        &with(timelog_sample(), "end", json!("2026-11-21T05:59:59.999Z")),
    );
    expect_error(&reply, 400, "invalid_field", Some("end"));
    // Compared as instants: 09:00+02:00 is 07:00Z, before 08:00Z.
    let early = json!({"type": {"xref": "NOR"}, "category": "delay", "start": "2026-11-21T08:00:00Z", "end": "2026-11-21T09:00:00+02:00"});
    expect_error(
        &w.server.post(&path, &w.alice, &early),
        400,
        "invalid_field",
        Some("end"),
    );
    assert_eq!(list(&w.server, &w.alice, &path).1, 0);

    let (_, same) = w.create_result(
        &job,
        &TIMELOG,
        with(timelog_sample(), "end", json!("2026-11-21T06:00:00Z")),
    );
    assert_eq!(same["end"], "2026-11-21T06:00:00.000Z");
    // 10:00+02:00 is 08:00Z, after 07:30Z.
    let (id, body) = w.create_result(
        &job,
        &TIMELOG,
        json!({"type": {"xref": "NOR"}, "category": "delay", "start": "2026-11-21T07:30:00Z", "end": "2026-11-21T10:00:00+02:00"}),
    );
    assert_eq!(body["end"], "2026-11-21T08:00:00.000Z");
    assert_eq!(body["type"], same["type"]);
    let event = text(&body["type"]);
    assert_eq!(w.item("eventTypes", &event)["name"], "Notice of readiness");
    assert_eq!(w.item("timelogEvents", &event)["xref"], "NOR");

    let item = w.result_path(&job, &TIMELOG, &id);
    let reply = w.patch(&item, &json!({"start": "2026-11-21T08:00:00.001Z"}));
    expect_error(&reply, 400, "invalid_field", Some("end"));
    assert_eq!(w.read(&item), body);
    let answer = expect(
        &w.patch(
            &item,
            &json!({"end": null, "start": "2026-11-22T00:00:00Z"}),
        ),
        200,
    );
    assert_eq!(
        answer,
        with(
            without(body, "end"),
            "start",
            json!("2026-11-22T00:00:00.000Z")
        )
    );
}

// ---------------------------------------------------------------------------
// List filters on documents
// ---------------------------------------------------------------------------

#[test]
fn job_lists_filter_on_body_fields_sort_and_page() {
    let w = World::new();
    let (j1, j1_body) = w.create_job(json!({
        "status": "pending", "activity": "load", "eta": "2026-11-21T09:00:00Z",
        "location": {"xref": "NLRTM", "name": "Rotterdam"},
        "cargo": {"quantity": 5000}, "requested": {"quality": true}
    }));
    let (j2, _) = w.create_job(json!({
        "status": "active", "activity": "load", "eta": "2026-11-23T09:00:00Z",
        "cargo": {"quantity": 5000}, "requested": {"quality": false}
    }));
    let (j3, _) = w.create_job(json!({
        "status": "active", "activity": "discharge", "eta": "2026-11-22T09:00:00Z",
        "cargo": {"quantity": 7500.5}
    }));
    let (j4, _) = w.create_job(json!({
        "status": "cancelled", "activity": "sts", "eta": "2026-11-20T09:00:00Z",
        "cargo": {"quantity": 100}, "requested": {"quality": true}
    }));
    let location = text(&j1_body["location"]);
    let query = |params: &[(&str, &str)]| {
        list_ids(&w.server, &w.alice, &with_query(&w.jobs_path(), params))
    };
    let set = |params: &[(&str, &str)]| {
        let (ids, count) = query(params);
        (sorted(ids), count)
    };
    let ids = |jobs: &[&String]| sorted(jobs.iter().map(|j| (*j).clone()).collect());

    assert_eq!(set(&[]), (ids(&[&j1, &j2, &j3, &j4]), 4));
    assert_eq!(set(&[("status", "active")]), (ids(&[&j2, &j3]), 2));
    assert_eq!(set(&[("activity", "load")]), (ids(&[&j1, &j2]), 2));
    assert_eq!(set(&[("cargo.quantity", "5000")]), (ids(&[&j1, &j2]), 2));
    assert_eq!(set(&[("cargo.quantity", "7500.5")]), (ids(&[&j3]), 1));
    assert_eq!(set(&[("requested.quality", "true")]), (ids(&[&j1, &j4]), 2));
    assert_eq!(set(&[("requested.quality", "false")]), (ids(&[&j2]), 1));
    assert_eq!(
        set(&[("status", "active"), ("activity", "load")]),
        (ids(&[&j2]), 1)
    );
    assert_eq!(
        set(&[("status", "active"), ("cargo.quantity", "5000")]),
        (ids(&[&j2]), 1)
    );
    assert_eq!(set(&[("status", "complete")]), (vec![], 0));
    assert_eq!(set(&[("location", location.as_str())]), (ids(&[&j1]), 1));
    assert_eq!(
        set(&[("eta", "2026-11-21T09:00:00.000Z")]),
        (ids(&[&j1]), 1)
    );
    assert_eq!(set(&[("workspace", w.ws.as_str())]).1, 4);

    assert_eq!(
        query(&[("sort", "eta:desc")]),
        (vec![j2.clone(), j3.clone(), j1.clone(), j4.clone()], 4)
    );
    assert_eq!(
        query(&[("sort", "eta:asc")]),
        (vec![j4.clone(), j1.clone(), j3.clone(), j2.clone()], 4)
    );
    assert_eq!(
        query(&[("sort", "cargo.quantity:desc,eta:asc")]),
        (vec![j3.clone(), j1.clone(), j2.clone(), j4.clone()], 4)
    );
    assert_eq!(
        query(&[("sort", "eta:desc"), ("limit", "2"), ("offset", "1")]),
        (vec![j3.clone(), j1.clone()], 4)
    );
    assert_eq!(
        query(&[("status", "active"), ("sort", "eta:asc"), ("limit", "1")]),
        (vec![j3.clone()], 2)
    );
    assert_eq!(query(&[("offset", "4")]), (vec![], 4));

    for (params, field) in [
        (vec![("colour", "red")], "colour"),
        (vec![("cargo", "x")], "cargo"),
        (vec![("cargo.colour", "x")], "cargo.colour"),
        (vec![("transports", "x")], "transports"),
        (vec![("cargo.quantity", "lots")], "cargo.quantity"),
        (vec![("requested.quality", "yes")], "requested.quality"),
        (vec![("sort", "colour:desc")], "sort"),
        (vec![("sort", "eta:up")], "sort"),
        (vec![("limit", "1001")], "limit"),
        (vec![("status", "active"), ("status", "pending")], "status"),
    ] {
        let reply = w.server.get(&with_query(&w.jobs_path(), &params), &w.alice);
        expect_error(&reply, 400, "invalid_query", Some(field));
    }
}

#[test]
fn result_lists_filter_on_their_own_fields() {
    let w = World::new();
    let (job, _) = w.create_job(json!({}));
    let (q1, _) = w.create_result(&job, &QUALITY, quality_sample());
    let (q2, _) = w.create_result(
        &job,
        &QUALITY,
        with(
            with(quality_sample(), "status", json!("confirmed")),
            "sample.location",
            json!("TANK-2"),
        ),
    );
    let (q3, _) = w.create_result(
        &job,
        &QUALITY,
        with(
            with(quality_sample(), "setNumber", json!(2)),
            "isOffSpec",
            json!(true),
        ),
    );
    let quality = |params: &[(&str, &str)]| {
        list_ids(
            &w.server,
            &w.alice,
            &with_query(&w.results_path(&job, &QUALITY), params),
        )
    };
    assert_eq!(quality(&[("status", "confirmed")]), (vec![q2.clone()], 1));
    assert_eq!(
        sorted(quality(&[("status", "preliminary")]).0),
        sorted(vec![q1.clone(), q3.clone()])
    );
    assert_eq!(
        quality(&[("sample.location", "TANK-2")]),
        (vec![q2.clone()], 1)
    );
    assert_eq!(quality(&[("setNumber", "2")]), (vec![q3.clone()], 1));
    assert_eq!(quality(&[("isOffSpec", "true")]), (vec![q3.clone()], 1));
    assert_eq!(
        quality(&[("status", "preliminary"), ("setNumber", "1")]),
        (vec![q1.clone()], 1)
    );
    assert_eq!(
        quality(&[("sort", "setNumber:desc"), ("limit", "1")]),
        (vec![q3.clone()], 3)
    );
    // Filters take canonical names, not aliases.
    let reply = w.server.get(
        &with_query(&w.results_path(&job, &QUALITY), &[("comment", "x")]),
        &w.alice,
    );
    expect_error(&reply, 400, "invalid_query", Some("comment"));

    let (t1, _) = w.create_sample(&job, &TIMELOG);
    let (t2, _) = w.create_result(
        &job,
        &TIMELOG,
        with(timelog_sample(), "category", json!("delay")),
    );
    let timelog = |params: &[(&str, &str)]| {
        list_ids(
            &w.server,
            &w.alice,
            &with_query(&w.results_path(&job, &TIMELOG), params),
        )
    };
    assert_eq!(timelog(&[("category", "delay")]), (vec![t2.clone()], 1));
    assert_eq!(timelog(&[("category", "event")]), (vec![t1.clone()], 1));

    let (s, _) = w.create_sample(&job, &QUANTITY);
    let (d, _) = w.create_result(&job, &QUANTITY, json!({"direction": "destination"}));
    let quantity = |params: &[(&str, &str)]| {
        list_ids(
            &w.server,
            &w.alice,
            &with_query(&w.results_path(&job, &QUANTITY), params),
        )
    };
    assert_eq!(
        quantity(&[("direction", "destination")]),
        (vec![d.clone()], 1)
    );
    assert_eq!(quantity(&[("waterPerc", "0.1")]), (vec![s.clone()], 1));
    assert_eq!(quantity(&[("sort", "direction:asc")]), (vec![d, s], 2));
}

// ---------------------------------------------------------------------------
// Catalogs
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Synonyms
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Restart
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Isolation between workspaces
// ---------------------------------------------------------------------------

#[test]
fn records_of_one_workspace_are_not_reachable_from_another() {
    let w = World::new();
    let (job, body) = w.create_job(json!({"location": {"xref": "NLRTM", "name": "Rotterdam"}}));
    let location = text(&body["location"]);
    let (other, _) = create_workspace(
        &w.server,
        &w.alice,
        &workspace_body("other", Some(&w.client_org), Some(&w.vendor_org)),
    );
    let other_jobs = format!("/workspaces/{other}/jobs");
    let other_item = format!("/workspaces/{other}/catalogs/locations/{location}");

    // A job, a catalog record and a synonym link only through their own workspace.
    expect_404(&w.server.get(&format!("{other_jobs}/{job}"), &w.alice));
    expect_404(&w.server.patch(
        &format!("{other_jobs}/{job}"),
        &w.alice,
        &json!({"notes": "x"}),
    ));
    expect_404(&w.server.delete(&format!("{other_jobs}/{job}"), &w.alice));
    expect_404(&w.server.get(&other_item, &w.alice));
    expect_404(&w.server.patch(&other_item, &w.alice, &json!({"name": "x"})));
    expect_404(&w.server.delete(&other_item, &w.alice));
    let (local, _) = envelope(&expect(
        &w.server.post(
            &format!("/workspaces/{other}/catalogs/locations"),
            &w.alice,
            &json!({"name": "Rotterdam", "xref": "NLRTM"}),
        ),
        201,
    ));
    expect_404(&w.server.post(
        &format!("/workspaces/{other}/catalogs/locations/{local}/synonyms/{location}"),
        &w.alice,
        &json!({}),
    ));

    // A record id of another workspace is no reference here; an xref resolves locally.
    let reply = w
        .server
        .post(&other_jobs, &w.alice, &json!({"location": location}));
    expect_error(&reply, 400, "invalid_field", Some("location"));
    let (_, there) = envelope(&expect(
        &w.server.post(
            &other_jobs,
            &w.alice,
            &json!({"location": {"xref": "NLRTM"}}),
        ),
        201,
    ));
    assert_eq!(there["location"], local.as_str());
    assert_eq!(w.read(&w.job_path(&job)), body);
}

// ---------------------------------------------------------------------------
// Known bugs: kept here, ignored so that the suite stays green
// ---------------------------------------------------------------------------

/// Sends one job body with `eta` set and expects 400 naming `eta`.
#[track_caller]
fn assert_eta_refused(w: &World, eta: &str) {
    let reply = w
        .server
        .post(&w.jobs_path(), &w.alice, &json!({"eta": eta}));
    assert_eq!(reply.status, 400, "eta {eta}: {}", reply.text());
    expect_error(&reply, 400, "invalid_field", Some("eta"));
    expect(&w.server.get("/healthz", &w.alice), 200);
}

#[test]
fn regression_a_datetime_past_year_9999_in_utc_is_refused_not_a_500() {
    let w = World::new();
    assert_eta_refused(&w, "9999-12-31T23:59:59-01:00");
}

#[test]
fn regression_a_datetime_before_year_0_in_utc_is_refused() {
    let w = World::new();
    assert_eta_refused(&w, "0000-01-01T00:30:00+01:00");
}

#[test]
fn regression_clearing_a_job_status_leaves_it_pending() {
    let w = World::new();
    let (id, _) = w.create_job(json!({}));
    let answer = expect(&w.patch(&w.job_path(&id), &json!({"status": null})), 200);
    assert_eq!(answer["status"], "pending", "{answer}");
    assert_eq!(w.job_status(&id), "pending");
    let (ids, count) = list_ids(
        &w.server,
        &w.alice,
        &with_query(&w.jobs_path(), &[("status", "pending")]),
    );
    assert_eq!((ids, count), (vec![id], 1));
}

#[test]
fn regression_a_job_that_is_a_parent_is_not_deleted_from_under_its_child() {
    let w = World::new();
    let (parent, parent_body) = w.create_job(json!({}));
    let (child, _) = w.create_job(json!({"parent": parent}));
    // The contract: deleting something still referenced answers 409.
    let reply = w.server.delete(&w.job_path(&parent), &w.alice);
    assert_eq!(reply.status, 409, "{}", reply.text());
    assert_eq!(w.read(&w.job_path(&parent)), parent_body);
    let answer = expect(
        &w.patch(&w.job_path(&child), &json!({"notes": "still editable"})),
        200,
    );
    assert_eq!(answer["parent"], parent.as_str());
}

#[test]
fn regression_an_organization_a_job_names_is_not_deleted_from_under_it() {
    let w = World::new();
    let broker = create_org(&w.server, &w.alice, "Alice Brokers");
    let (job, _) = w.create_job(json!({"client": broker}));
    let reply = w
        .server
        .delete(&format!("/v2/organizations/{broker}"), &w.alice);
    assert_eq!(reply.status, 409, "{}", reply.text());
    expect(
        &w.server
            .get(&format!("/v2/organizations/{broker}"), &w.alice),
        200,
    );
    let answer = expect(
        &w.patch(&w.job_path(&job), &json!({"notes": "still editable"})),
        200,
    );
    assert_eq!(answer["client"], broker.as_str());
}

#[test]
fn regression_a_catalog_item_cannot_be_patched_to_a_blank_name_without_xref() {
    let w = World::new();
    let id = w.create_item("products", "Brent", "BRENT");
    let path = w.item_path("products", &id);
    for name in ["", "   "] {
        let reply = w.patch(&path, &json!({"name": name, "xref": null}));
        assert_eq!(reply.status, 400, "name {name:?}: {}", reply.text());
        assert_eq!(reply.error_field().as_deref(), Some("name"));
    }
    assert_eq!(
        w.read(&path),
        json!({"name": "Brent", "xref": "BRENT", "ownerParty": w.client_org})
    );
}
