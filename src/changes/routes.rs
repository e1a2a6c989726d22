//! The three feeds of the change log: `GET /v2/changes` (everything the
//! caller may read), `GET /v2/workspaces/{workspace_id}/changes` and
//! `GET /api/rest/1.0/changes` (the location catalogs). Each answers a page
//! `{"changes": [...], "next": N}`, waits for one with `wait=SECONDS`
//! (long-poll), or, asked for `text/event-stream`, streams Server-Sent Events
//! until the client leaves or the server shuts down.

use std::time::Duration;

use bytes::Bytes;
use serde_json::json;
use tokio::time::Instant;

use super::{Feed, LIMIT_DEFAULT, LIMIT_MAX, Page, Query, TypeFilter, Viewer};
use crate::app::{Ctx, Endpoint, Follow, Wake, session};
use crate::error::{ApiError, ApiResult};
use crate::http::{Method::Get, Response};
use crate::listing::{distinct_params, whole_number_param};
use crate::openapi::op::Op;
use crate::openapi::op::tags::CHANGES;
use crate::openapi::schema::{array, describe, integer, object, query, schema_ref, string};

/// Longest `wait` a long-poll may ask for, in seconds.
pub const WAIT_MAX_SECS: u64 = 60;
/// Entries per event batch of a live stream catching up.
const STREAM_PAGE: usize = LIMIT_MAX;

/// Which feed a route serves.
#[derive(Clone, Copy)]
enum Which {
    Everything,
    Workspace,
    Locations,
}

pub fn routes() -> Vec<Endpoint> {
    vec![
        session(
            Get,
            "/v2/changes",
            op(
                "The changes of every record the caller may read: organizations, the \
                 workspaces of the caller's tenant and their records, and the location catalogs",
            ),
            |ctx| feed(ctx, Which::Everything),
        ),
        session(
            Get,
            "/v2/workspaces/{workspace_id}/changes",
            op("The changes of one workspace's records").error(
                410,
                Some("`cursor_expired`: the cursor is outside what the change log keeps"),
            ),
            |ctx| feed(ctx, Which::Workspace),
        ),
        session(
            Get,
            "/api/rest/1.0/changes",
            op("The changes of the ports and inland facilities catalogs"),
            |ctx| feed(ctx, Which::Locations),
        ),
    ]
}

fn op(summary: &str) -> Op {
    let page = object(
        vec![
            ("changes", array(schema_ref("Change"))),
            (
                "next",
                describe(
                    integer(0, i64::MAX),
                    "The cursor to pass back as `since` (the last sequence looked at)",
                ),
            ),
        ],
        &["changes", "next"],
    );
    Op::new(CHANGES, summary)
        .parameters([
            query(
                "since",
                "The last sequence seen (`next` of the previous answer), or `now` for only \
                 what comes next; 0 (the default) reads from the first change, and answers \
                 410 `cursor_expired` once retention has removed changes",
                json!({
                    "oneOf": [{"type": "integer", "minimum": 0}, {"const": "now"}],
                    "examples": ["now", 0],
                }),
            ),
            query(
                "limit",
                &format!("Most changes in one answer (default {LIMIT_DEFAULT})"),
                integer(1, LIMIT_MAX as i64),
            ),
            query(
                "types",
                "Only these event types, comma-separated: `job.created`, or `qualityResult.*` \
                 for every event of one entity",
                json!({"type": "string", "examples": ["job.created,qualityResult.*"]}),
            ),
            query(
                "wait",
                "Long-poll: when nothing is past `since`, wait up to this many seconds for \
                 the first change, then answer",
                integer(0, WAIT_MAX_SECS as i64),
            ),
        ])
        .answer(
            200,
            "A page of changes in sequence order, and the cursor to continue from; or, with \
             `Accept: text/event-stream`, a live stream: one event per change (`id:` its \
             sequence, `event:` its type, `data:` the change), resumed from `Last-Event-ID`, \
             with a comment line every 15 s while idle",
            json!({
                "application/json": {"schema": page},
                "text/event-stream": {"schema": string()},
            }),
            &[],
        )
        .error(
            410,
            Some("`cursor_expired`: the cursor is outside what the change log keeps; list again, then continue from the error's `next`"),
        )
}

/// The parameters of a feed request.
struct Params {
    since: Since,
    limit: usize,
    types: Option<TypeFilter>,
    wait: Duration,
    stream: bool,
}

#[derive(Clone, Copy)]
enum Since {
    Seq(u64),
    Now,
}

fn parse(ctx: &Ctx) -> ApiResult<Params> {
    let mut params = Params {
        since: Since::Seq(0),
        limit: LIMIT_DEFAULT,
        types: None,
        wait: Duration::ZERO,
        stream: ctx
            .req
            .header("accept")
            .is_some_and(|a| a.contains("text/event-stream")),
    };
    for (name, value) in distinct_params(ctx.req.query_pairs(), &[])? {
        match name {
            "since" if value == "now" => params.since = Since::Now,
            "since" => {
                params.since = Since::Seq(whole_number_param(name, value, 0, i64::MAX)? as u64)
            }
            "limit" => {
                params.limit = whole_number_param(name, value, 1, LIMIT_MAX as i64)? as usize
            }
            "types" => params.types = Some(TypeFilter::parse(value, name)?),
            "wait" => {
                let seconds = whole_number_param(name, value, 0, WAIT_MAX_SECS as i64)?;
                params.wait = Duration::from_secs(seconds as u64)
            }
            other => {
                return Err(ApiError::invalid_query(
                    other,
                    format!(
                        "Unknown query parameter `{other}`; the feed takes since, limit, types \
                         and wait"
                    ),
                ));
            }
        }
    }
    if params.stream {
        if let Some(last) = ctx.req.header("last-event-id") {
            params.since = Since::Seq(last.trim().parse().map_err(|_| ApiError::BadRequest {
                code: "invalid_header",
                message: format!("`Last-Event-ID` must be a change sequence, not {last:?}"),
                field: Some("Last-Event-ID".into()),
            })?);
        }
    }
    Ok(params)
}

/// Reads one page of `which` for the caller, past `since` (`now`: the head).
async fn read(
    ctx: &Ctx,
    which: Which,
    since: Since,
    limit: usize,
    types: Option<TypeFilter>,
) -> ApiResult<Page> {
    let user = ctx.user()?;
    let viewer = Viewer {
        tenant: user.tenant.clone(),
        is_admin: user.is_admin,
    };
    let page = move |conn: &crate::db::Conn, feed: Feed| {
        let since = match since {
            Since::Seq(n) => n,
            Since::Now => super::head(conn)?,
        };
        let query = Query {
            feed,
            since,
            limit,
            types,
        };
        super::read(conn, &viewer, &query)
    };
    match which {
        Which::Everything => ctx.read(move |conn| page(conn, Feed::Everything)).await,
        Which::Locations => ctx.read(move |conn| page(conn, Feed::Locations)).await,
        Which::Workspace => {
            ctx.read_in(move |conn, scope| page(conn, Feed::Workspace(scope.id().to_string())))
                .await
        }
    }
}

async fn feed(ctx: Ctx, which: Which) -> ApiResult<Response> {
    let params = parse(&ctx)?;
    // Taken before the first read, so that nothing committed after that
    // read can go unnoticed by a wait.
    let follow = ctx.follow().await;
    let first = read(
        &ctx,
        which,
        params.since,
        params.limit,
        params.types.clone(),
    )
    .await?;
    if params.stream {
        return Ok(stream(ctx, follow, which, first, params.types));
    }
    if first.entries.is_empty() && !params.wait.is_zero() {
        return long_poll(&ctx, follow, which, &first, &params).await;
    }
    Ok(page_response(&first))
}

fn page_response(page: &Page) -> Response {
    Response::json_bytes(200, Bytes::from(page.to_json())).header("cache-control", "no-store")
}

/// Waits for the first change past the `first` page (which had none), at
/// most `params.wait`; reads on at once while the log holds more than was
/// looked at.
async fn long_poll(
    ctx: &Ctx,
    mut follow: Follow,
    which: Which,
    first: &Page,
    params: &Params,
) -> ApiResult<Response> {
    let deadline = Instant::now() + params.wait;
    let mut seen = first.next;
    let mut caught_up = first.caught_up();
    loop {
        if caught_up {
            match follow.wait(seen, deadline).await {
                Wake::Moved => {}
                Wake::Timeout | Wake::Closing => break,
            }
        } else if Instant::now() >= deadline || follow.closing() {
            break;
        }
        let page = read(
            ctx,
            which,
            Since::Seq(seen),
            params.limit,
            params.types.clone(),
        )
        .await?;
        if !page.entries.is_empty() {
            return Ok(page_response(&page));
        }
        seen = page.next;
        caught_up = page.caught_up();
    }
    Ok(page_response(&Page {
        entries: Vec::new(),
        next: seen,
        head: seen,
    }))
}

/// A live stream: the first page at once, then every change as it commits.
fn stream(
    ctx: Ctx,
    mut follow: Follow,
    which: Which,
    first: Page,
    types: Option<TypeFilter>,
) -> Response {
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(8);
    let heartbeat = ctx.app.settings.changes_heartbeat;
    tokio::spawn(async move {
        let mut seen;
        // Something is sent at least every `heartbeat`: events or a comment.
        let mut quiet_since = Instant::now();
        let hello = "retry: 2000\n: connected\n\n";
        if sender.send(Ok(Bytes::from(hello))).await.is_err() {
            return;
        }
        let mut page = first;
        let mut signed_in_at = Instant::now();
        loop {
            // The session is checked again as often as a heartbeat goes out:
            // a logout or an expiry ends the stream.
            if signed_in_at.elapsed() >= heartbeat {
                if !ctx.still_signed_in().await {
                    let _ = sender.send(Ok(Bytes::from(": session ended\n\n"))).await;
                    return;
                }
                signed_in_at = Instant::now();
            }
            if !page.entries.is_empty() {
                let mut batch = String::new();
                for entry in &page.entries {
                    batch.push_str(&format!(
                        "id: {}\nevent: {}\ndata: {}\n\n",
                        entry.seq, entry.event_type, entry.json
                    ));
                }
                if sender.send(Ok(Bytes::from(batch))).await.is_err() {
                    return;
                }
                quiet_since = Instant::now();
            }
            seen = page.next;
            if page.caught_up() {
                // Caught up: wait for the next commit, a heartbeat or shutdown.
                match follow.wait(seen, quiet_since + heartbeat).await {
                    Wake::Moved => {}
                    Wake::Closing => break,
                    Wake::Timeout => {
                        if sender
                            .send(Ok(Bytes::from(": heartbeat\n\n")))
                            .await
                            .is_err()
                        {
                            return;
                        }
                        quiet_since = Instant::now();
                        page = Page {
                            entries: Vec::new(),
                            next: seen,
                            head: seen,
                        };
                        continue;
                    }
                }
            }
            page = match read(&ctx, which, Since::Seq(seen), STREAM_PAGE, types.clone()).await {
                Ok(page) => page,
                Err(err) => {
                    // The stream cannot say it in a status any more: say it in
                    // an event the client can read, then end.
                    let event = format!("event: error\ndata: {}\n\n", err.body());
                    let _ = sender.send(Ok(Bytes::from(event))).await;
                    return;
                }
            };
            if follow.closing() {
                break;
            }
        }
        let _ = sender
            .send(Ok(Bytes::from(": the server is shutting down\n\n")))
            .await;
    });
    Response::stream(200, receiver)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-store")
        .header("x-accel-buffering", "no")
}
