//! Handlers of the five document kinds on the older paths
//! (`/workspaces/{workspace_id}/jobs[/{job_id}/<kind>]`): one generic set,
//! configured by the kind's table.

use rusqlite::Connection;
use serde_json::Value;

use super::kinds::{JOB, Kind, Shape};
use super::rules::{self, Placement};
use super::store::{self, BodyFields};
use super::{Document, schema};
use crate::app::Ctx;
use crate::auth::Principal;
use crate::catalogs::store::RefContext;
use crate::clock;
use crate::envelope;
use crate::error::{ApiError, ApiResult};
use crate::http::Response;
use crate::listing::{self, Generation};
use crate::workspaces::{self, Workspace};

/// The ids a request names: its workspace, the job (for results), the document.
struct Target {
    workspace: String,
    job: Option<String>,
    document: Option<String>,
}

fn target(ctx: &Ctx, kind: &Kind, with_document: bool) -> Target {
    let param = |name: &str| ctx.req.param(name).to_string();
    if kind.is_job() {
        Target {
            workspace: param("workspace_id"),
            job: None,
            document: with_document.then(|| param("job_id")),
        }
    } else {
        Target {
            workspace: param("workspace_id"),
            job: Some(param("job_id")),
            document: with_document.then(|| param(kind.id_param)),
        }
    }
}

/// The workspace (visible to the caller) and, for results, the job.
fn locate(
    conn: &Connection,
    user: &Principal,
    target: &Target,
) -> ApiResult<(Workspace, Option<Document>)> {
    let ws = workspaces::load_visible(conn, user, &target.workspace)?;
    let job =
        match &target.job {
            Some(job_id) => Some(store::get(conn, &ws.id, &JOB, None, job_id)?.ok_or_else(
                || ApiError::not_found(format!("No job with id \"{job_id}\" in this workspace")),
            )?),
            None => None,
        };
    Ok((ws, job))
}

fn load(
    conn: &Connection,
    kind: &'static Kind,
    ws: &Workspace,
    job: Option<&Document>,
    id: &str,
) -> ApiResult<Document> {
    store::get(conn, &ws.id, kind, job.map(|j| j.id.as_str()), id)?
        .ok_or_else(|| ApiError::not_found(format!("No {} with id \"{id}\" here", kind.noun)))
}

fn shaped(shape: Shape, id: &str, body: Value) -> Value {
    match shape {
        Shape::Body => body,
        Shape::Envelope => envelope::older(id, body),
        Shape::EnvelopeInArray => Value::Array(vec![envelope::older(id, body)]),
    }
}

/// `GET`: the kind's documents as `{id, body}` envelopes; `X-Total-Count`.
pub async fn list(ctx: Ctx, kind: &'static Kind) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let query = listing::parse(
        ctx.req.query_pairs(),
        Generation::Older,
        &BodyFields(kind),
        &[],
    )?;
    let target = target(&ctx, kind, false);
    let (total, items) = ctx
        .read(move |conn| {
            let (ws, job) = locate(conn, &user, &target)?;
            let (total, docs) = store::list(
                conn,
                &ws.id,
                kind,
                job.as_ref().map(|j| j.id.as_str()),
                &query,
            )?;
            let items = docs
                .iter()
                .map(|doc| Ok(envelope::older(&doc.id, store::readable_body(conn, doc)?)))
                .collect::<ApiResult<Vec<_>>>()?;
            Ok((total, items))
        })
        .await?;
    Ok(Response::json(200, &items).header("x-total-count", &total.to_string()))
}

/// Validates a full body (create, or PATCH after merging), resolving catalog
/// references, and applies the kind's rules. Returns the body and the records
/// it refers to.
fn prepare(
    conn: &Connection,
    user: &Principal,
    kind: &'static Kind,
    place: &Placement<'_>,
    doc_id: &str,
    body: &Value,
    old: Option<&Document>,
) -> ApiResult<(serde_json::Map<String, Value>, Vec<String>)> {
    let owner = place.workspace.party_of(user);
    let mut refs = RefContext {
        conn,
        workspace: &place.workspace.id,
        owner_party: owner.as_deref(),
        now: clock::now_ms(),
        used: Vec::new(),
    };
    let mut normalized = schema::normalize(kind, body, &mut refs)?;
    rules::before_write(conn, kind, place, doc_id, &mut normalized, old)?;
    schema::check_required(kind, &normalized)?;
    Ok((
        schema::in_documented_order(kind.fields, normalized),
        refs.used,
    ))
}

/// `POST`: creates a document; catalog references become record ids, missing
/// records are created. Answers `{id, body}` with 201.
pub async fn create(mut ctx: Ctx, kind: &'static Kind) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let body = schema::apply_aliases(kind, ctx.req.json().await?)?;
    let target = target(&ctx, kind, false);
    let answer = ctx
        .write(move |conn| {
            let (ws, job) = locate(conn, &user, &target)?;
            let place = Placement {
                workspace: &ws,
                job: job.as_ref(),
            };
            let id = crate::ids::new_id();
            let (normalized, used) = prepare(conn, &user, kind, &place, &id, &body, None)?;
            let now = clock::now_ms();
            let doc = Document {
                id,
                workspace_id: ws.id.clone(),
                kind,
                job_id: job.map(|j| j.id),
                body: normalized,
                created_at: now,
                updated_at: now,
            };
            store::insert(conn, &doc, &used)?;
            Ok(envelope::older(&doc.id, store::readable_body(conn, &doc)?))
        })
        .await?;
    Ok(Response::json(201, &answer))
}

/// `GET` one: shaped as the kind's table says.
pub async fn get(ctx: Ctx, kind: &'static Kind) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let target = target(&ctx, kind, true);
    let answer = ctx
        .read(move |conn| {
            let (ws, job) = locate(conn, &user, &target)?;
            let doc = load(
                conn,
                kind,
                &ws,
                job.as_ref(),
                target.document.as_deref().unwrap_or(""),
            )?;
            Ok(shaped(
                kind.get_shape,
                &doc.id,
                store::readable_body(conn, &doc)?,
            ))
        })
        .await?;
    Ok(Response::json(200, &answer))
}

/// `PATCH`: a JSON merge patch of the stored body (only the fields sent change;
/// `null` clears one), then the same checks as a create.
pub async fn patch(mut ctx: Ctx, kind: &'static Kind) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let patch = schema::apply_aliases(kind, ctx.req.json().await?)?;
    crate::validate::object(&patch, "")?;
    let target = target(&ctx, kind, true);
    let answer = ctx
        .write(move |conn| {
            let (ws, job) = locate(conn, &user, &target)?;
            let place = Placement {
                workspace: &ws,
                job: job.as_ref(),
            };
            let mut doc = load(
                conn,
                kind,
                &ws,
                job.as_ref(),
                target.document.as_deref().unwrap_or(""),
            )?;
            let mut merged = Value::Object(doc.body.clone());
            schema::merge_patch(&mut merged, &patch);
            let (normalized, used) =
                prepare(conn, &user, kind, &place, &doc.id, &merged, Some(&doc))?;
            if normalized != doc.body {
                doc.body = normalized;
                doc.updated_at = clock::now_ms();
                store::update(conn, &doc, &used)?;
            }
            Ok(shaped(
                kind.patch_shape,
                &doc.id,
                store::readable_body(conn, &doc)?,
            ))
        })
        .await?;
    Ok(Response::json(200, &answer))
}

/// `DELETE`: answers the deleted body; refused (409) while a job holds
/// results, time logs or files, or a document holds attachments.
pub async fn delete(ctx: Ctx, kind: &'static Kind) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let target = target(&ctx, kind, true);
    let answer = ctx
        .write(move |conn| {
            let (ws, job) = locate(conn, &user, &target)?;
            let doc = load(
                conn,
                kind,
                &ws,
                job.as_ref(),
                target.document.as_deref().unwrap_or(""),
            )?;
            rules::before_delete(conn, &doc)?;
            let body = store::readable_body(conn, &doc)?;
            store::delete(conn, &doc.id)?;
            Ok(body)
        })
        .await?;
    Ok(Response::json(200, &answer))
}
