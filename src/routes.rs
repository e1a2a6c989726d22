//! The route table: every path the server answers, who may call it, and the
//! handler that serves it. Find any route here, then follow the handler.

use std::future::Future;

use serde_json::json;

use crate::app::{Access, Ctx, Endpoint, Handler};
use crate::error::ApiResult;
use crate::http::{Method, Response, Router};
use crate::listing::Generation::{Older, V2};
use crate::{attachments, auth, catalogs, documents, locations, organizations, workspaces};

use Method::{Delete, Get, Patch, Post, Put};

pub fn table() -> Router<Endpoint> {
    let mut r = Router::default();

    r.add(Get, "/healthz", public(health));
    r.add(Get, "/openapi.json", public(crate::openapi::serve));
    r.add(Get, "/", public(crate::console::index));
    r.add(Get, "/console/{file}", public(crate::console::asset));

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

    // Jobs and the documents of a job: one generic implementation per operation.
    for kind in documents::kinds::ALL {
        let (collection, item) = document_patterns(kind);
        r.add(
            Get,
            collection,
            session(move |ctx| documents::routes::list(ctx, kind)),
        );
        r.add(
            Post,
            collection,
            session(move |ctx| documents::routes::create(ctx, kind)),
        );
        r.add(
            Get,
            item,
            session(move |ctx| documents::routes::get(ctx, kind)),
        );
        r.add(
            Patch,
            item,
            session(move |ctx| documents::routes::patch(ctx, kind)),
        );
        r.add(
            Delete,
            item,
            session(move |ctx| documents::routes::delete(ctx, kind)),
        );
    }

    use attachments::routes::View::{Attachments, JobFiles};
    for (view, collection, item, content) in [
        (
            JobFiles,
            "/workspaces/{workspace_id}/jobs/{job_id}/files",
            "/workspaces/{workspace_id}/jobs/{job_id}/files/{file_id}",
            "/workspaces/{workspace_id}/jobs/{job_id}/files/{file_id}/content",
        ),
        (
            Attachments,
            "/v2/workspaces/{workspace_id}/documents/{document_id}/attachments",
            "/v2/workspaces/{workspace_id}/documents/{document_id}/attachments/{attachment_id}",
            "/v2/workspaces/{workspace_id}/documents/{document_id}/attachments/{attachment_id}/content",
        ),
    ] {
        r.add(
            Get,
            collection,
            session(move |ctx| attachments::routes::list(ctx, view)),
        );
        r.add(
            Post,
            collection,
            session(move |ctx| attachments::routes::upload(ctx, view)),
        );
        r.add(
            Get,
            item,
            session(move |ctx| attachments::routes::get(ctx, view)),
        );
        r.add(
            Get,
            content,
            session(move |ctx| attachments::routes::content(ctx, view)),
        );
        r.add(
            Delete,
            item,
            session(move |ctx| attachments::routes::delete(ctx, view)),
        );
    }

    const CATALOG: &str = "/workspaces/{workspace_id}/catalogs/{catalog}";
    const CATALOG_ITEM: &str = "/workspaces/{workspace_id}/catalogs/{catalog}/{id}";
    const SYNONYMS: &str = "/workspaces/{workspace_id}/catalogs/{catalog}/{recordId}/synonyms";
    const SYNONYM: &str =
        "/workspaces/{workspace_id}/catalogs/{catalog}/{recordId}/synonyms/{synonymRecordId}";
    r.add(Get, CATALOG, session(catalogs::routes::list));
    r.add(Post, CATALOG, session(catalogs::routes::create));
    r.add(Get, CATALOG_ITEM, session(catalogs::routes::get));
    r.add(Patch, CATALOG_ITEM, session(catalogs::routes::patch));
    r.add(Delete, CATALOG_ITEM, session(catalogs::routes::delete));
    r.add(Get, SYNONYMS, session(catalogs::routes::list_synonyms));
    r.add(Post, SYNONYM, session(catalogs::routes::add_synonym));
    r.add(Get, SYNONYM, session(catalogs::routes::check_synonym));
    r.add(Delete, SYNONYM, session(catalogs::routes::remove_synonym));

    const V2_SYNONYMS: &str = "/v2/workspaces/{workspace_id}/xrefs/{xtype}/{xref_id}/synonyms";
    const V2_SYNONYM: &str =
        "/v2/workspaces/{workspace_id}/xrefs/{xtype}/{xref_id}/synonyms/{linked_item_id}";
    r.add(
        Get,
        "/v2/workspaces/{workspace_id}/synonyms",
        session(catalogs::routes::v2_workspace_synonyms),
    );
    r.add(
        Get,
        V2_SYNONYMS,
        session(catalogs::routes::v2_record_synonyms),
    );
    r.add(Post, V2_SYNONYM, session(catalogs::routes::v2_link));
    r.add(Delete, V2_SYNONYM, session(catalogs::routes::v2_unlink));

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

/// Older-path patterns of a document kind: its collection and one document.
fn document_patterns(kind: &documents::Kind) -> (&'static str, &'static str) {
    match kind.key {
        "job" => (
            "/workspaces/{workspace_id}/jobs",
            "/workspaces/{workspace_id}/jobs/{job_id}",
        ),
        "loadPortInformation" => (
            "/workspaces/{workspace_id}/jobs/{job_id}/load-port-information",
            "/workspaces/{workspace_id}/jobs/{job_id}/load-port-information/{id}",
        ),
        "quantityResult" => (
            "/workspaces/{workspace_id}/jobs/{job_id}/quantity",
            "/workspaces/{workspace_id}/jobs/{job_id}/quantity/{quantity_id}",
        ),
        "qualityResult" => (
            "/workspaces/{workspace_id}/jobs/{job_id}/quality",
            "/workspaces/{workspace_id}/jobs/{job_id}/quality/{quality_id}",
        ),
        _ => (
            "/workspaces/{workspace_id}/jobs/{job_id}/timelog",
            "/workspaces/{workspace_id}/jobs/{job_id}/timelog/{event_id}",
        ),
    }
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
