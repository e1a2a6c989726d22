//! Handlers of `/workspaces` and `/v2/workspaces`: one implementation, two
//! envelope shapes.

use rusqlite::Connection;

use super::{ENTITY_TYPE, Party, Workspace, WorkspaceInput, store};
use crate::app::{Ctx, Endpoint, handler, resource};
use crate::auth::principal::Principal;
use crate::clock;
use crate::envelope::Entity;
use crate::envelope::{Wrapping, in_body, unwrap_v2};
use crate::error::{ApiError, ApiResult};
use crate::http::Response;
use crate::listing::Generation::{Older, V2};
use crate::listing::{self, ColumnFields, FieldType, Generation};
use crate::openapi::op::Resource;
use crate::openapi::op::tags::WORKSPACES;
use crate::openapi::schema::{envelope, filters, list_parameters, schema_ref};
use crate::organizations;

const FIELDS: ColumnFields = ColumnFields(&[
    ("description", "description", FieldType::Text),
    ("parties.client.id", "client_id", FieldType::Text),
    ("parties.client.xref", "client_xref", FieldType::Text),
    ("parties.vendor.id", "vendor_id", FieldType::Text),
    ("parties.vendor.xref", "vendor_xref", FieldType::Text),
]);

/// The workspace routes of both generations.
pub fn routes() -> Vec<Endpoint> {
    let mut routes = Vec::new();
    for (generation, collection, item) in [
        (Older, "/workspaces", "/workspaces/{workspace_id}"),
        (V2, "/v2/workspaces", "/v2/workspaces/{workspace_id}"),
    ] {
        let ops = Resource {
            tag: WORKSPACES,
            noun: "workspace",
            generation,
            read: envelope(generation, "Workspace", ENTITY_TYPE),
            one: None,
            create: schema_ref("WorkspaceWrite"),
            patch: schema_ref("WorkspaceWrite"),
            parameters: list_parameters(generation, filters(&FIELDS)),
            conflicts: [
                &[],
                &[],
                &["`workspace_not_empty`: the workspace holds documents"],
            ],
        }
        .ops();
        routes.extend(resource(
            collection,
            item,
            ops,
            [
                handler(move |ctx| list(ctx, generation)),
                handler(move |ctx| create(ctx, generation)),
                handler(move |ctx| get(ctx, generation)),
                handler(move |ctx| patch(ctx, generation)),
                handler(move |ctx| delete(ctx, generation)),
            ],
        ));
    }
    routes
}

/// Reads the body of a create or patch in either generation.
async fn read_input(
    ctx: &mut Ctx,
    generation: Generation,
    creating: bool,
) -> ApiResult<WorkspaceInput> {
    let json = ctx.req.json().await?;
    let (body, prefix) = match generation {
        Generation::Older => (json, ""),
        Generation::V2 => unwrap_v2(
            json,
            if creating {
                Wrapping::Optional
            } else {
                Wrapping::Required
            },
        )?,
    };
    WorkspaceInput::from_json(&body, creating).map_err(|e| in_body(e, prefix))
}

/// `GET /workspaces`, `GET /v2/workspaces`: the workspaces the caller may see.
pub async fn list(ctx: Ctx, generation: Generation) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let query = listing::parse(ctx.req.query_pairs(), generation, &FIELDS, &[])?;
    let (total, items) = ctx
        .read(move |conn| Ok(store::list(conn, &user, &query)?))
        .await?;
    let rendered: Vec<_> = items.iter().map(|ws| ws.render(generation)).collect();
    Ok(Response::json(200, &rendered).header("x-total-count", &total.to_string()))
}

/// Checks the parties of a new workspace: each given id names an existing
/// organization, and the caller's tenant owns at least one of them.
fn check_parties(
    conn: &Connection,
    user: &Principal,
    input: &WorkspaceInput,
) -> ApiResult<(Option<String>, Option<String>)> {
    let mut audiences = (None, None);
    for (role, party, slot) in [
        ("client", &input.client, &mut audiences.0),
        ("vendor", &input.vendor, &mut audiences.1),
    ] {
        if let Some(id) = &party.id {
            let org = organizations::store::get(conn, id)?.ok_or_else(|| {
                ApiError::invalid(
                    format!("parties.{role}.id"),
                    format!("No organization with id \"{id}\""),
                )
            })?;
            *slot = Some(org.audience);
        }
    }
    if input.client.id.is_none() && input.vendor.id.is_none() {
        return Err(ApiError::invalid(
            "parties",
            "A workspace needs `parties.client.id` or `parties.vendor.id`: an organization of yours",
        ));
    }
    let owns_one = [&audiences.0, &audiences.1]
        .iter()
        .any(|a| a.as_deref() == Some(user.tenant.as_str()));
    if !owns_one && !user.is_admin {
        let field = if input.client.id.is_some() {
            "parties.client.id"
        } else {
            "parties.vendor.id"
        };
        return Err(ApiError::invalid(
            field,
            "One of the parties must be an organization of your own tenant (create one with POST /v2/organizations)",
        ));
    }
    Ok(audiences)
}

/// `POST /workspaces`, `POST /v2/workspaces`.
pub async fn create(mut ctx: Ctx, generation: Generation) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let input = read_input(&mut ctx, generation, true).await?;
    let created = ctx
        .write(move |conn| {
            let (client_audience, vendor_audience) = check_parties(conn, &user, &input)?;
            let now = clock::now_ms();
            let ws = Workspace {
                id: crate::ids::new_id(),
                description: input.description.flatten(),
                client: Party { ..input.client },
                vendor: Party { ..input.vendor },
                created_at: now,
                updated_at: now,
                client_audience,
                vendor_audience,
            };
            store::insert(conn, &ws)?;
            Ok(ws)
        })
        .await?;
    Ok(Response::json(201, &created.render(generation)))
}

/// `GET /workspaces/{workspace_id}`, `GET /v2/workspaces/{workspace_id}`.
pub async fn get(ctx: Ctx, generation: Generation) -> ApiResult<Response> {
    let ws = ctx.read_in(|_, scope| Ok(scope.workspace.clone())).await?;
    Ok(Response::json(200, &ws.render(generation)))
}

/// `PATCH`: the description only; parties are accepted and left unchanged.
pub async fn patch(mut ctx: Ctx, generation: Generation) -> ApiResult<Response> {
    let input = read_input(&mut ctx, generation, false).await?;
    let ws = ctx
        .write_in(move |conn, scope| {
            let mut ws = scope.workspace.clone();
            if let Some(description) = input.description {
                if description != ws.description {
                    ws.description = description;
                    ws.updated_at = clock::now_ms();
                    store::update_description(conn, &ws)?;
                }
            }
            Ok(ws)
        })
        .await?;
    Ok(Response::json(200, &ws.render(generation)))
}

/// `DELETE`: only an empty workspace (409 `workspace_not_empty` otherwise);
/// answers the last known envelope.
pub async fn delete(ctx: Ctx, generation: Generation) -> ApiResult<Response> {
    let ws = ctx
        .write_in(|conn, scope| {
            store::delete(conn, scope.id())?;
            Ok(scope.workspace.clone())
        })
        .await?;
    Ok(Response::json(200, &ws.render(generation)))
}
