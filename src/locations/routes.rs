//! Handlers of `/api/rest/1.0/ports` and `/api/rest/1.0/inland_facilities`.

use bytes::Bytes;
use serde::Serialize;
use serde_json::json;

use super::Catalog;
use super::model::{Location, LocationFields, SearchQuery, check_client_code};
use super::store::{self, Upserted};
use crate::app::Ctx;
use crate::clock;
use crate::error::{ApiError, ApiResult};
use crate::http::Response;

fn client_code(ctx: &Ctx) -> ApiResult<String> {
    let code = ctx.req.param("clientCode");
    check_client_code(code, "clientCode")?;
    Ok(code.to_string())
}

fn not_found(catalog: Catalog, code: &str) -> ApiError {
    ApiError::not_found(format!("No {} with clientCode \"{code}\"", catalog.noun()))
}

/// The search result envelope.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SearchPage {
    total_results_available: i64,
    first_result_position: i64,
    results_per_page: i64,
    results: Vec<Location>,
}

/// `GET /{catalog}`: search with paging and filters.
pub async fn search(ctx: Ctx, catalog: Catalog) -> ApiResult<Response> {
    ctx.user()?;
    let query = SearchQuery::from_pairs(ctx.req.query_pairs())?;
    let q = query.clone();
    let (total, results) = ctx
        .read(move |conn| Ok(store::search(conn, catalog, &q)?))
        .await?;
    Ok(Response::json(
        200,
        &SearchPage {
            total_results_available: total,
            first_result_position: query.offset() + 1,
            results_per_page: query.results_per_page,
            results,
        },
    ))
}

/// `GET /{catalog}/{clientCode}`: one record, read shape.
///
/// The catalogs are the same for every caller and read far more often than
/// written, so the rendered record is kept until the next commit.
pub async fn get(ctx: Ctx, catalog: Catalog) -> ApiResult<Response> {
    ctx.user()?;
    let code = client_code(&ctx)?;
    let cache_key = format!("{}/{code}", catalog.key());
    if let Some(body) = ctx.cached(&cache_key) {
        return Ok(Response::json_bytes(200, body));
    }
    let lookup = code.clone();
    let (read_at, found) = ctx
        .read_at(move |conn| Ok(store::get(conn, catalog, &lookup)?))
        .await?;
    let location = found.ok_or_else(|| not_found(catalog, &code))?;
    let body = Bytes::from(serde_json::to_vec(&location).map_err(ApiError::internal)?);
    ctx.remember(read_at, cache_key, body.clone());
    Ok(Response::json_bytes(200, body))
}

/// `PUT /{catalog}/{clientCode}`: create (201) or replace (200); answers the
/// stored write shape.
pub async fn put(mut ctx: Ctx, catalog: Catalog) -> ApiResult<Response> {
    let username = ctx.user()?.username.clone();
    let code = client_code(&ctx)?;
    let body = ctx.req.json().await?;
    let fields = LocationFields::from_json(&body, &code)?;
    let stored = fields.clone();
    let outcome = ctx
        .write(move |conn| {
            Ok(store::upsert(
                conn,
                catalog,
                &code,
                &stored,
                &username,
                clock::now_ms(),
            )?)
        })
        .await?;
    let status = if outcome == Upserted::Created {
        201
    } else {
        200
    };
    Ok(Response::json(status, &fields))
}

/// `DELETE /{catalog}/{clientCode}`: deactivate an active record, remove an
/// inactive one.
pub async fn delete(ctx: Ctx, catalog: Catalog) -> ApiResult<Response> {
    let username = ctx.user()?.username.clone();
    let code = client_code(&ctx)?;
    let target = code.clone();
    let status = ctx
        .write(move |conn| {
            Ok(store::delete_or_deactivate(
                conn,
                catalog,
                &target,
                &username,
                clock::now_ms(),
            )?)
        })
        .await?
        .ok_or_else(|| not_found(catalog, &code))?;
    Ok(Response::json(
        200,
        &json!({"clientCode": code, "statusCode": status}),
    ))
}
