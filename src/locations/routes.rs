//! Handlers of `/api/rest/1.0/ports` and `/api/rest/1.0/inland_facilities`.

use std::io::Write;

use bytes::Bytes;
use serde_json::{Value, json};

use super::Catalog;
use super::model::{self as location, LocationFields, SearchQuery, check_client_code};
use super::store::{self, Upserted};
use crate::app::{Ctx, Endpoint, session};
use crate::clock;
use crate::db::ReadSize;
use crate::error::{ApiError, ApiResult};
use crate::http::Method::{Delete, Get, Put};
use crate::http::Response;
use crate::openapi::op::Op;
use crate::openapi::op::tags::LOCATIONS;
use crate::openapi::schema::{array, date_time, integer, one_of, query, schema_ref, string};

/// The routes of both catalogs: search, read, create or replace, delete.
pub fn routes() -> Vec<Endpoint> {
    let mut codes = array(json!({"type": "string", "pattern": location::CLIENT_CODE_PATTERN}));
    codes["maxItems"] = Value::from(location::MAX_CLIENT_CODES);
    let client_codes = json!({
        "name": "clientCodes",
        "in": "query",
        "description": format!(
            "Only these codes: a JSON array of at most {}",
            location::MAX_CLIENT_CODES
        ),
        "content": {"application/json": {"schema": codes, "example": ["NLRTM", "BEANR"]}},
    });
    let search_parameters = vec![
        query(
            "page",
            "1-based page",
            json!({"type": "integer", "minimum": 1, "default": 1}),
        ),
        query("resultsPerPage", "Page size", {
            let mut size = integer(1, location::MAX_PAGE_SIZE);
            size["default"] = Value::from(location::DEFAULT_PAGE_SIZE);
            size
        }),
        query(
            "dateModifiedFrom",
            "Modified at or after (inclusive)",
            date_time("RFC 3339"),
        ),
        query(
            "dateModifiedTo",
            "Modified before (exclusive)",
            date_time("RFC 3339"),
        ),
        client_codes,
        query(
            "countryCode",
            "Exact ISO 3166-1 alpha-2 code",
            json!({"type": "string", "pattern": "^[A-Z]{2}$", "examples": ["NL"]}),
        ),
        query("statusCode", "Exact status", one_of(location::STATUSES)),
        query("name", "Case-insensitive substring of the name", string()),
    ];
    let mut routes = Vec::new();
    for catalog in Catalog::ALL {
        let (collection, item) = catalog.patterns();
        let key = catalog.key();
        routes.extend([
            session(
                Get,
                collection,
                Op::new(LOCATIONS, format!("Search {key}, ordered by clientCode"))
                    .parameters(search_parameters.clone())
                    .ok(
                        200,
                        "One page of matches",
                        schema_ref("LocationSearchResult"),
                    ),
                move |ctx| search(ctx, catalog),
            ),
            session(
                Get,
                item,
                Op::new(LOCATIONS, format!("Read one of {key}")).ok(
                    200,
                    "The record",
                    schema_ref("Location"),
                ),
                move |ctx| get(ctx, catalog),
            ),
            session(
                Put,
                item,
                Op::new(LOCATIONS, format!("Create or replace one of {key}"))
                    .json_body(schema_ref("LocationWrite"))
                    .ok(
                        200,
                        "Replaced; the stored write shape",
                        schema_ref("LocationWrite"),
                    )
                    .ok(
                        201,
                        "Created; the stored write shape",
                        schema_ref("LocationWrite"),
                    ),
                move |ctx| put(ctx, catalog),
            ),
            session(
                Delete,
                item,
                Op::new(
                    LOCATIONS,
                    format!("Deactivate an active record of {key}, remove an inactive one"),
                )
                .ok(200, "What became of it", schema_ref("ResourceStatus")),
                move |ctx| delete(ctx, catalog),
            ),
        ]);
    }
    routes
}

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
    let cache_key = crate::db::cache::Key::new(&[catalog.key(), "/", &code]);
    if let Some(body) = cache_key.as_ref().and_then(|key| ctx.cached(key)) {
        return Ok(Response::json_bytes(200, body));
    }
    let lookup = code.clone();
    let (read_at, found) = ctx
        .read_sized(ReadSize::Point, move |conn| {
            Ok(store::get(conn, catalog, &lookup)?)
        })
        .await?;
    let location = found.ok_or_else(|| not_found(catalog, &code))?;
    let body = Bytes::from(serde_json::to_vec(&location).map_err(ApiError::internal)?);
    if let Some(key) = cache_key {
        ctx.remember(read_at, key, body.clone());
    }
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
        .write(move |conn| store::put(conn, catalog, &code, &stored, &username, clock::now_ms()))
        .await?
        .outcome()?;
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
