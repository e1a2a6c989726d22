//! Handlers of `/v2/organizations`.

use super::store::{self, OrganizationFilter};
use super::{CATEGORIES, ENTITY_TYPE, Organization, OrganizationInput, check_audience};
use crate::app::{Ctx, Endpoint, handler, resource};
use crate::auth::principal::Principal;
use crate::clock;
use crate::envelope::Entity;
use crate::envelope::{Wrapping, in_body, unwrap_v2};
use crate::error::{ApiError, ApiResult};
use crate::http::Response;
use crate::listing::{self, ColumnFields, FieldType, Generation};
use crate::openapi::op::Resource;
use crate::openapi::op::tags::ORGANIZATIONS;
use crate::openapi::schema::{
    envelope, filters, list_parameters, one_of, query, schema_ref, string, with_required,
};

const FIELDS: ColumnFields = ColumnFields(&[
    ("name", "name_folded", FieldType::Text),
    ("category", "category", FieldType::Text),
    ("audience", "audience", FieldType::Text),
]);

const COLLECTION: &str = "/v2/organizations";
const ITEM: &str = "/v2/organizations/{organization_id}";

/// The organization registry's routes.
pub fn routes() -> Vec<Endpoint> {
    let mut parameters = list_parameters(Generation::V2, filters(&FIELDS));
    parameters.push(query("name", "Substring of the name, any case", string()));
    let mut categories = CATEGORIES.to_vec();
    categories.push("none");
    parameters.push(query(
        "category",
        "The category; `none` for organizations without one",
        one_of(&categories),
    ));
    let duplicate: &[&str] =
        &["`duplicate_name`: another organization has this name (ignoring case)"];
    let ops = Resource {
        tag: ORGANIZATIONS,
        noun: "organization",
        generation: Generation::V2,
        read: envelope(Generation::V2, "Organization", ENTITY_TYPE),
        one: None,
        create: with_required(schema_ref("OrganizationWrite"), &["name"]),
        patch: schema_ref("OrganizationWrite"),
        parameters,
        conflicts: [
            duplicate,
            duplicate,
            &["`organization_in_use`: a workspace names it as a party, or a job as client or vendor"],
        ],
    }
    .ops();
    resource(
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
    )
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("No organization with id \"{id}\""))
}

/// The organization at `{organization_id}`, readable by anyone authenticated.
async fn load(ctx: &Ctx) -> ApiResult<Organization> {
    let id = ctx.req.param("organization_id").to_string();
    let lookup = id.clone();
    ctx.read_point(move |conn| Ok(store::get(conn, &lookup)?))
        .await?
        .ok_or_else(|| not_found(&id))
}

/// Only the owning tenant or an admin may change an organization; to others
/// it answers as if it were not there, like every other foreign write.
fn check_owner(user: &Principal, org: &Organization) -> ApiResult<()> {
    if user.is_admin || user.tenant == org.audience {
        Ok(())
    } else {
        Err(ApiError::not_found(format!(
            "No organization with id \"{}\" owned by your tenant",
            org.id
        )))
    }
}

/// `GET /v2/organizations`: `name` (substring, any case), `category`
/// (`shipper`, `inspector`, or `none` for no category), common parameters.
pub async fn list(ctx: Ctx) -> ApiResult<Response> {
    ctx.user()?;
    let pairs = ctx.req.query_pairs();
    let query = listing::parse(pairs, Generation::V2, &FIELDS, &["name", "category"])?;
    let name = ctx.req.query("name").map(crate::validate::fold);
    let category = match ctx.req.query("category") {
        None => None,
        Some("none" | "null") => Some(None),
        Some(c) if CATEGORIES.contains(&c) => Some(Some(c.to_string())),
        Some(other) => {
            return Err(ApiError::invalid_query(
                "category",
                format!("`category` must be shipper, inspector or none (got \"{other}\")"),
            ));
        }
    };
    let filter = OrganizationFilter { name, category };
    let carry = query.carry.clone();
    let page = ctx
        .read(move |conn| Ok(store::list(conn, &filter, &query)?))
        .await?;
    Ok(page.map(|o| o.v2()).respond(ctx.req.path(), &carry))
}

/// `POST /v2/organizations`: the audience is the caller's tenant.
pub async fn create(mut ctx: Ctx) -> ApiResult<Response> {
    let tenant = ctx.user()?.tenant.clone();
    let (body, prefix) = unwrap_v2(ctx.req.json().await?, Wrapping::Optional)?;
    let input = OrganizationInput::from_json(&body, true).map_err(|e| in_body(e, prefix))?;
    check_audience(input.audience.as_deref(), &tenant).map_err(|e| in_body(e, prefix))?;
    let now = clock::now_ms();
    let org = Organization {
        id: crate::ids::new_id(),
        name: input.name.unwrap_or_default(),
        audience: tenant,
        category: input.category.flatten(),
        created_at: now,
        updated_at: now,
    };
    let stored = org.clone();
    ctx.write(move |conn| store::insert(conn, &stored)).await?;
    Ok(Response::json(201, &org.v2()))
}

/// `GET /v2/organizations/{organization_id}`.
pub async fn get(ctx: Ctx) -> ApiResult<Response> {
    ctx.user()?;
    Ok(Response::json(200, &load(&ctx).await?.v2()))
}

/// `PATCH /v2/organizations/{organization_id}`: `body.name`, `body.category`;
/// the audience never changes.
pub async fn patch(mut ctx: Ctx) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let (body, prefix) = unwrap_v2(ctx.req.json().await?, Wrapping::Required)?;
    let input = OrganizationInput::from_json(&body, false).map_err(|e| in_body(e, prefix))?;
    let id = ctx.req.param("organization_id").to_string();
    let updated = ctx
        .write(move |conn| {
            let mut org = store::get(conn, &id)?.ok_or_else(|| not_found(&id))?;
            check_owner(&user, &org)?;
            check_audience(input.audience.as_deref(), &org.audience)
                .map_err(|e| in_body(e, prefix))?;
            let mut changed = false;
            if let Some(name) = input.name.clone().filter(|n| *n != org.name) {
                org.name = name;
                changed = true;
            }
            if let Some(category) = input.category.clone().filter(|c| *c != org.category) {
                org.category = category;
                changed = true;
            }
            if changed {
                org.updated_at = clock::now_ms();
                store::update(conn, &org)?;
            }
            Ok(org)
        })
        .await?;
    Ok(Response::json(200, &updated.v2()))
}

/// `DELETE /v2/organizations/{organization_id}`: 409 while a workspace refers to it.
pub async fn delete(ctx: Ctx) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let id = ctx.req.param("organization_id").to_string();
    let deleted = ctx
        .write(move |conn| {
            let org = store::get(conn, &id)?.ok_or_else(|| not_found(&id))?;
            check_owner(&user, &org)?;
            store::delete(conn, &id)?;
            Ok(org)
        })
        .await?;
    Ok(Response::json(200, &deleted.v2()))
}
