//! The workspace service on the older paths (`/workspaces/...`), over real HTTP
//! against the real binary: workspaces, tenancy, jobs and their status rules,
//! the four result kinds of a job, list filters, catalogs with implicit
//! creation, synonyms, and survival across a restart.
//!
//! Most tests start from a [`World`]: two tenants (a client, alice, and a
//! vendor, bob), one organization each, and one workspace between them
//! (alice's invitation, which bob accepted).

mod bulk;
mod catalogs;
mod consent;
mod crud;
mod job_status;
mod jobs;
mod listing;
mod paging;
mod regressions;
mod restart;
mod results;
mod synonyms;
mod tenancy;

use serde_json::{Value, json};

use crate::common::{Reply, Server, urlencode};

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

/// Deletes the job at `path` (`/workspaces/{ws}/jobs/{job}`) after its
/// quality results, which would keep it.
#[track_caller]
fn delete_job_and_results(server: &Server, key: &str, path: &str) {
    let quality = list_ids(server, key, &format!("{path}/quality")).0;
    for id in quality {
        expect(&server.delete(&format!("{path}/quality/{id}"), key), 200);
    }
    expect(&server.delete(path, key), 200);
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

/// Accepts the invitation to workspace `ws` as `key` (older path); it must
/// answer 200 with the workspace active.
#[track_caller]
fn accept(server: &Server, key: &str, ws: &str) -> Value {
    let reply = server.request(
        "POST",
        &format!("/workspaces/{ws}/accept"),
        Some(key),
        &[],
        None,
    );
    let (id, body) = envelope(&expect(&reply, 200));
    assert_eq!(id, ws);
    assert_eq!(body["state"], "active", "{body}");
    body
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
        // Naming bob's organization invited bob's tenant: it accepts.
        accept(&server, &bob, &ws);
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

    /// Another workspace between alice (who invites) and bob (who accepts).
    #[track_caller]
    fn shared(&self, description: &str) -> String {
        let (id, _) = create_workspace(
            &self.server,
            &self.alice,
            &workspace_body(description, Some(&self.client_org), Some(&self.vendor_org)),
        );
        accept(&self.server, &self.bob, &id);
        id
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
// A furnished workspace
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
