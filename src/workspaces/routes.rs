//! Handlers of `/workspaces` and `/v2/workspaces`: one implementation, two
//! envelope shapes.

use crate::db::Conn;

use super::{ENTITY_TYPE, Role, State, Workspace, WorkspaceInput, store};
use crate::app::{Ctx, Endpoint, handler, resource, session};
use crate::auth::principal::Principal;
use crate::clock;
use crate::envelope::Entity;
use crate::envelope::{Wrapping, in_body, unwrap_v2};
use crate::error::{ApiError, ApiResult};
use crate::http::Method::{Get, Post};
use crate::http::Response;
use crate::listing::Generation::{Older, V2};
use crate::listing::{self, ColumnFields, FieldType, Generation, ListQuery, Page};
use crate::openapi::op::tags::WORKSPACES;
use crate::openapi::op::{Op, Resource};
use crate::openapi::schema::{envelope, filters, list_parameters, schema_ref};
use crate::organizations;

const FIELDS: ColumnFields = ColumnFields(&[
    ("description", "description", FieldType::Text),
    ("parties.client.id", "client_id", FieldType::Text),
    ("parties.client.xref", "client_xref", FieldType::Text),
    ("parties.vendor.id", "vendor_id", FieldType::Text),
    ("parties.vendor.xref", "vendor_xref", FieldType::Text),
    ("state", "state", FieldType::Text),
]);

/// The paths of one generation: the workspace collection and item, the
/// invitations list, and accepting and declining an invitation. The older
/// generation's are the v2 ones without `/v2`.
struct Paths {
    generation: Generation,
    collection: &'static str,
    item: &'static str,
    invitations: &'static str,
    accept: &'static str,
    decline: &'static str,
}

const PATHS: [Paths; 2] = [
    Paths {
        generation: Older,
        collection: "/workspaces",
        item: "/workspaces/{workspace_id}",
        invitations: "/invitations",
        accept: "/workspaces/{workspace_id}/accept",
        decline: "/workspaces/{workspace_id}/decline",
    },
    Paths {
        generation: V2,
        collection: "/v2/workspaces",
        item: "/v2/workspaces/{workspace_id}",
        invitations: "/v2/invitations",
        accept: "/v2/workspaces/{workspace_id}/accept",
        decline: "/v2/workspaces/{workspace_id}/decline",
    },
];

/// The 409 reasons of accept and decline.
const ANSWER_CONFLICTS: &[&str] = &[
    "`not_invited`: the caller's tenant is not the invited party (the inviter, or a workspace \
     without an invitation)",
    "`invitation_answered`: the invitation was already answered the other way",
];

/// The workspace routes of both generations, with the invitations'.
pub fn routes() -> Vec<Endpoint> {
    let mut routes = Vec::new();
    for Paths {
        generation,
        collection,
        item,
        invitations,
        accept,
        decline,
    } in PATHS
    {
        let read = envelope(generation, "Workspace", ENTITY_TYPE);
        let ops = Resource {
            tag: WORKSPACES,
            noun: "workspace",
            generation,
            read: read.clone(),
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
        routes.push(session(
            Get,
            invitations,
            Op::new(
                WORKSPACES,
                "List the pending invitations to the caller's tenant (all of them for an admin)",
            )
            .parameters(list_parameters(generation, filters(&FIELDS)))
            .list(
                "Pending workspaces naming an organization of the caller's tenant, one page",
                read.clone(),
            ),
            move |ctx| list_invitations(ctx, generation),
        ));
        for (path, answer) in [(accept, Answer::Accept), (decline, Answer::Decline)] {
            routes.push(session(
                Post,
                path,
                Op::new(WORKSPACES, answer.summary())
                    .ok(200, answer.outcome(), read.clone())
                    .conflicts(ANSWER_CONFLICTS),
                move |ctx| answer_invitation(ctx, generation, answer),
            ));
        }
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

/// One page of workspaces, as `fetch` finds them for the caller.
type Fetch = fn(&Conn, &Principal, &ListQuery) -> crate::db::Result<Page<Workspace>>;

/// A list of workspaces in the generation's envelopes, with `X-Total-Count`.
async fn listed(ctx: Ctx, generation: Generation, fetch: Fetch) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let query = listing::parse(ctx.req.query_pairs(), generation, &FIELDS, &[])?;
    let carry = query.carry.clone();
    let page = ctx
        .read(move |conn| Ok(fetch(conn, &user, &query)?))
        .await?;
    Ok(page
        .map(|ws| ws.render(generation))
        .respond(ctx.req.path(), &carry))
}

/// `GET /workspaces`, `GET /v2/workspaces`: the workspaces the caller may see.
pub async fn list(ctx: Ctx, generation: Generation) -> ApiResult<Response> {
    listed(ctx, generation, store::list).await
}

/// `GET /invitations`, `GET /v2/invitations`: the pending workspaces the
/// caller's tenant is invited to, which it does not see anywhere else yet.
pub async fn list_invitations(ctx: Ctx, generation: Generation) -> ApiResult<Response> {
    listed(ctx, generation, store::invitations).await
}

/// The party of a new workspace that is an invitation: an organization of
/// another tenant than the caller's. An admin's workspace invites nobody (the
/// operator stands for both parties).
fn invited_party(user: &Principal, audiences: &(Option<String>, Option<String>)) -> Option<Role> {
    if user.is_admin {
        return None;
    }
    [(Role::Client, &audiences.0), (Role::Vendor, &audiences.1)]
        .into_iter()
        .find(|(_, audience)| audience.as_deref().is_some_and(|a| a != user.tenant))
        .map(|(role, _)| role)
}

/// Checks the parties of a new workspace: each given id names an existing
/// organization, and the caller's tenant owns at least one of them.
fn check_parties(
    conn: &Conn,
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
            let audiences = check_parties(conn, &user, &input)?;
            let invited = invited_party(&user, &audiences);
            let (client_audience, vendor_audience) = audiences;
            let now = clock::now_ms();
            let ws = Workspace {
                id: crate::ids::new_id(),
                description: input.description.clone().flatten(),
                client: input.client.clone(),
                vendor: input.vendor.clone(),
                created_at: now,
                updated_at: now,
                client_audience,
                vendor_audience,
                state: match invited {
                    Some(_) => State::Pending,
                    None => State::Active,
                },
                invited,
            };
            store::insert(conn, &ws)?;
            Ok(ws)
        })
        .await?;
    Ok(Response::json(201, &created.render(generation)))
}

/// `GET /workspaces/{workspace_id}`, `GET /v2/workspaces/{workspace_id}`.
pub async fn get(ctx: Ctx, generation: Generation) -> ApiResult<Response> {
    let ws = ctx
        .read_point_in(|_, scope| Ok(scope.workspace.clone()))
        .await?;
    Ok(Response::json(200, &ws.render(generation)))
}

/// `PATCH`: the description only; parties are accepted and left unchanged.
pub async fn patch(mut ctx: Ctx, generation: Generation) -> ApiResult<Response> {
    let input = read_input(&mut ctx, generation, false).await?;
    let ws = ctx
        .write_in(move |conn, scope| {
            let mut ws = Workspace::clone(&scope.workspace);
            if let Some(description) = input.description.clone() {
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

/// An invited party's answer.
#[derive(Clone, Copy, Debug)]
pub enum Answer {
    Accept,
    Decline,
}

impl Answer {
    /// Where the workspace stands after it.
    fn state(self) -> State {
        match self {
            Answer::Accept => State::Active,
            Answer::Decline => State::Declined,
        }
    }

    fn summary(self) -> &'static str {
        match self {
            Answer::Accept => "Accept an invitation: the workspace becomes active for both parties",
            Answer::Decline => "Decline an invitation: the workspace stays the inviter's alone",
        }
    }

    fn outcome(self) -> &'static str {
        match self {
            Answer::Accept => "The workspace, `active` (also when it already was)",
            Answer::Decline => "The workspace, `declined` (also when it already was)",
        }
    }
}

/// What an answer that finds the invitation answered the other way says.
fn answered(state: State) -> ApiError {
    let was = match state {
        State::Active => "accepted: the workspace is active; its parties can delete it while empty",
        _ => "declined: ask the inviter for a new workspace",
    };
    ApiError::conflict(
        "invitation_answered",
        format!("This invitation was already {was}"),
    )
}

/// `POST .../accept`, `POST .../decline`: the invited tenant's answer (an
/// admin may answer for it). Answering again the same way changes nothing.
pub async fn answer_invitation(
    ctx: Ctx,
    generation: Generation,
    answer: Answer,
) -> ApiResult<Response> {
    let ws = ctx
        .write_invited(move |conn, scope| {
            let mut ws = Workspace::clone(&scope.workspace);
            if !ws.answered_by(&scope.user) {
                return Err(ApiError::conflict(
                    "not_invited",
                    match ws.invited {
                        None => "This workspace has no invitation to answer: both parties are in"
                            .to_string(),
                        Some(role) => format!(
                            "Only the invited party (the {} organization's tenant) can accept or \
                             decline this invitation",
                            role.key()
                        ),
                    },
                ));
            }
            let wanted = answer.state();
            if ws.state == wanted {
                return Ok(ws);
            }
            if ws.state != State::Pending {
                return Err(answered(ws.state));
            }
            ws.state = wanted;
            ws.updated_at = clock::now_ms();
            store::update_state(conn, &ws)?;
            Ok(ws)
        })
        .await?;
    Ok(Response::json(200, &ws.render(generation)))
}
