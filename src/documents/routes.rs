//! Handlers of the five document kinds on the older paths
//! (`/workspaces/{workspace_id}/jobs[/{job_id}/<kind>]`): one generic set,
//! configured by the kind's table, and their route declarations.

use rusqlite::Connection;
use serde_json::{Value, json};

use super::kinds::{self, Field, JOB, Kind, Shape, Type};
use super::rules::{self, Placement};
use super::store::{self, BodyFields};
use super::{Document, schema};
use crate::app::{Ctx, Endpoint, session};
use crate::catalogs::CatalogItem;
use crate::catalogs::store::RefContext;
use crate::clock;
use crate::envelope;
use crate::error::{ApiError, ApiResult};
use crate::http::Method::{Delete, Get, Patch, Post};
use crate::http::Response;
use crate::listing::Generation::Older;
use crate::listing::{self, Generation};
use crate::openapi::op::Op;
use crate::openapi::op::tags::DOCUMENTS;
use crate::openapi::schema::{
    array, envelope as envelope_schema, list_parameters, one_of, schema_ref, string, with_required,
};
use crate::workspaces::scope::Scope;

/// The routes of every kind, from its table: list, create, read, patch, delete.
/// The list's filter parameters say whether an index serves them
/// (`Kind::indexed`): the others read every document of the list.
fn with_indexed(mut parameters: Vec<Value>, kind: &Kind) -> Vec<Value> {
    for parameter in &mut parameters {
        let Some(name) = parameter["name"].as_str().map(str::to_string) else {
            continue;
        };
        if ["limit", "after", "offset", "sort"].contains(&name.as_str()) {
            continue;
        }
        let note = if kind.indexed.contains(&name.as_str()) {
            "; indexed: a page costs the same however many documents the list holds"
        } else {
            "; not indexed: reads every document of the list (filter on an indexed field too, \
             or page by cursor)"
        };
        let description = format!("{}{note}", parameter["description"].as_str().unwrap_or(""));
        parameter["description"] = Value::String(description);
    }
    parameters
}

pub fn routes() -> Vec<Endpoint> {
    let mut routes = Vec::new();
    for kind in kinds::ALL {
        let name = kind.schema_name();
        let write = format!("{name}Write");
        let mut filters = Vec::new();
        document_filters(kind.fields, "", &mut filters);
        let noun = kind.noun;
        let [on_create, on_patch, on_delete] = rules::conflicts(kind);
        let summary = |verb: &str| format!("{verb} {noun}");
        routes.extend([
            session(
                Get,
                kind.collection,
                Op::new(DOCUMENTS, format!("List {noun} documents"))
                    .parameters(with_indexed(list_parameters(Older, filters), kind))
                    .list("`{id, body}` envelopes", envelope_schema(Older, &name, "")),
                move |ctx| list(ctx, kind),
            ),
            session(
                Post,
                kind.collection,
                Op::new(DOCUMENTS, summary("Create"))
                    .json_body(with_required(schema_ref(&write), kind.required))
                    .ok(201, "Created", envelope_schema(Older, &name, ""))
                    .conflicts(on_create),
                move |ctx| create(ctx, kind),
            ),
            session(
                Get,
                kind.item,
                Op::new(DOCUMENTS, summary("Read")).ok(
                    200,
                    "The document",
                    shape_schema(kind.get_shape, &name),
                ),
                move |ctx| get(ctx, kind),
            ),
            session(
                Patch,
                kind.item,
                Op::new(DOCUMENTS, summary("Merge-patch (RFC 7396)"))
                    .json_body(schema_ref(&write))
                    .ok(
                        200,
                        "The document as stored",
                        shape_schema(kind.patch_shape, &name),
                    )
                    .conflicts(on_patch),
                move |ctx| patch(ctx, kind),
            ),
            session(
                Delete,
                kind.item,
                Op::new(DOCUMENTS, summary("Delete"))
                    .ok(200, "The deleted body", schema_ref(&name))
                    .conflicts(on_delete),
                move |ctx| delete(ctx, kind),
            ),
        ]);
    }
    routes
}

/// A kind's filters: every scalar field of its body, dotted.
fn document_filters(fields: &'static [Field], prefix: &str, out: &mut Vec<(String, Value)>) {
    for field in fields {
        let path = crate::validate::join(prefix, field.name);
        let schema = match &field.ty {
            Type::Object(inner) => {
                document_filters(inner, &path, out);
                continue;
            }
            Type::Array(_) => continue,
            Type::Int | Type::Float => json!({"type": "number"}),
            Type::Bool => json!({"type": "boolean"}),
            Type::Enum(values) => one_of(values),
            _ => string(),
        };
        out.push((path, schema));
    }
}

/// How an answer of this shape looks for a kind's schema.
fn shape_schema(shape: Shape, schema: &str) -> Value {
    match shape {
        Shape::Body => schema_ref(schema),
        Shape::Envelope => envelope_schema(Older, schema, ""),
        Shape::EnvelopeInArray => {
            let mut one = array(envelope_schema(Older, schema, ""));
            one["minItems"] = Value::from(1);
            one["maxItems"] = Value::from(1);
            one
        }
    }
}

/// The ids a request names below its workspace: the job (for results) and
/// the document (for operations on one).
#[derive(Clone)]
struct Target {
    job: Option<String>,
    document: Option<String>,
}

fn target(ctx: &Ctx, kind: &Kind, with_document: bool) -> Target {
    let param = |name: &str| ctx.req.param(name).to_string();
    Target {
        job: (!kind.is_job()).then(|| param(JOB.id_param())),
        document: with_document.then(|| param(kind.id_param())),
    }
}

/// The job a result sits under (none for a job), in the caller's workspace.
fn job(conn: &Connection, scope: &Scope, target: &Target) -> ApiResult<Option<Document>> {
    match &target.job {
        Some(job_id) => Ok(Some(
            store::get(conn, scope.id(), &JOB, None, job_id)?.ok_or_else(|| {
                ApiError::not_found(format!("No job with id \"{job_id}\" in this workspace"))
            })?,
        )),
        None => Ok(None),
    }
}

/// The document a request names, with its job: what GET, PATCH and DELETE
/// of one document act on.
fn one(
    conn: &Connection,
    scope: &Scope,
    kind: &'static Kind,
    target: &Target,
) -> ApiResult<(Option<Document>, Document)> {
    let job = job(conn, scope, target)?;
    let id = target.document.as_deref().unwrap_or("");
    let doc = store::get(
        conn,
        scope.id(),
        kind,
        job.as_ref().map(|j| j.id.as_str()),
        id,
    )?
    .ok_or_else(|| ApiError::not_found(format!("No {} with id \"{id}\" here", kind.noun)))?;
    Ok((job, doc))
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
    let query = listing::parse(
        ctx.req.query_pairs(),
        Generation::Older,
        &BodyFields(kind),
        &[],
    )?;
    let target = target(&ctx, kind, false);
    let carry = query.carry.clone();
    let page = ctx
        .read_in(move |conn, scope| {
            let job = job(conn, scope, &target)?;
            let docs = store::list(
                conn,
                scope.id(),
                kind,
                job.as_ref().map(|j| j.id.as_str()),
                &query,
            )?;
            docs.try_map(|doc| Ok(envelope::older(&doc.id, store::readable_body(conn, &doc)?)))
        })
        .await?;
    Ok(page.respond(ctx.req.path(), &carry))
}

/// Validates a full body (create, or PATCH after merging), resolving catalog
/// references, and applies the kind's rules. Returns the body and the catalog
/// items it refers to (as read or created here: its answer shows them
/// expanded without reading them again).
fn prepare(
    conn: &Connection,
    scope: &Scope,
    kind: &'static Kind,
    job: Option<&Document>,
    doc_id: &str,
    body: &Value,
    old: Option<&Document>,
) -> ApiResult<(serde_json::Map<String, Value>, Vec<CatalogItem>)> {
    let place = Placement {
        workspace: &scope.workspace,
        job,
    };
    let owner = scope.party();
    let mut refs = RefContext {
        conn,
        workspace: scope.id(),
        owner_party: owner.as_deref(),
        now: clock::now_ms(),
        used: Vec::new(),
    };
    let mut normalized = schema::normalize(kind, body, &mut refs)?;
    rules::before_write(conn, kind, &place, doc_id, &mut normalized, old)?;
    schema::check_required(kind, &normalized)?;
    Ok((
        schema::in_documented_order(kind.fields, normalized),
        refs.used,
    ))
}

/// `POST`: creates a document; catalog references become record ids, missing
/// records are created. Answers `{id, body}` with 201, rendered after the
/// commit, off the writer thread.
pub async fn create(mut ctx: Ctx, kind: &'static Kind) -> ApiResult<Response> {
    let body = schema::apply_aliases(kind, ctx.req.json().await?)?;
    let target = target(&ctx, kind, false);
    let answer = ctx
        .write_in(move |conn, scope| {
            let job = job(conn, scope, &target)?;
            let id = crate::ids::new_id();
            let (normalized, used) = prepare(conn, scope, kind, job.as_ref(), &id, &body, None)?;
            let now = clock::now_ms();
            let doc = Document {
                id,
                workspace_id: scope.id().to_string(),
                kind,
                job_id: job.map(|j| j.id),
                body: normalized,
                created_at: now,
                updated_at: now,
            };
            store::insert(conn, &doc, &used)?;
            Ok((doc, used))
        })
        .await?;
    let (doc, used) = answer;
    let body = store::readable(kind, doc.body, |_| Ok(used))?;
    Ok(Response::json(201, &envelope::older(&doc.id, body)))
}

/// `GET` one: shaped as the kind's table says.
pub async fn get(ctx: Ctx, kind: &'static Kind) -> ApiResult<Response> {
    let target = target(&ctx, kind, true);
    let answer = ctx
        .read_in(move |conn, scope| {
            let (_, doc) = one(conn, scope, kind, &target)?;
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
    let patch = schema::apply_aliases(kind, ctx.req.json().await?)?;
    crate::validate::object(&patch, "")?;
    let target = target(&ctx, kind, true);
    let answer = ctx
        .write_in(move |conn, scope| {
            let (job, mut doc) = one(conn, scope, kind, &target)?;
            let mut merged = Value::Object(doc.body.clone());
            schema::merge_patch(&mut merged, &patch);
            let (normalized, used) = prepare(
                conn,
                scope,
                kind,
                job.as_ref(),
                &doc.id,
                &merged,
                Some(&doc),
            )?;
            if normalized != doc.body {
                doc.body = normalized;
                doc.updated_at = clock::now_ms();
                store::update(conn, &doc, &used)?;
            }
            Ok((doc, used))
        })
        .await?;
    let (doc, used) = answer;
    let body = store::readable(kind, doc.body, |_| Ok(used))?;
    Ok(Response::json(
        200,
        &shaped(kind.patch_shape, &doc.id, body),
    ))
}

/// `DELETE`: answers the deleted body; refused (409) while a job holds
/// results, time logs or files, or a document holds attachments.
pub async fn delete(ctx: Ctx, kind: &'static Kind) -> ApiResult<Response> {
    let target = target(&ctx, kind, true);
    let answer = ctx
        .write_in(move |conn, scope| {
            let (_, doc) = one(conn, scope, kind, &target)?;
            rules::before_delete(conn, &doc)?;
            let body = store::readable_body(conn, &doc)?;
            store::delete(conn, &doc.id)?;
            Ok(body)
        })
        .await?;
    Ok(Response::json(200, &answer))
}
