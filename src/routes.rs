//! The route table: every path the server answers, who may call it, and the
//! handler that serves it. Find any route here, then follow the handler.

use std::future::Future;

use serde_json::json;

use crate::app::{Access, Ctx, Endpoint, Handler};
use crate::error::ApiResult;
use crate::http::{Method, Response, Router};
use crate::listing::Generation::{Older, V2};
use crate::{auth, locations, organizations, workspaces};

use Method::{Delete, Get, Patch, Post, Put};

pub fn table() -> Router<Endpoint> {
    let mut r = Router::default();

    r.add(Get, "/healthz", public(health));

    // Location catalog service (location-catalog-service.md).
    r.add(
        Post,
        "/api/rest/1.0/sessions/{username}",
        public(auth::routes::login),
    );
    r.add(
        Delete,
        "/api/rest/1.0/sessions/{username}",
        session(auth::routes::logout),
    );
    for catalog in locations::Catalog::ALL {
        let (collection, item) = catalog.patterns();
        r.add(
            Get,
            collection,
            session(move |ctx| locations::routes::search(ctx, catalog)),
        );
        r.add(
            Get,
            item,
            session(move |ctx| locations::routes::get(ctx, catalog)),
        );
        r.add(
            Put,
            item,
            session(move |ctx| locations::routes::put(ctx, catalog)),
        );
        r.add(
            Delete,
            item,
            session(move |ctx| locations::routes::delete(ctx, catalog)),
        );
    }

    // Workspace integration service (workspace-integration-service.md).
    for (generation, collection, item) in [
        (Older, "/workspaces", "/workspaces/{workspace_id}"),
        (V2, "/v2/workspaces", "/v2/workspaces/{workspace_id}"),
    ] {
        r.add(
            Get,
            collection,
            session(move |ctx| workspaces::routes::list(ctx, generation)),
        );
        r.add(
            Post,
            collection,
            session(move |ctx| workspaces::routes::create(ctx, generation)),
        );
        r.add(
            Get,
            item,
            session(move |ctx| workspaces::routes::get(ctx, generation)),
        );
        r.add(
            Patch,
            item,
            session(move |ctx| workspaces::routes::patch(ctx, generation)),
        );
        r.add(
            Delete,
            item,
            session(move |ctx| workspaces::routes::delete(ctx, generation)),
        );
    }

    r.add(
        Get,
        "/v2/organizations",
        session(organizations::routes::list),
    );
    r.add(
        Post,
        "/v2/organizations",
        session(organizations::routes::create),
    );
    r.add(
        Get,
        "/v2/organizations/{organization_id}",
        session(organizations::routes::get),
    );
    r.add(
        Patch,
        "/v2/organizations/{organization_id}",
        session(organizations::routes::patch),
    );
    r.add(
        Delete,
        "/v2/organizations/{organization_id}",
        session(organizations::routes::delete),
    );

    r
}

/// `GET /healthz`: liveness for load balancers and install scripts.
async fn health(_ctx: Ctx) -> ApiResult<Response> {
    Ok(Response::json(
        200,
        &json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}),
    ))
}

fn boxed<F, Fut>(f: F) -> Handler
where
    F: Fn(Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ApiResult<Response>> + Send + 'static,
{
    Box::new(move |ctx| Box::pin(f(ctx)))
}

fn public<F, Fut>(f: F) -> Endpoint
where
    F: Fn(Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ApiResult<Response>> + Send + 'static,
{
    Endpoint {
        access: Access::Public,
        handler: boxed(f),
    }
}

fn session<F, Fut>(f: F) -> Endpoint
where
    F: Fn(Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ApiResult<Response>> + Send + 'static,
{
    Endpoint {
        access: Access::Session,
        handler: boxed(f),
    }
}
