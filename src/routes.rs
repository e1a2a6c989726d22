//! The route table: every route the server answers, in the order of the
//! OpenAPI document. Each area declares its routes beside its handlers, one
//! [`Endpoint`] per route (method, path, access, handler, OpenAPI operation);
//! this list is the one hop from here to any of them. The router and
//! `GET /openapi.json` are both built from it.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_json::json;

use crate::app::{Endpoint, public};
use crate::http::{Method::Get, Response};
use crate::openapi::op::{Op, tags::SERVICE};
use crate::openapi::schema::schema_ref;
use crate::openapi::{self, Operation};
use crate::{
    attachments, auth, catalogs, changes, console, documents, locations, organizations, webhooks,
    workspaces,
};

/// Every route, with `GET /openapi.json` serving the document rendered from them.
pub fn table() -> Vec<Endpoint> {
    let document: Arc<OnceLock<Bytes>> = Arc::default();
    let mut table = service(document.clone());
    table.extend(console::routes());
    table.extend(auth::routes::routes());
    table.extend(locations::routes::routes());
    table.extend(workspaces::routes::routes());
    table.extend(documents::routes::routes());
    table.extend(attachments::routes::routes());
    table.extend(catalogs::routes::routes());
    table.extend(catalogs::routes::synonym_routes());
    table.extend(organizations::routes::routes());
    table.extend(changes::routes::routes());
    table.extend(webhooks::routes::routes());
    let rendered = openapi::document(operations(&table));
    let bytes = serde_json::to_vec(&rendered).expect("the OpenAPI document serializes");
    let _ = document.set(Bytes::from(bytes));
    table
}

/// What the OpenAPI document reads of each route.
pub fn operations(table: &[Endpoint]) -> impl Iterator<Item = Operation<'_>> {
    table.iter().map(|e| Operation {
        method: e.method,
        pattern: e.pattern,
        access: e.access,
        op: &e.doc,
    })
}

fn service(document: Arc<OnceLock<Bytes>>) -> Vec<Endpoint> {
    vec![
        public(
            Get,
            "/healthz",
            Op::new(SERVICE, "Liveness, for load balancers and install scripts")
                .without_store()
                .ok(200, "The server is up", schema_ref("Health")),
            |_ctx| async {
                Ok(Response::json(
                    200,
                    &json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}),
                ))
            },
        ),
        public(
            Get,
            "/openapi.json",
            Op::new(SERVICE, "This OpenAPI document")
                .without_store()
                .ok(
                    200,
                    "The OpenAPI 3.1 document of every route",
                    json!({"type": "object"}),
                ),
            move |_ctx| {
                let document = document.get().cloned().unwrap_or_default();
                async move { Ok(Response::json_bytes(200, document)) }
            },
        ),
    ]
}
