//! Handlers of `/v2/webhooks`: a tenant's webhooks, their secrets and their
//! delivery log. Another tenant's webhook answers 404, as if it were not there.

use crate::db::Conn;

use super::store;
use super::{
    DELIVERY_TYPE, Delivery, ENTITY_TYPE, SECRET_OVERLAP_MS, Webhook, WebhookInput, deliver,
    not_found, outcome, sign,
};
use crate::app::{Ctx, Endpoint, handler, resource, session};
use crate::auth::principal::Principal;
use crate::clock;
use crate::envelope::{Entity, Wrapping, in_body, unwrap_v2};
use crate::error::{ApiError, ApiResult};
use crate::http::Method::{Get, Post};
use crate::http::Response;
use crate::listing::{self, ColumnFields, FieldSql, FieldType, Generation::V2};
use crate::openapi::op::tags::WEBHOOKS;
use crate::openapi::op::{Op, Resource};
use crate::openapi::schema::{envelope, filters, list_parameters, schema_ref, with_required};

const FIELDS: ColumnFields = ColumnFields(&[
    ("url", "url", FieldType::Text),
    ("workspace_id", "workspace_id", FieldType::Text),
    ("description", "description", FieldType::Text),
    ("active", "active", FieldType::Bool),
]);

const DELIVERY_FIELDS: ColumnFields = ColumnFields(&[
    ("seq", "seq", FieldType::Number),
    ("event_id", "event_id", FieldType::Text),
    ("event_type", "event_type", FieldType::Text),
    ("outcome", "outcome", FieldType::Text),
    ("status", "status", FieldType::Number),
]);

const COLLECTION: &str = "/v2/webhooks";
const ITEM: &str = "/v2/webhooks/{webhook_id}";
const ROTATE: &str = "/v2/webhooks/{webhook_id}/rotate-secret";
const DELIVERIES: &str = "/v2/webhooks/{webhook_id}/deliveries";
const REDELIVER: &str = "/v2/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver";

/// The webhook routes.
pub fn routes() -> Vec<Endpoint> {
    let read = envelope(V2, "Webhook", ENTITY_TYPE);
    let delivery = envelope(V2, "WebhookDelivery", DELIVERY_TYPE);
    let ops = Resource {
        tag: WEBHOOKS,
        noun: "webhook",
        generation: V2,
        read: read.clone(),
        one: None,
        create: with_required(schema_ref("WebhookWrite"), &["url"]),
        patch: schema_ref("WebhookWrite"),
        parameters: list_parameters(V2, filters(&FIELDS)),
        conflicts: [&[], &[], &[]],
    }
    .ops();
    let mut routes = resource(
        COLLECTION,
        ITEM,
        ops,
        [
            handler(list),
            handler(create),
            handler(get),
            handler(patch),
            handler(delete),
        ],
    );
    routes.extend([
        session(
            Post,
            ROTATE,
            Op::new(WEBHOOKS, "Replace a webhook's signing secret").ok(
                200,
                "The webhook with its new `secret`, shown this once; the previous secret \
                 also signs deliveries for 24 hours",
                read,
            ),
            rotate_secret,
        ),
        session(
            Get,
            DELIVERIES,
            Op::new(WEBHOOKS, "A webhook's delivery attempts, newest first")
                .parameters(list_parameters(V2, filters(&DELIVERY_FIELDS)))
                .list("The attempts, one page", delivery.clone()),
            deliveries,
        ),
        session(
            Post,
            REDELIVER,
            Op::new(WEBHOOKS, "Send an attempt's change again, once").ok(
                202,
                "Queued: the delivery worker sends it next (the cursor does not move); \
                 its outcome appears in the delivery log under this id",
                delivery,
            ),
            redeliver,
        ),
    ]);
    routes
}

/// The webhook of the path, if the caller's tenant owns it and the caller
/// may manage it: one that reads as an admin only an admin may (the others
/// of the tenant would otherwise read every tenant's changes through it).
fn owned(conn: &Conn, user: &Principal, id: &str) -> ApiResult<Webhook> {
    let hook = store::get_owned(conn, &user.tenant, id)?.ok_or_else(|| not_found(id))?;
    if !user.is_admin && store::reads_as_admin(conn, &hook)? {
        return Err(not_found(id));
    }
    Ok(hook)
}

/// The URL resolves, and only to addresses a webhook may reach.
async fn check_url(ctx: &Ctx, url: &str, prefix: &str) -> ApiResult<()> {
    let allow_private = ctx.app.settings.webhook_allow_private;
    crate::http::client::check_url(url, allow_private)
        .await
        .map(|_| ())
        .map_err(|message| in_body(ApiError::invalid("url", message), prefix))
}

/// A workspace named in a body must be one the caller may see (400 naming
/// the field otherwise, as for the parties of a workspace).
fn check_workspace(conn: &Conn, user: &Principal, id: &str, prefix: &str) -> ApiResult<()> {
    if crate::workspaces::scope::visible(conn, user, id)? {
        Ok(())
    } else {
        Err(in_body(
            ApiError::invalid("workspace_id", format!("No workspace with id \"{id}\"")),
            prefix,
        ))
    }
}

/// `GET /v2/webhooks`: the caller's tenant's webhooks.
pub async fn list(ctx: Ctx) -> ApiResult<Response> {
    let (tenant, is_admin) = {
        let user = ctx.user()?;
        (user.tenant.clone(), user.is_admin)
    };
    let query = listing::parse(ctx.req.query_pairs(), V2, &FIELDS, &[])?;
    let carry = query.carry.clone();
    let page = ctx
        .read(move |conn| Ok(store::list(conn, &tenant, is_admin, &query)?))
        .await?;
    Ok(page.map(|h| h.v2()).respond(ctx.req.path(), &carry))
}

/// `POST /v2/webhooks`: answers the secret, this once. Deliveries start with
/// the changes committed after it.
pub async fn create(mut ctx: Ctx) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let (body, prefix) = unwrap_v2(ctx.req.json().await?, Wrapping::Optional)?;
    let input = WebhookInput::from_json(&body, true).map_err(|e| in_body(e, prefix))?;
    let url = input.url.clone().unwrap_or_default();
    check_url(&ctx, &url, prefix).await?;
    let secret = sign::new_secret()?;
    let hook = ctx
        .write(move |conn| {
            let workspace_id = input.workspace_id.clone().flatten();
            if let Some(workspace) = &workspace_id {
                check_workspace(conn, &user, workspace, prefix)?;
            }
            let now = clock::now_ms();
            let hook = Webhook {
                id: crate::ids::new_id(),
                tenant: user.tenant.clone(),
                created_by: user.username.clone(),
                url: url.clone(),
                event_types: input.event_types.clone().unwrap_or_default(),
                workspace_id,
                description: input.description.clone().flatten(),
                active: input.active.unwrap_or(true),
                disabled_reason: None,
                secret: secret.clone(),
                previous_secret: None,
                previous_until: None,
                cursor: crate::changes::head(conn)?,
                failures: 0,
                failing_since: None,
                next_attempt_at: None,
                created_at: now,
                updated_at: now,
                last_delivery: None,
            };
            store::insert(conn, &hook)?;
            Ok(hook)
        })
        .await?;
    deliver::nudge();
    Ok(Response::json(201, &hook.with_secret()))
}

/// `GET /v2/webhooks/{webhook_id}`.
pub async fn get(ctx: Ctx) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let id = ctx.req.param("webhook_id").to_string();
    let hook = ctx.read(move |conn| owned(conn, &user, &id)).await?;
    Ok(Response::json(200, &hook.v2()))
}

/// `PATCH /v2/webhooks/{webhook_id}`: `active: true` re-enables a disabled
/// webhook, which resumes from its cursor with a fresh retry window; a new
/// `url` also starts a fresh window.
pub async fn patch(mut ctx: Ctx) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let (body, prefix) = unwrap_v2(ctx.req.json().await?, Wrapping::Required)?;
    let input = WebhookInput::from_json(&body, false).map_err(|e| in_body(e, prefix))?;
    if let Some(url) = &input.url {
        check_url(&ctx, url, prefix).await?;
    }
    let id = ctx.req.param("webhook_id").to_string();
    let hook = ctx
        .write(move |conn| {
            let mut hook = owned(conn, &user, &id)?;
            let mut changed = false;
            let mut fresh_window = false;
            if let Some(url) = input.url.clone().filter(|u| *u != hook.url) {
                hook.url = url;
                fresh_window = true;
            }
            if let Some(types) = input.event_types.clone().filter(|t| *t != hook.event_types) {
                hook.event_types = types;
                changed = true;
            }
            if let Some(workspace) = input
                .workspace_id
                .clone()
                .filter(|w| *w != hook.workspace_id)
            {
                if let Some(workspace) = &workspace {
                    check_workspace(conn, &user, workspace, prefix)?;
                }
                hook.workspace_id = workspace;
                changed = true;
            }
            if let Some(description) = input.description.clone().filter(|d| *d != hook.description)
            {
                hook.description = description;
                changed = true;
            }
            match input.active {
                Some(true) if !hook.active => {
                    hook.active = true;
                    hook.disabled_reason = None;
                    fresh_window = true;
                }
                Some(false) if hook.active => {
                    hook.active = false;
                    changed = true;
                }
                _ => {}
            }
            if fresh_window {
                hook.failures = 0;
                hook.failing_since = None;
                hook.next_attempt_at = None;
            }
            if changed || fresh_window {
                hook.updated_at = clock::now_ms();
                store::update(conn, &hook)?;
            }
            Ok(hook)
        })
        .await?;
    deliver::nudge();
    Ok(Response::json(200, &hook.v2()))
}

/// `DELETE /v2/webhooks/{webhook_id}`: with its delivery log.
pub async fn delete(ctx: Ctx) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let id = ctx.req.param("webhook_id").to_string();
    let hook = ctx
        .write(move |conn| {
            let hook = owned(conn, &user, &id)?;
            store::delete(conn, &id)?;
            Ok(hook)
        })
        .await?;
    Ok(Response::json(200, &hook.v2()))
}

/// `POST /v2/webhooks/{webhook_id}/rotate-secret`: a new secret, shown once;
/// the one it replaces signs deliveries too for 24 hours (a second rotation
/// within them ends the oldest secret at once).
pub async fn rotate_secret(ctx: Ctx) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let id = ctx.req.param("webhook_id").to_string();
    let secret = sign::new_secret()?;
    let hook = ctx
        .write(move |conn| {
            let mut hook = owned(conn, &user, &id)?;
            let now = clock::now_ms();
            hook.previous_secret = Some(std::mem::replace(&mut hook.secret, secret.clone()));
            hook.previous_until = Some(now + SECRET_OVERLAP_MS);
            hook.updated_at = now;
            store::update(conn, &hook)?;
            Ok(hook)
        })
        .await?;
    Ok(Response::json(200, &hook.with_secret()))
}

/// `GET /v2/webhooks/{webhook_id}/deliveries`: newest first unless `sort` says otherwise.
pub async fn deliveries(ctx: Ctx) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let id = ctx.req.param("webhook_id").to_string();
    // Newest attempt first.
    let query = listing::parse_with_order(
        ctx.req.query_pairs(),
        V2,
        &DELIVERY_FIELDS,
        &[],
        Some(&[
            (FieldSql::Column("created_at"), false),
            (FieldSql::Column("id"), false),
        ]),
    )?;
    let carry = query.carry.clone();
    let page = ctx
        .read(move |conn| {
            owned(conn, &user, &id)?;
            Ok(store::deliveries(conn, &id, &query)?)
        })
        .await?;
    Ok(page.map(|d| d.v2()).respond(ctx.req.path(), &carry))
}

/// `POST /v2/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver`:
/// queues the attempt's change for the worker, which sends it in its turn
/// (one delivery in flight per webhook), also to a disabled webhook.
pub async fn redeliver(ctx: Ctx) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let id = ctx.req.param("webhook_id").to_string();
    let delivery_id = ctx.req.param("delivery_id").to_string();
    let queued = ctx
        .write(move |conn| {
            let hook = owned(conn, &user, &id)?;
            let original = store::get_delivery(conn, &hook.id, &delivery_id)?.ok_or_else(|| {
                ApiError::not_found(format!(
                    "No delivery with id \"{delivery_id}\" for this webhook"
                ))
            })?;
            if original.outcome == outcome::QUEUED {
                return Ok(original);
            }
            let now = clock::now_ms();
            let queued = Delivery {
                id: crate::ids::new_id(),
                webhook_id: hook.id.clone(),
                seq: original.seq,
                event_id: original.event_id,
                event_type: original.event_type,
                attempt: store::next_attempt(conn, &hook.id, original.seq)?,
                redelivery_of: Some(original.id),
                outcome: outcome::QUEUED.into(),
                status: None,
                duration_ms: None,
                error: None,
                created_at: now,
                updated_at: now,
            };
            store::save_delivery(conn, &queued)?;
            Ok(queued)
        })
        .await?;
    deliver::nudge();
    Ok(Response::json(202, &queued.v2()))
}
