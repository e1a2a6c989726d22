//! Handlers of the five document kinds on the older paths
//! (`/workspaces/{workspace_id}/jobs[/{job_id}/<kind>]`): one generic set,
//! configured by the kind's table, and their route declarations.

use std::sync::Arc;

use crate::db::Conn;
use serde_json::{Value, json};

use super::kinds::{self, Field, JOB, Kind, Shape, Type};
use super::rules::{self, Placement};
use super::store::{self, BodyFields, Shown};
use super::{Document, schema};
use crate::app::{Ctx, Endpoint, session};
use crate::catalogs::CatalogItem;
use crate::catalogs::store::{RefContext, Resolved};
use crate::clock;
use crate::envelope::{self, Wrapping, in_body, unwrap_v2};
use crate::error::{ApiError, ApiResult, ItemError};
use crate::http::Method::{Delete, Get, Patch, Post};
use crate::http::Response;
use crate::http::request::{ITEMS_BODY_LIMIT, JSON_BODY_LIMIT};
use crate::listing::Generation::{Older, V2};
use crate::listing::{self, Generation};
use crate::openapi::op::Op;
use crate::openapi::op::tags::DOCUMENTS;
use crate::openapi::schema::{
    array, body_of, envelope as envelope_schema, list_parameters, one_of, schema_ref, string,
    v2_body, with_required,
};
use crate::validate::kind_of;
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
                create_op(kind, Older, on_create),
                move |ctx| create(ctx, kind, Older),
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
        if let Some(v2_collection) = kind.v2_collection {
            routes.push(session(
                Post,
                v2_collection,
                create_op(kind, V2, on_create),
                move |ctx| create(ctx, kind, V2),
            ));
        }
    }
    routes
}

/// The operation of a kind's POST on a generation: one document, and for a
/// `bulk` kind also an array of them.
fn create_op(kind: &'static Kind, generation: Generation, conflicts: &[&str]) -> Op {
    let name = kind.schema_name();
    let noun = kind.noun;
    let one = with_required(schema_ref(&format!("{name}Write")), kind.required);
    let created = envelope_schema(generation, &name, kind.entity_type);
    let op = Op::new(DOCUMENTS, format!("Create {noun}"));
    let op = if kind.bulk {
        let mut items = array(one.clone());
        items["minItems"] = Value::from(1);
        items["maxItems"] = Value::from(kinds::MAX_ITEMS);
        items["description"] = Value::from(format!(
            "A certificate: 1 to {} {noun} documents, stored all or none",
            kinds::MAX_ITEMS
        ));
        let mut answers = array(created.clone());
        answers["minItems"] = Value::from(1);
        answers["maxItems"] = Value::from(kinds::MAX_ITEMS);
        let body = json!({"oneOf": [one, items]});
        let body = match generation {
            Older => body,
            V2 => v2_body(body, true),
        };
        op.json_body(body)
            .ok(
                201,
                "Created: the envelope of the one document, or for an array the envelopes \
                 of its documents in the order sent",
                json!({"oneOf": [created, answers]}),
            )
            .error(
                400,
                Some(&format!(
                    "For an array: `invalid_items`, items are invalid and nothing was stored \
                     (the error's `items` lists each failed item with its `index` and its own \
                     error, `field` names the first, as `[3].setNumber`); \
                     `invalid_item_count`, an array of 0 or more than {} items",
                    kinds::MAX_ITEMS
                )),
            )
            .error(
                413,
                Some(&format!(
                    "The body is over the limit (`payload_too_large`): {} MiB for an array, \
                     {} MiB for one document",
                    ITEMS_BODY_LIMIT >> 20,
                    JSON_BODY_LIMIT >> 20
                )),
            )
    } else {
        op.json_body(body_of(generation, one, true))
            .ok(201, "Created", created)
    };
    op.conflicts(conflicts)
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
fn job(conn: &Conn, scope: &Scope, target: &Target) -> ApiResult<Option<Arc<Document>>> {
    let Some(job_id) = &target.job else {
        return Ok(None);
    };
    // In a write, as the writer keeps it between writes (`db::kept`: read
    // before the write changes anything; shared, not copied, with each write
    // that names it); kept for any workspace, so the kept row is held to this
    // one's.
    crate::db::kept::row(store::TABLE, job_id, || {
        Ok::<_, crate::db::Error>(store::get(conn, scope.id(), &JOB, None, job_id)?.map(Arc::new))
    })?
    .filter(|job| job.workspace_id == scope.id() && job.kind.key == JOB.key && job.job_id.is_none())
    .map(Some)
    .ok_or_else(|| ApiError::not_found(format!("No job with id \"{job_id}\" in this workspace")))
}

/// The document a request names, with its job: what GET, PATCH and DELETE
/// of one document act on.
fn one(
    conn: &Conn,
    scope: &Scope,
    kind: &'static Kind,
    target: &Target,
) -> ApiResult<(Option<Arc<Document>>, Document)> {
    found(conn, scope, kind, target, |job, id| {
        store::get(conn, scope.id(), kind, job, id)
    })
}

/// The job of `target` (for a result) and its document, as `read` reads it
/// by the job's id and its own; 404 when either is not there.
fn found<T>(
    conn: &Conn,
    scope: &Scope,
    kind: &'static Kind,
    target: &Target,
    read: impl FnOnce(Option<&str>, &str) -> crate::db::Result<Option<T>>,
) -> ApiResult<(Option<Arc<Document>>, T)> {
    let job = job(conn, scope, target)?;
    let id = target.document.as_deref().unwrap_or("");
    let doc = read(job.as_ref().map(|j| j.id.as_str()), id)?
        .ok_or_else(|| ApiError::not_found(format!("No {} with id \"{id}\" here", kind.noun)))?;
    Ok((job, doc))
}

/// [`shaped`] of a body given as its stored JSON text.
fn shaped_text(shape: Shape, id: &str, body: Box<serde_json::value::RawValue>) -> Vec<u8> {
    match shape {
        Shape::Body => Box::<str>::from(body).into_string().into_bytes(),
        Shape::Envelope => envelope::older_text(id, &body),
        Shape::EnvelopeInArray => {
            let mut out = vec![b'['];
            out.extend(envelope::older_text(id, &body));
            out.push(b']');
            out
        }
    }
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

/// The document a body is prepared for.
#[derive(Clone, Copy)]
enum Subject<'a> {
    /// A create, with the new document's id.
    New(&'a str),
    /// A PATCH of the stored document.
    Stored(&'a Document),
}

/// A body ready to store, with the catalog items it refers to.
type Prepared = (serde_json::Map<String, Value>, Vec<Arc<CatalogItem>>);

/// Takes a full body checked by `schema::check` (a create's before the
/// writer, a PATCH's after merging), resolves its catalog references (through
/// `resolved`, what the write resolved before), and applies the kind's rules.
/// Returns the body and the catalog items it refers to (as read or created
/// here: its answer shows them expanded without reading them again).
fn prepare(
    conn: &Conn,
    scope: &Scope,
    kind: &'static Kind,
    job: Option<&Document>,
    subject: Subject<'_>,
    checked: &serde_json::Map<String, Value>,
    resolved: &mut Resolved,
) -> ApiResult<Prepared> {
    let (doc_id, old) = match subject {
        Subject::New(id) => (id, None),
        Subject::Stored(doc) => (doc.id.as_str(), Some(doc)),
    };
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
        resolved,
    };
    let mut normalized = schema::resolve(kind, checked, &mut refs)?;
    rules::before_write(conn, kind, &place, doc_id, &mut normalized, old)?;
    schema::check_required(kind, &normalized)?;
    if !schema::is_in_documented_order(kind.fields, &normalized) {
        normalized = schema::in_documented_order(kind.fields, normalized);
    }
    Ok((normalized, refs.used))
}

/// What a create's body holds, each document checked by `schema::check`
/// before the writer (its references in form only), or the error it already
/// has: a document's error is answered where the writer would have found it,
/// after the workspace and the job (404, 409 first, as before).
enum Input {
    /// One document.
    One(ApiResult<serde_json::Map<String, Value>>),
    /// An array of documents (a `bulk` kind).
    Many(Vec<ApiResult<serde_json::Map<String, Value>>>),
}

/// What one run of a create's write reads: the bodies, borrowed, since the
/// write may run again (`db::writer`: its batch replayed), and resolving
/// builds a new body anyway (`schema::resolve`).
enum Run<'a> {
    One(ApiResult<&'a serde_json::Map<String, Value>>),
    Many(Vec<ApiResult<&'a serde_json::Map<String, Value>>>),
}

impl Input {
    /// The bodies for one run of the create's write.
    fn for_run(&mut self) -> Run<'_> {
        // An error fails its write, which then never runs again: that run
        // takes it.
        fn item(
            item: &mut ApiResult<serde_json::Map<String, Value>>,
        ) -> ApiResult<&serde_json::Map<String, Value>> {
            match item {
                Ok(body) => Ok(body),
                Err(error) => Err(std::mem::replace(
                    error,
                    ApiError::internal("a create's failed write ran again"),
                )),
            }
        }
        match self {
            Input::One(body) => Run::One(item(body)),
            Input::Many(items) => Run::Many(items.iter_mut().map(item).collect()),
        }
    }
}

/// Reads a create's body, before the writer: one document, or for a `bulk`
/// kind an array of 1 to `MAX_ITEMS` (up to `ITEMS_BODY_LIMIT`; one document
/// is still held to `JSON_BODY_LIMIT`), aliases applied, each checked. Also
/// answers the prefix of the fields errors name (`body` for a wrapped v2 body).
async fn create_input(
    ctx: &mut Ctx,
    kind: &'static Kind,
    generation: Generation,
) -> ApiResult<(Input, &'static str)> {
    let limit = if kind.bulk {
        ITEMS_BODY_LIMIT
    } else {
        JSON_BODY_LIMIT
    };
    let (value, size) = ctx.req.json_up_to(limit).await?;
    let (value, prefix) = match generation {
        Generation::Older => (value, ""),
        Generation::V2 => unwrap_v2(value, Wrapping::Items)?,
    };
    let items = match value {
        Value::Array(items) if kind.bulk => items,
        one => {
            if size > JSON_BODY_LIMIT {
                return Err(ApiError::PayloadTooLarge {
                    limit: JSON_BODY_LIMIT as u64,
                });
            }
            let one = schema::apply_aliases(kind, one).map_err(|e| in_body(e, prefix))?;
            return Ok((Input::One(schema::check(kind, &one)), prefix));
        }
    };
    if items.is_empty() || items.len() > kinds::MAX_ITEMS {
        return Err(ApiError::BadRequest {
            code: "invalid_item_count",
            message: format!(
                "An array of {} documents takes 1 to {} of them; this one has {}",
                kind.noun,
                kinds::MAX_ITEMS,
                items.len()
            ),
            field: Some(if prefix.is_empty() { "$" } else { prefix }.to_string()),
        });
    }
    let items = items
        .into_iter()
        .map(|item| match item {
            Value::Object(_) => {
                schema::apply_aliases(kind, item).and_then(|item| schema::check(kind, &item))
            }
            other => Err(ApiError::invalid(
                "$",
                format!("An item must be a JSON object, not {}", kind_of(&other)),
            )),
        })
        .collect();
    Ok((Input::Many(items), prefix))
}

/// A new document of `kind` from `body` in the writer: validated, its
/// references resolved (missing catalog records created), checked by the
/// kind's rules; not yet stored; with the records it uses. The one path of
/// every create, alone or as an item of an array (whose items share
/// `resolved`: a record found or created once is not looked up again).
fn new_document(
    conn: &Conn,
    scope: &Scope,
    kind: &'static Kind,
    job: Option<&Document>,
    body: &serde_json::Map<String, Value>,
    resolved: &mut Resolved,
) -> ApiResult<(Document, Vec<Arc<CatalogItem>>)> {
    let id = crate::ids::new_id();
    let (normalized, used) = prepare(conn, scope, kind, job, Subject::New(&id), body, resolved)?;
    let now = clock::now_ms();
    let doc = Document {
        id,
        workspace_id: scope.id().to_string(),
        kind,
        job_id: job.map(|j| j.id.clone()),
        body: normalized,
        created_at: now,
        updated_at: now,
    };
    Ok((doc, used))
}

/// Creates every item of an array in one write, in order, or none: every
/// item is checked (later items see the catalog records earlier ones
/// created), the items that fail with a 400 or a 409 are all reported, with
/// their index, and the write is rolled back; when none fails, all are stored
/// together (`store::insert_many`). No rule of a `bulk` kind reads the
/// other documents of its job (`rules::before_write`), so an item is checked
/// the same before the earlier ones are stored as after.
fn create_many(
    conn: &Conn,
    scope: &Scope,
    kind: &'static Kind,
    job: Option<&Document>,
    items: Vec<ApiResult<&serde_json::Map<String, Value>>>,
    prefix: &str,
) -> ApiResult<Vec<Arc<Shown>>> {
    rules::before_create(&Placement {
        workspace: &scope.workspace,
        job,
    })?;
    let count = items.len();
    let mut docs = Vec::with_capacity(count);
    let mut uses = Vec::with_capacity(count);
    let mut failed = Vec::new();
    let mut resolved = Resolved::default();
    for (index, item) in items.into_iter().enumerate() {
        match item.and_then(|body| new_document(conn, scope, kind, job, body, &mut resolved)) {
            Ok((doc, used)) => {
                docs.push(doc);
                uses.push(used);
            }
            Err(error) if matches!(error.status(), 400 | 409) => {
                failed.push(ItemError { index, error });
            }
            Err(other) => return Err(other),
        }
    }
    if !failed.is_empty() {
        return Err(ApiError::items(count, failed, prefix));
    }
    store::insert_many(conn, &docs)?;
    docs.into_iter()
        .zip(uses)
        .map(|(doc, used)| store::shown(conn, doc, used))
        .collect()
}

/// `POST`: creates a document, or for a `bulk` kind an array of them all or
/// none; catalog references become record ids, missing records are created
/// (once for all the items that name them). Answers 201 with the envelope of
/// the generation, or an array of them in the order sent, rendered after the
/// commit, off the writer thread.
pub async fn create(
    mut ctx: Ctx,
    kind: &'static Kind,
    generation: Generation,
) -> ApiResult<Response> {
    let (mut input, prefix) = create_input(&mut ctx, kind, generation).await?;
    let many = matches!(input, Input::Many(_));
    let target = target(&ctx, kind, false);
    let created = ctx
        .write_in(move |conn, scope| {
            let job = job(conn, scope, &target)?;
            match input.for_run() {
                Run::One(body) => {
                    let mut resolved = Resolved::default();
                    let (doc, used) =
                        new_document(conn, scope, kind, job.as_deref(), body?, &mut resolved)?;
                    store::insert(conn, &doc)?;
                    Ok(vec![store::shown(conn, doc, used)?])
                }
                Run::Many(items) => create_many(conn, scope, kind, job.as_deref(), items, prefix),
            }
        })
        .await
        .map_err(|e| in_body(e, prefix))?;
    let mut answers = created
        .into_iter()
        .map(|shown| {
            let shown = Shown::take(shown);
            match generation {
                Generation::Older => envelope::older(&shown.id, shown.body),
                Generation::V2 => envelope::v2(
                    kind.entity_type,
                    &shown.id,
                    shown.body,
                    shown.created_at,
                    shown.updated_at,
                ),
            }
        })
        .collect::<Vec<Value>>();
    if many {
        Ok(Response::json(201, &answers))
    } else {
        Ok(Response::json(201, &answers.pop().unwrap_or_default()))
    }
}

/// `GET` one: shaped as the kind's table says.
pub async fn get(ctx: Ctx, kind: &'static Kind) -> ApiResult<Response> {
    let target = target(&ctx, kind, true);
    // A job's answer is made of its own row alone (a result's also of its
    // job's): kept until that row changes (`Ctx::kept_document`).
    let keep = kind.is_job();
    let id = target.document.clone().unwrap_or_default();
    if keep {
        if let Some(answer) = ctx.kept_document(kind.key, &id) {
            return Ok(Response::json_bytes(200, answer));
        }
    }
    let (read_at, (answer, as_stored)) = ctx
        .read_point_in_at(move |conn, scope| {
            let (_, stored) = found(conn, scope, kind, &target, |job, id| {
                store::get_stored(conn, scope.id(), kind, job, id)
            })?;
            match stored {
                // Shown as stored: the text goes out as it is, unparsed.
                store::Stored::Raw { id, body, .. } => {
                    Ok((shaped_text(kind.get_shape, &id, body), true))
                }
                store::Stored::Parsed(doc) => {
                    let body = store::readable_body(conn, &doc)?;
                    let answer = crate::http::json::to_vec(&shaped(kind.get_shape, &doc.id, body))
                        .map_err(ApiError::internal)?;
                    Ok((answer, false))
                }
            }
        })
        .await?;
    let answer = bytes::Bytes::from(answer);
    if keep && as_stored {
        ctx.keep_document(read_at, kind.key, &id, answer.clone());
    }
    Ok(Response::json_bytes(200, answer))
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
                job.as_deref(),
                Subject::Stored(&doc),
                &schema::check(kind, &merged)?,
                &mut Resolved::default(),
            )?;
            if normalized != doc.body {
                let before = store::references(&doc);
                doc.body = normalized;
                doc.updated_at = clock::now_ms();
                store::update(conn, &doc, &before)?;
            }
            store::shown(conn, doc, used)
        })
        .await?;
    let shown = Shown::take(answer);
    Ok(Response::json(
        200,
        &shaped(kind.patch_shape, &shown.id, shown.body),
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
            store::delete(conn, &doc)?;
            Ok(body)
        })
        .await?;
    Ok(Response::json(200, &answer))
}
