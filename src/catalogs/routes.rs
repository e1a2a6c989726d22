//! Handlers of `/workspaces/{workspace_id}/catalogs/{catalog}` and its
//! synonym links on the older paths.

use crate::db::Conn;
use serde_json::Value;

use super::store;
use super::synonyms::{self, Scope, Synonym};
use super::{CatalogItem, CatalogName};
use crate::app::{Ctx, Endpoint, handler, resource, session};
use crate::clock;
use crate::envelope;
use crate::envelope::Entity;
use crate::error::{ApiError, ApiResult};
use crate::http::Method::{Delete, Get, Post};
use crate::http::Response;
use crate::listing::Generation::{Older, V2};
use crate::listing::{self, ColumnFields, FieldType, Generation};
use crate::openapi::op::Op;
use crate::openapi::op::Resource;
use crate::openapi::op::tags::{CATALOGS, SYNONYMS};
use crate::openapi::schema::{
    describe, envelope, filters, list_parameters, one_of, query, schema_ref, uuid,
};
use crate::validate::{object, optional_string, unknown_field};
use crate::workspaces::scope::Scope as InWorkspace;

const FIELDS: ColumnFields = ColumnFields(&[
    ("name", "name", FieldType::Text),
    ("xref", "xref", FieldType::Text),
    ("ownerParty", "owner_party", FieldType::Text),
]);
const NO_FIELDS: ColumnFields = ColumnFields(&[]);

const CATALOG: &str = "/workspaces/{workspace_id}/catalogs/{catalog}";
const CATALOG_ITEM: &str = "/workspaces/{workspace_id}/catalogs/{catalog}/{id}";
const SYNONYMS_OF: &str = "/workspaces/{workspace_id}/catalogs/{catalog}/{recordId}/synonyms";
const SYNONYM: &str =
    "/workspaces/{workspace_id}/catalogs/{catalog}/{recordId}/synonyms/{synonymRecordId}";
const V2_WORKSPACE_SYNONYMS: &str = "/v2/workspaces/{workspace_id}/synonyms";
const V2_SYNONYMS_OF: &str = "/v2/workspaces/{workspace_id}/xrefs/{xtype}/{xref_id}/synonyms";
const V2_SYNONYM: &str =
    "/v2/workspaces/{workspace_id}/xrefs/{xtype}/{xref_id}/synonyms/{linked_item_id}";

/// The catalog records' routes (older paths).
pub fn routes() -> Vec<Endpoint> {
    let duplicate: &[&str] = &["`duplicate_xref`: the catalog has a record with this xref"];
    let ops = Resource {
        tag: CATALOGS,
        noun: "catalog record",
        generation: Older,
        read: envelope(Older, "CatalogItem", ""),
        one: Some(schema_ref("CatalogItem")),
        create: schema_ref("CatalogItemWrite"),
        patch: schema_ref("CatalogItemWrite"),
        parameters: list_parameters(Older, filters(&FIELDS)),
        conflicts: [
            duplicate,
            duplicate,
            &["`catalog_item_in_use`: a document refers to the record"],
        ],
    }
    .ops();
    resource(
        CATALOG,
        CATALOG_ITEM,
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

/// The synonym links' routes, on both generations.
pub fn synonym_routes() -> Vec<Endpoint> {
    let older = envelope(Older, "Synonym", "");
    let v2 = envelope(V2, "Synonym", synonyms::ENTITY_TYPE);
    let link_op = |op: Op, schema: &Value| {
        op.ok(201, "Linked", schema.clone()).ok(
            200,
            "Already linked (either order): the existing link",
            schema.clone(),
        )
    };
    let mut workspace_links = list_parameters(V2, Vec::new());
    workspace_links.push(query(
        "xtype",
        "Only links of this catalog",
        describe(
            one_of(&CatalogName::path_names().collect::<Vec<_>>()),
            "A catalog name",
        ),
    ));
    vec![
        session(
            Get,
            SYNONYMS_OF,
            Op::new(SYNONYMS, "Ids of the records linked to a record")
                .parameters(list_parameters(Older, Vec::new()))
                .list("Record ids", uuid("A linked record")),
            list_synonyms,
        ),
        session(
            Post,
            SYNONYM,
            link_op(Op::new(SYNONYMS, "Link two records"), &older),
            add_synonym,
        ),
        session(
            Get,
            SYNONYM,
            Op::new(
                SYNONYMS,
                "The link between two records (404 when not linked)",
            )
            .ok(200, "The link", older),
            check_synonym,
        ),
        session(
            Delete,
            SYNONYM,
            Op::new(SYNONYMS, "Unlink two records (404 when not linked)").ok(
                200,
                "The body of the record that was unlinked",
                schema_ref("CatalogItem"),
            ),
            remove_synonym,
        ),
        session(
            Get,
            V2_WORKSPACE_SYNONYMS,
            Op::new(SYNONYMS, "Every link of a workspace")
                .parameters(workspace_links)
                .list("The links", v2.clone()),
            v2_workspace_synonyms,
        ),
        session(
            Get,
            V2_SYNONYMS_OF,
            Op::new(SYNONYMS, "The links of one record")
                .parameters(list_parameters(V2, Vec::new()))
                .list("The links", v2.clone()),
            v2_record_synonyms,
        ),
        session(
            Post,
            V2_SYNONYM,
            link_op(Op::new(SYNONYMS, "Link two records"), &v2),
            v2_link,
        ),
        session(
            Delete,
            V2_SYNONYM,
            Op::new(SYNONYMS, "Unlink two records (404 when not linked)").ok(
                200,
                "The last known link",
                v2,
            ),
            v2_unlink,
        ),
    ]
}

pub fn load_item(
    conn: &Conn,
    ws: &InWorkspace,
    catalog: CatalogName,
    id: &str,
) -> ApiResult<CatalogItem> {
    store::get(conn, ws.id(), catalog, id)?.ok_or_else(|| {
        ApiError::not_found(format!(
            "No {} record with id \"{id}\" in this workspace",
            catalog.key()
        ))
    })
}

/// `name` and `xref` of a create or patch body; `ownerParty` is the server's
/// to set, so a value sent for it is ignored.
struct ItemInput {
    name: Option<Option<String>>,
    xref: Option<Option<String>>,
}

fn parse_item(body: &Value) -> ApiResult<ItemInput> {
    let mut input = ItemInput {
        name: None,
        xref: None,
    };
    for (key, value) in object(body, "")? {
        match key.as_str() {
            "name" => input.name = Some(optional_string(value, "name", store::NAME_MAX)?),
            "xref" => input.xref = Some(optional_string(value, "xref", store::XREF_MAX)?),
            "ownerParty" => {}
            other => return Err(unknown_field(other, &["name", "xref", "ownerParty"])),
        }
    }
    Ok(input)
}

/// `GET .../catalogs/{catalog}`: filters `name`, `ownerParty`, `xref` (exact).
pub async fn list(ctx: Ctx) -> ApiResult<Response> {
    let query = listing::parse(ctx.req.query_pairs(), Generation::Older, &FIELDS, &[])?;
    let name = ctx.req.param("catalog").to_string();
    let carry = query.carry.clone();
    let page = ctx
        .read_in(move |conn, ws| {
            let catalog = CatalogName::parse(&name)?;
            Ok(store::list(conn, ws.id(), catalog, &query)?)
        })
        .await?;
    Ok(page
        .map(|i| envelope::older(&i.id, i.body()))
        .respond(ctx.req.path(), &carry))
}

/// `POST .../catalogs/{catalog}`: 409 when the xref is taken.
pub async fn create(mut ctx: Ctx) -> ApiResult<Response> {
    let input = parse_item(&ctx.req.json().await?)?;
    let name = ctx.req.param("catalog").to_string();
    let item = ctx
        .write_in(move |conn, ws| {
            let catalog = CatalogName::parse(&name)?;
            let name = input
                .name
                .clone()
                .flatten()
                .filter(|n| !crate::validate::is_blank(n));
            let xref = input.xref.clone().flatten().filter(|x| !x.is_empty());
            if name.is_none() && xref.is_none() {
                return Err(crate::validate::missing("name"));
            }
            let now = clock::now_ms();
            let item = CatalogItem {
                id: crate::ids::new_id(),
                workspace_id: ws.id().to_string(),
                catalog: catalog.key().to_string(),
                name,
                xref,
                owner_party: ws.party(),
                created_at: now,
                updated_at: now,
            };
            store::insert(conn, &item)?;
            Ok(item)
        })
        .await?;
    Ok(Response::json(201, &envelope::older(&item.id, item.body())))
}

/// `GET .../catalogs/{catalog}/{id}`: the body.
pub async fn get(ctx: Ctx) -> ApiResult<Response> {
    let name = ctx.req.param("catalog").to_string();
    let id = ctx.req.param("id").to_string();
    let item = ctx
        .read_point_in(move |conn, ws| {
            let catalog = CatalogName::parse(&name)?;
            load_item(conn, ws, catalog, &id)
        })
        .await?;
    Ok(Response::json(200, &item.body()))
}

/// `PATCH .../catalogs/{catalog}/{id}`: `name`, `xref`.
pub async fn patch(mut ctx: Ctx) -> ApiResult<Response> {
    let input = parse_item(&ctx.req.json().await?)?;
    let name = ctx.req.param("catalog").to_string();
    let id = ctx.req.param("id").to_string();
    let item = ctx
        .write_in(move |conn, ws| {
            let catalog = CatalogName::parse(&name)?;
            let mut item = load_item(conn, ws, catalog, &id)?;
            let before = (item.name.clone(), item.xref.clone());
            if let Some(name) = input.name.clone() {
                item.name = name.filter(|n| !crate::validate::is_blank(n));
            }
            if let Some(xref) = input.xref.clone() {
                item.xref = xref.filter(|x| !x.is_empty());
            }
            if item.name.is_none() && item.xref.is_none() {
                return Err(ApiError::invalid(
                    "name",
                    "A record needs a name or an xref",
                ));
            }
            if (item.name.clone(), item.xref.clone()) != before {
                item.updated_at = clock::now_ms();
                store::update(conn, &item)?;
            }
            Ok(item)
        })
        .await?;
    Ok(Response::json(200, &item.body()))
}

/// `DELETE .../catalogs/{catalog}/{id}`: 409 while a document refers to it.
pub async fn delete(ctx: Ctx) -> ApiResult<Response> {
    let name = ctx.req.param("catalog").to_string();
    let id = ctx.req.param("id").to_string();
    let item = ctx
        .write_in(move |conn, ws| {
            let catalog = CatalogName::parse(&name)?;
            let item = load_item(conn, ws, catalog, &id)?;
            store::delete(conn, &item.id)?;
            Ok(item)
        })
        .await?;
    Ok(Response::json(200, &item.body()))
}

/// `GET .../catalogs/{catalog}/{recordId}/synonyms`: the ids of the linked records.
pub async fn list_synonyms(ctx: Ctx) -> ApiResult<Response> {
    let query = listing::parse(ctx.req.query_pairs(), Generation::Older, &NO_FIELDS, &[])?;
    let name = ctx.req.param("catalog").to_string();
    let record = ctx.req.param("recordId").to_string();
    let carry = query.carry.clone();
    let page = ctx
        .read_in(move |conn, ws| {
            let catalog = CatalogName::parse(&name)?;
            let item = load_item(conn, ws, catalog, &record)?;
            let scope = Scope::Item {
                workspace: ws.id(),
                item: &item.id,
            };
            let links = synonyms::list(conn, &scope, &query)?;
            Ok(links.map(|l| l.other(&item.id).to_string()))
        })
        .await?;
    Ok(page.respond(ctx.req.path(), &carry))
}

/// Links two records of one catalog: 201 with the new link, or 200 with the
/// existing one. Shared with the v2 path.
pub fn link(
    conn: &Conn,
    ws: &InWorkspace,
    catalog: CatalogName,
    base: &str,
    linked: &str,
) -> ApiResult<(bool, Synonym)> {
    let base = load_item(conn, ws, catalog, base)?;
    let linked = load_item(conn, ws, catalog, linked)?;
    if base.id == linked.id {
        return Err(ApiError::invalid(
            "synonymRecordId",
            "A record cannot be a synonym of itself",
        ));
    }
    if let Some(existing) = synonyms::find(conn, &base.id, &linked.id)? {
        return Ok((false, existing));
    }
    let now = clock::now_ms();
    let link = Synonym {
        id: crate::ids::new_id(),
        workspace_id: ws.id().to_string(),
        catalog: catalog.key().to_string(),
        base_item: base.id,
        linked_item: linked.id,
        created_at: now,
        updated_at: now,
    };
    synonyms::insert(conn, &link)?;
    Ok((true, link))
}

/// Removes the link between two records (404 when there is none); answers
/// the link as it was. Shared with the v2 path.
fn unlink(
    conn: &Conn,
    ws: &InWorkspace,
    catalog: CatalogName,
    base: &str,
    linked: &str,
) -> ApiResult<Synonym> {
    let base = load_item(conn, ws, catalog, base)?;
    let link = synonyms::find(conn, &base.id, linked)?.ok_or_else(not_linked)?;
    synonyms::delete(conn, &link.id)?;
    Ok(link)
}

fn not_linked() -> ApiError {
    ApiError::not_found("These two records are not linked as synonyms")
}

/// `POST .../{recordId}/synonyms/{synonymRecordId}`.
pub async fn add_synonym(ctx: Ctx) -> ApiResult<Response> {
    let name = ctx.req.param("catalog").to_string();
    let (base, linked) = (
        ctx.req.param("recordId").to_string(),
        ctx.req.param("synonymRecordId").to_string(),
    );
    let (created, link) = ctx
        .write_in(move |conn, ws| {
            let catalog = CatalogName::parse(&name)?;
            link(conn, ws, catalog, &base, &linked)
        })
        .await?;
    Ok(Response::json(
        if created { 201 } else { 200 },
        &link.render(Generation::Older),
    ))
}

/// `GET .../{recordId}/synonyms/{synonymRecordId}`: the link, or 404.
pub async fn check_synonym(ctx: Ctx) -> ApiResult<Response> {
    let name = ctx.req.param("catalog").to_string();
    let (base, linked) = (
        ctx.req.param("recordId").to_string(),
        ctx.req.param("synonymRecordId").to_string(),
    );
    let link = ctx
        .read_in(move |conn, ws| {
            let catalog = CatalogName::parse(&name)?;
            let base = load_item(conn, ws, catalog, &base)?;
            synonyms::find(conn, &base.id, &linked)?.ok_or_else(not_linked)
        })
        .await?;
    Ok(Response::json(200, &link.render(Generation::Older)))
}

/// `DELETE .../{recordId}/synonyms/{synonymRecordId}`: unlinks; answers the
/// body of the record that was unlinked.
pub async fn remove_synonym(ctx: Ctx) -> ApiResult<Response> {
    let name = ctx.req.param("catalog").to_string();
    let (base, linked) = (
        ctx.req.param("recordId").to_string(),
        ctx.req.param("synonymRecordId").to_string(),
    );
    let item = ctx
        .write_in(move |conn, ws| {
            let catalog = CatalogName::parse(&name)?;
            unlink(conn, ws, catalog, &base, &linked)?;
            load_item(conn, ws, catalog, &linked)
        })
        .await?;
    Ok(Response::json(200, &item.body()))
}

/// `GET /v2/workspaces/{workspace_id}/synonyms`: every link of the workspace,
/// optionally of one catalog (`xtype`).
pub async fn v2_workspace_synonyms(ctx: Ctx) -> ApiResult<Response> {
    let query = listing::parse(
        ctx.req.query_pairs(),
        Generation::V2,
        &NO_FIELDS,
        &["xtype"],
    )?;
    let catalog = match ctx.req.query("xtype") {
        Some(name) => Some(
            CatalogName::from_path(name)
                .ok_or_else(|| {
                    ApiError::invalid_query(
                        "xtype",
                        format!(
                            "`xtype` must be a catalog name: {}",
                            CatalogName::ALL.map(|c| c.key()).join(", ")
                        ),
                    )
                })?
                .key(),
        ),
        None => None,
    };
    let carry = query.carry.clone();
    let page = ctx
        .read_in(move |conn, ws| {
            let scope = Scope::Workspace {
                workspace: ws.id(),
                catalog,
            };
            Ok(synonyms::list(conn, &scope, &query)?)
        })
        .await?;
    Ok(page
        .map(|l| l.render(Generation::V2))
        .respond(ctx.req.path(), &carry))
}

/// The v2 path's catalog (`xtype`) and record (`xref_id`).
struct XrefPath {
    xtype: String,
    record: String,
}

fn xref_path(ctx: &Ctx) -> XrefPath {
    XrefPath {
        xtype: ctx.req.param("xtype").to_string(),
        record: ctx.req.param("xref_id").to_string(),
    }
}

/// `GET /v2/workspaces/{workspace_id}/xrefs/{xtype}/{xref_id}/synonyms`.
pub async fn v2_record_synonyms(ctx: Ctx) -> ApiResult<Response> {
    let query = listing::parse(ctx.req.query_pairs(), Generation::V2, &NO_FIELDS, &[])?;
    let path = xref_path(&ctx);
    let carry = query.carry.clone();
    let page = ctx
        .read_in(move |conn, ws| {
            let catalog = CatalogName::parse(&path.xtype)?;
            let item = load_item(conn, ws, catalog, &path.record)?;
            let scope = Scope::Item {
                workspace: ws.id(),
                item: &item.id,
            };
            Ok(synonyms::list(conn, &scope, &query)?)
        })
        .await?;
    Ok(page
        .map(|l| l.render(Generation::V2))
        .respond(ctx.req.path(), &carry))
}

/// `POST /v2/workspaces/{workspace_id}/xrefs/{xtype}/{xref_id}/synonyms/{linked_item_id}`.
pub async fn v2_link(ctx: Ctx) -> ApiResult<Response> {
    let path = xref_path(&ctx);
    let linked = ctx.req.param("linked_item_id").to_string();
    let (created, link) = ctx
        .write_in(move |conn, ws| {
            let catalog = CatalogName::parse(&path.xtype)?;
            link(conn, ws, catalog, &path.record, &linked)
        })
        .await?;
    Ok(Response::json(
        if created { 201 } else { 200 },
        &link.render(Generation::V2),
    ))
}

/// `DELETE /v2/workspaces/{workspace_id}/xrefs/{xtype}/{xref_id}/synonyms/{linked_item_id}`:
/// answers the last known link.
pub async fn v2_unlink(ctx: Ctx) -> ApiResult<Response> {
    let path = xref_path(&ctx);
    let linked = ctx.req.param("linked_item_id").to_string();
    let link = ctx
        .write_in(move |conn, ws| {
            let catalog = CatalogName::parse(&path.xtype)?;
            unlink(conn, ws, catalog, &path.record, &linked)
        })
        .await?;
    Ok(Response::json(200, &link.render(Generation::V2)))
}
