//! The access matrix, for every route in the router table: no key -> 401
//! (public routes excepted), a foreign tenant's key -> 404 with nothing changed
//! (the shared location catalog and the organization registry's reads
//! excepted), the owning tenant -> success. Accepting and declining aim at an
//! invitation a third tenant sent the owner: the stranger can neither answer
//! it nor tell it exists.
//!
//! Routes are read from `quayside::routes::table()`, so a new route is covered
//! (or fails this test until it is given a request below) without anyone
//! remembering to add it.

use crate::common::{Reply, Server, id, multipart};
use quayside::auth::principal::Access;
use quayside::http::Method;
use serde_json::{Value, json};

const BOUNDARY: &str = "isolationBoundary";
/// Where the webhooks of this test point: a closed port on this machine (the
/// server runs with `--webhook-allow-private`).
const REFUSING_URL: &str = "http://127.0.0.1:1/hook";

/// Everything a route may name, made fresh for each route.
struct Fixture {
    org: String,
    spare_org: String,
    ws: String,
    spare_ws: String,
    /// A third tenant's workspace naming `org`: a pending invitation to the
    /// owner's tenant, for accept and decline.
    invitation: String,
    job: String,
    spare_job: String,
    lpi: String,
    quantity: String,
    quality: String,
    timelog: String,
    item_a: String,
    item_b: String,
    item_spare: String,
    file: String,
    /// A webhook with one logged delivery attempt (see [`Fixture::add_webhook`]).
    webhook: String,
    delivery: String,
}

fn multipart_body() -> Vec<u8> {
    multipart(
        BOUNDARY,
        &[("file", Some("a.txt"), Some("text/plain"), b"hello")],
    )
}

impl Fixture {
    fn new(server: &Server, key: &str, inviter: &str, n: usize) -> Fixture {
        let org = id(&server.post(
            "/v2/organizations",
            key,
            &json!({"body": {"name": format!("Org {n}")}}),
        ));
        let spare_org = id(&server.post(
            "/v2/organizations",
            key,
            &json!({"body": {"name": format!("Spare {n}")}}),
        ));
        let parties = json!({"parties": {"client": {"id": org}}});
        let ws = id(&server.post("/workspaces", key, &parties));
        let spare_ws = id(&server.post("/workspaces", key, &parties));
        let inviting_org = id(&server.post(
            "/v2/organizations",
            inviter,
            &json!({"body": {"name": format!("Inviter {n}")}}),
        ));
        let invitation = id(&server.post(
            "/workspaces",
            inviter,
            &json!({"parties": {"client": {"id": inviting_org}, "vendor": {"id": org}}}),
        ));
        let jobs = format!("/workspaces/{ws}/jobs");
        let job = id(&server.post(&jobs, key, &json!({"notes": "main"})));
        let spare_job = id(&server.post(&jobs, key, &json!({"notes": "spare"})));
        let under =
            |kind: &str, body: Value| id(&server.post(&format!("{jobs}/{job}/{kind}"), key, &body));
        let lpi = under("load-port-information", json!({}));
        let quantity = under("quantity", json!({"direction": "source"}));
        let quality = under(
            "quality",
            json!({"status": "confirmed", "setNumber": 1, "sample": {"location": "T1"},
                   "test": {"name": "Density"}, "method": {"name": "D4052"}, "uom": {"name": "kg/m3"},
                   "result": "845"}),
        );
        let timelog = under(
            "timelog",
            json!({"type": {"name": "Arrived"}, "category": "event", "start": "2026-11-21T08:00:00Z"}),
        );
        let items = format!("/workspaces/{ws}/catalogs/products");
        let item_a = id(&server.post(&items, key, &json!({"name": "Gasoil"})));
        let item_b = id(&server.post(&items, key, &json!({"name": "Diesel"})));
        let item_spare = id(&server.post(&items, key, &json!({"name": "Spare"})));
        let link = server.request(
            "POST",
            &format!("{items}/{item_a}/synonyms/{item_b}"),
            Some(key),
            &[],
            None,
        );
        assert_eq!(link.status, 201);
        let file = id(&server.post_multipart(
            &format!("{jobs}/{job}/files"),
            Some(key),
            BOUNDARY,
            &multipart_body(),
        ));
        for catalog in ["ports", "inland_facilities"] {
            let put = server.put(
                &format!("/api/rest/1.0/{catalog}/NLRTM"),
                key,
                &json!({"name": "Rotterdam"}),
            );
            assert!(put.status < 300, "{}", put.text());
        }
        Fixture {
            org,
            spare_org,
            ws,
            spare_ws,
            invitation,
            job,
            spare_job,
            lpi,
            quantity,
            quality,
            timelog,
            item_a,
            item_b,
            item_spare,
            file,
            webhook: String::new(),
            delivery: String::new(),
        }
    }

    /// A webhook of the owner's to a closed port, and its first (failed)
    /// delivery attempt: for the webhook routes only, as it waits for the
    /// worker.
    fn add_webhook(&mut self, server: &Server, key: &str, n: usize) {
        self.webhook = id(&server.post("/v2/webhooks", key, &json!({"url": REFUSING_URL})));
        id(&server.post(
            "/v2/organizations",
            key,
            &json!({"body": {"name": format!("Hooked {n}")}}),
        ));
        let deliveries = format!("/v2/webhooks/{}/deliveries", self.webhook);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        self.delivery = loop {
            let log = server.get(&deliveries, key).json();
            if let Some(first) = log[0]["id"].as_str() {
                break first.to_string();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no delivery attempt logged"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
    }

    /// The value of a path parameter. DELETE aims at the spare record where
    /// deleting the main one would be refused (it is not empty, or in use).
    fn param(&self, pattern: &str, name: &str, deleting: bool, last: bool) -> String {
        let spare = deleting && last;
        let answering = pattern.ends_with("/accept") || pattern.ends_with("/decline");
        match name {
            "workspace_id" if answering => self.invitation.clone(),
            "workspace_id" if spare => self.spare_ws.clone(),
            "workspace_id" => self.ws.clone(),
            "job_id" | "document_id" if spare => self.spare_job.clone(),
            "job_id" | "document_id" => self.job.clone(),
            "organization_id" if spare => self.spare_org.clone(),
            "organization_id" => self.org.clone(),
            "id" if pattern.contains("load-port-information") => self.lpi.clone(),
            "id" if spare => self.item_spare.clone(),
            "id" => self.item_a.clone(),
            "quantity_id" => self.quantity.clone(),
            "quality_id" => self.quality.clone(),
            "event_id" => self.timelog.clone(),
            "file_id" | "attachment_id" => self.file.clone(),
            "catalog" | "xtype" => "products".into(),
            "recordId" | "xref_id" => self.item_a.clone(),
            "synonymRecordId" | "linked_item_id" => self.item_b.clone(),
            "clientCode" => "NLRTM".into(),
            "username" => "owner".into(),
            "file" => "app.js".into(),
            "webhook_id" => self.webhook.clone(),
            "delivery_id" => self.delivery.clone(),
            other => panic!("no fixture value for path parameter {{{other}}} in {pattern}"),
        }
    }

    fn path(&self, pattern: &str, method: Method) -> String {
        let segments: Vec<&str> = pattern.split('/').collect();
        let last_param = segments.iter().rposition(|s| s.starts_with('{'));
        segments
            .iter()
            .enumerate()
            .map(
                |(i, s)| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) => self.param(
                        pattern,
                        name,
                        method == Method::Delete,
                        Some(i) == last_param,
                    ),
                    None => s.to_string(),
                },
            )
            .collect::<Vec<_>>()
            .join("/")
    }

    /// A body the owning tenant's request succeeds with.
    fn body(&self, method: Method, pattern: &str, n: usize) -> Option<Value> {
        let v2 = pattern.starts_with("/v2/");
        let wrap = |body: Value| if v2 { json!({ "body": body }) } else { body };
        let value = match (method, pattern.rsplit('/').next().unwrap_or("")) {
            (Method::Put, "{clientCode}") => json!({"name": "Rotterdam", "countryCode": "NL"}),
            (Method::Post, "workspaces") => wrap(json!({"parties": {"client": {"id": self.org}}})),
            (Method::Patch, "{workspace_id}") => wrap(json!({"description": "changed"})),
            (Method::Post, "organizations") => wrap(json!({"name": format!("New org {n}")})),
            (Method::Patch, "{organization_id}") => wrap(json!({"name": format!("Renamed {n}")})),
            (Method::Post, "webhooks") => wrap(json!({"url": REFUSING_URL})),
            (Method::Patch, "{webhook_id}") => wrap(json!({"description": "changed"})),
            (Method::Post, "jobs") => json!({}),
            (Method::Post, "load-port-information") => json!({}),
            (Method::Post, "quantity") => json!({"direction": "destination"}),
            (Method::Post, "quality") => json!({"status": "preliminary", "setNumber": 2,
                "sample": {"location": "T2"}, "test": {"name": "Density"}, "method": {"name": "m"},
                "uom": {"name": "u"}, "result": "1"}),
            (Method::Post, "timelog") => json!({"type": {"name": "Left"}, "category": "event",
                "start": "2026-11-21T09:00:00Z"}),
            (Method::Post, "quality-results") => wrap(json!([{"status": "preliminary",
                "setNumber": 3, "sample": {"location": "T3"}, "test": {"name": "Density"},
                "method": {"name": "m"}, "uom": {"name": "u"}, "result": "2"}])),
            (Method::Post, "timelogs") => wrap(json!([{"type": {"name": "Left"},
                "category": "event", "start": "2026-11-21T10:00:00Z"}])),
            (Method::Post, "{catalog}") => json!({"name": format!("Item {n}")}),
            (Method::Patch, "{id}") if pattern.contains("/catalogs/") => json!({"name": "Renamed"}),
            (Method::Patch, "{quantity_id}") => json!({"api": 30.5}),
            (Method::Patch, "{id}") => json!({"billOfLadingDate": "2026-11-01T00:00:00Z"}),
            (Method::Patch, _) => json!({"notes": "patched"}),
            _ => return None,
        };
        Some(value)
    }

    fn send(
        &self,
        server: &Server,
        key: Option<&str>,
        method: Method,
        pattern: &str,
        n: usize,
    ) -> Reply {
        let path = self.path(pattern, method);
        if (pattern.ends_with("/files") || pattern.ends_with("/attachments"))
            && method == Method::Post
        {
            return server.post_multipart(&path, key, BOUNDARY, &multipart_body());
        }
        if pattern.starts_with("/api/rest/1.0/sessions") && method == Method::Post {
            return server.request(
                "POST",
                &path,
                None,
                &[("Content-Type", "application/x-www-form-urlencoded")],
                Some(b"password=owner-password"),
            );
        }
        match self.body(method, pattern, n) {
            Some(body) => server.request(
                method.as_str(),
                &path,
                key,
                &[("Content-Type", "application/json")],
                Some(body.to_string().as_bytes()),
            ),
            None => server.request(method.as_str(), &path, key, &[], None),
        }
    }

    /// What the foreign tenant must not be able to change: the workspace's
    /// whole visible state.
    fn snapshot(&self, server: &Server, key: &str) -> Vec<String> {
        let ws = &self.ws;
        let job = &self.job;
        [
            format!("/workspaces/{ws}"),
            format!("/workspaces/{}", self.spare_ws),
            format!("/workspaces/{ws}/jobs"),
            format!("/workspaces/{ws}/jobs/{job}/load-port-information"),
            format!("/workspaces/{ws}/jobs/{job}/quantity"),
            format!("/workspaces/{ws}/jobs/{job}/quality"),
            format!("/workspaces/{ws}/jobs/{job}/timelog"),
            format!("/workspaces/{ws}/jobs/{job}/files"),
            format!("/workspaces/{ws}/catalogs/products"),
            format!("/v2/workspaces/{ws}/synonyms"),
            format!("/v2/organizations/{}", self.org),
            format!("/v2/organizations/{}", self.spare_org),
            format!("/workspaces/{}", self.invitation),
            "/v2/invitations".to_string(),
        ]
        .iter()
        .map(|path| {
            let reply = server.get(path, key);
            format!("{} {} {}", path, reply.status, reply.text())
        })
        .collect()
    }
}

/// What a foreign tenant gets: `None` where the route is for everyone (the
/// shared location catalog, reading the organization registry, creating one's
/// own organization, listing one's own workspaces, invitations or webhooks,
/// creating one's own webhook, logout, the feed of what one may read:
/// `tests/it/changes.rs` checks it shows nothing foreign); 400 when it tries
/// to make a workspace on someone else's organization (contract section 2);
/// 404 everywhere else.
fn foreign_status(method: Method, pattern: &str) -> Option<u16> {
    let collection = matches!(pattern, "/workspaces" | "/v2/workspaces");
    if pattern.starts_with("/api/rest/1.0/")
        || (pattern.starts_with("/v2/organizations")
            && matches!(method, Method::Get | Method::Post))
        || (collection && method == Method::Get)
        || pattern == "/v2/changes"
        || matches!(pattern, "/invitations" | "/v2/invitations")
        || (pattern == "/v2/webhooks" && matches!(method, Method::Get | Method::Post))
    {
        None
    } else if collection && method == Method::Post {
        Some(400)
    } else {
        Some(404)
    }
}

#[test]
fn every_route_answers_401_without_a_key_404_to_strangers_and_works_for_its_tenant() {
    let server = Server::start_with(&["--webhook-allow-private"]);
    let out = server.cli(&["user", "add", "owner"], Some("owner-password"));
    assert!(out.status.success());
    let stranger = server.add_user("stranger", &[]);
    let inviter = server.add_user("inviter", &[]);
    let routes: Vec<(Method, &'static str, Access)> = quayside::routes::table()
        .iter()
        .map(|r| (r.method, r.pattern, r.access))
        .collect();
    assert!(routes.len() > 60, "only {} routes", routes.len());
    let mut covered = 0;
    for (n, (method, pattern, access)) in routes.iter().copied().enumerate() {
        let owner = server.login("owner", "owner-password");
        let mut fixture = Fixture::new(&server, &owner, &inviter, n);
        if pattern.starts_with("/v2/webhooks/") {
            fixture.add_webhook(&server, &owner, n);
        }
        let what = format!("{} {pattern}", method.as_str());

        if access == Access::Session {
            let anonymous = fixture.send(&server, None, method, pattern, n);
            assert_eq!(
                anonymous.status,
                401,
                "{what} without a key: {}",
                anonymous.text()
            );
            // A HEAD answer has no body: its status says it all.
            if method != Method::Head {
                assert_eq!(anonymous.json()["error"]["code"], "unauthorized", "{what}");
            }
        }

        if let (Access::Session, Some(expected)) = (access, foreign_status(method, pattern)) {
            let before = fixture.snapshot(&server, &owner);
            let foreign = fixture.send(&server, Some(&stranger), method, pattern, n);
            assert_eq!(
                foreign.status,
                expected,
                "{what} by a foreign tenant: {}",
                foreign.text()
            );
            if method != Method::Head {
                assert_eq!(foreign.json()["error"]["status"], expected, "{what}");
            }
            assert_eq!(
                before,
                fixture.snapshot(&server, &owner),
                "{what} by a foreign tenant changed something"
            );
        }

        let own = fixture.send(&server, Some(&owner), method, pattern, n);
        assert!(
            (200..300).contains(&own.status),
            "{what} by its own tenant answered {}: {}",
            own.status,
            own.text()
        );
        covered += 1;
    }
    eprintln!("access matrix: {covered} routes covered");
}
