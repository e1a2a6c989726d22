//! Handlers of `/api/rest/1.0/ports` and `/api/rest/1.0/inland_facilities`.

use std::io::Write;

use bytes::Bytes;
use serde_json::json;

use super::Catalog;
use super::model::{LocationFields, SearchQuery, check_client_code};
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

/// `GET /{catalog}`: search with paging and filters. The page is rendered on
/// the blocking thread, straight from the rows, into the result envelope:
/// `totalResultsAvailable`, `firstResultPosition`, `resultsPerPage`, `results`.
pub async fn search(ctx: Ctx, catalog: Catalog) -> ApiResult<Response> {
    ctx.user()?;
    let query = SearchQuery::from_pairs(ctx.req.query_pairs())?;
    let body = ctx
        .read(move |conn| {
            let mut results = Vec::new();
            let total = store::search(conn, catalog, &query, &mut results)?;
            let mut body = Vec::with_capacity(results.len() + 100);
            write!(
                body,
                "{{\"totalResultsAvailable\":{total},\"firstResultPosition\":{},\"resultsPerPage\":{},\"results\":",
                query.offset() + 1,
                query.results_per_page
            )
            .map_err(ApiError::internal)?;
            body.extend_from_slice(&results);
            body.push(b'}');
            Ok(body)
        })
        .await?;
    Ok(Response::json_bytes(200, Bytes::from(body)))
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
