//! The delivery worker: one task that finds webhooks with work and runs one
//! *turn* per webhook at a time, so each webhook has at most one delivery in
//! flight and receives its changes in sequence order, while a slow receiver
//! holds up only itself.
//!
//! A turn first sends the redeliveries queued for the webhook, then reads the
//! change log past the webhook's cursor with its owner's visibility
//! (`changes::read` with the owner's [`Viewer`], the webhook's feed and type
//! filter) and POSTs up to [`BATCH`] changes one after another. A success is
//! logged in the same write that moves the cursor, so a crash between the two
//! cannot happen; a crash after the POST and before that write sends the
//! change again (at least once). A failure is logged, and the webhook waits
//! `retry_base * 2^(failures-1)` before the next attempt at that change, until
//! `retry_max` after its first failure; if the attempt at that moment fails
//! too, the webhook is disabled with the reason.
//!
//! The worker looks for work when a commit appends changes
//! (`Db::changes_head`), when a handler [`nudge`]s it (a new or re-enabled
//! webhook, a queued redelivery: writes that append no change), when a retry
//! falls due, and every few seconds regardless. At shutdown the turns in
//! flight are dropped; what they had not logged is sent again after restart.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{Delivery, Webhook, outcome, sign, store};
use crate::changes::{self, Feed, Page, Query, Viewer};
use crate::clock;
use crate::db::Db;
use crate::error::{ApiError, ApiResult};
use crate::http::client::{Client, Outcome};

/// Changes one turn delivers at most: bounded work per wake.
pub const BATCH: usize = 50;
/// Queued redeliveries one turn sends at most.
const REDELIVERIES_PER_TURN: usize = 10;
/// The worker looks for work at least this often.
const IDLE_LOOK: Duration = Duration::from_secs(5);
/// How often it looks on PostgreSQL, where other server processes commit
/// changes this process's head does not see (their commits wake nothing here).
const IDLE_LOOK_SHARED: Duration = Duration::from_secs(1);
/// How long a turn that met a fault of the server (not of the receiver)
/// waits before it ends, so that a persistent fault does not spin.
const AFTER_A_FAULT: Duration = Duration::from_secs(1);
/// A webhook whose filters skip this many changes has its cursor moved past
/// them, so that retention cannot overtake a cursor that only waits; so has
/// one whose skips this process has not stored for
/// [`Config::persist_skips_every`] (a quiet log may take longer than the
/// retention to write this many).
const SKIP_PERSIST: u64 = 1000;

/// The longest a waiting webhook's stored cursor stays behind what the
/// worker found nothing in for it, given the change log's retention: a
/// quarter of it, at most an hour. What the worker knows past the stored
/// cursor is lost at a restart; read again from a cursor retention had
/// overtaken, it would be a 410, and the webhook disabled for having missed
/// nothing.
pub fn persist_skips_every(retention: Duration) -> Duration {
    (retention / 4).min(Duration::from_secs(3600))
}

pub const USER_AGENT: &str = concat!("Quayside-Webhooks/", env!("CARGO_PKG_VERSION"));

/// How deliveries are made; `serve`'s options fill it.
pub struct Config {
    pub client: Client,
    /// The wait after the first failure; doubled after each further one.
    pub retry_base: Duration,
    /// How long a change may keep failing before the webhook is disabled.
    pub retry_max: Duration,
    /// See [`persist_skips_every`].
    pub persist_skips_every: Duration,
}

static WAKE: Notify = Notify::const_new();

/// Tells the worker to look for work now: after a write that appends no
/// change but gives it some (a new or re-enabled webhook, a queued redelivery).
pub fn nudge() {
    WAKE.notify_one();
}

/// Runs until `closing` turns true (the server begins shutting down, or on
/// PostgreSQL this process lost the lease of `db::lease`: one process of
/// several delivers).
pub async fn run(db: Db, config: Arc<Config>, mut closing: tokio::sync::watch::Receiver<bool>) {
    let shutdown = async move {
        let _ = closing.wait_for(|closing| *closing).await;
    };
    let mut head = db.changes_head();
    let mut head_open = true;
    // On PostgreSQL, other processes' commits heard (`db::pg::listen`).
    let mut elsewhere = db.changes_elsewhere();
    let mut turns: JoinSet<u64> = JoinSet::new();
    // Which webhook each running turn serves.
    let mut running: HashMap<tokio::task::Id, String> = HashMap::new();
    // Per webhook: up to where the log holds nothing for it past its cursor.
    // A change of its settings (through any process) applies from there on:
    // what was passed over is not looked at again (docs/api.md, Webhooks).
    let mut scanned: HashMap<String, u64> = HashMap::new();
    // Per webhook: when this process last stored a cursor it moved past
    // changes the webhook skips.
    let skips_stored: SkipsStored = Arc::default();
    tokio::pin!(shutdown);
    loop {
        let head_seq = *head.borrow_and_update();
        // With no active webhook a commit gives no work: only a nudge does.
        let (wake_at, any_active) = match look(
            &db,
            &config,
            head_seq,
            &mut turns,
            &mut running,
            &mut scanned,
            &skips_stored,
        )
        .await
        {
            Ok(found) => found,
            Err(err) => {
                log::error!("webhooks: cannot look for work: {}", err.chain());
                (Instant::now() + AFTER_A_FAULT, true)
            }
        };
        tokio::select! {
            () = &mut shutdown => break,
            changed = head.changed(), if head_open && any_active => head_open = changed.is_ok(),
            () = crate::db::heard_elsewhere(elsewhere.as_mut()), if any_active => {},
            // What was scanned stays: new settings apply from there on.
            () = WAKE.notified() => {},
            () = tokio::time::sleep_until(wake_at) => {},
            Some(done) = turns.join_next_with_id() => match done {
                Ok((task, reached)) => {
                    if let Some(id) = running.remove(&task) {
                        scanned.insert(id, reached);
                    }
                }
                Err(err) => {
                    let id = running.remove(&err.id());
                    log::error!("webhooks: the turn of webhook {id:?} failed: {err}");
                }
            },
        }
    }
    turns.shutdown().await;
    log::info!("webhooks: delivery worker stopped");
}

/// When this process last stored each webhook's cursor past skipped changes.
type SkipsStored = Arc<std::sync::Mutex<HashMap<String, std::time::Instant>>>;

/// Whether webhook `id`'s skips are due to be stored: never stored by this
/// process, or not for `every`.
fn skips_due(skips_stored: &SkipsStored, id: &str, every: Duration) -> bool {
    skips_stored
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(id)
        .is_none_or(|at| at.elapsed() >= every)
}

/// Starts a turn for each webhook with work due; answers when to look again,
/// and whether any webhook is active.
async fn look(
    db: &Db,
    config: &Arc<Config>,
    head: u64,
    turns: &mut JoinSet<u64>,
    running: &mut HashMap<tokio::task::Id, String>,
    scanned: &mut HashMap<String, u64>,
    skips_stored: &SkipsStored,
) -> ApiResult<(Instant, bool)> {
    // The head is read from the store, with the candidates: other writers
    // append changes too (other server processes on PostgreSQL, the CLI's
    // import on either engine), which this process's writer does not see.
    let shared = db.shared();
    let (candidates, stored_head) = db
        .read(move |conn, _| Ok((store::candidates(conn)?, changes::head(conn)?)))
        .await?;
    let head = head.max(stored_head);
    // Nothing is kept of webhooks deleted or disabled since.
    scanned.retain(|id, _| candidates.iter().any(|w| w.id == *id));
    skips_stored
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|id, _| candidates.iter().any(|w| w.id == *id));
    let now = clock::now_ms();
    let any_active = candidates.iter().any(|w| w.active);
    let mut next_due: Option<i64> = None;
    // When a webhook's skips will be due to be stored.
    let mut store_skips_by: Option<Instant> = None;
    for webhook in candidates {
        if running.values().any(|id| *id == webhook.id) {
            continue;
        }
        let reached = scanned.get(&webhook.id).copied().unwrap_or(0);
        let from = webhook.cursor.max(reached);
        // Found nothing for it past its stored cursor, and not stored for a
        // while: a turn stores it (see `persist_skips_every`).
        let unstored = reached > webhook.cursor;
        if webhook.active && unstored {
            store_skips_by = Some(Instant::now() + config.persist_skips_every);
        }
        let store_now =
            unstored && skips_due(skips_stored, &webhook.id, config.persist_skips_every);
        let waiting = webhook.active && (from < head || store_now);
        let due = webhook.next_attempt_at.is_none_or(|at| at <= now);
        if webhook.queued || (waiting && due) {
            let task = turns.spawn(turn(
                db.clone(),
                config.clone(),
                skips_stored.clone(),
                webhook.id.clone(),
                from,
            ));
            running.insert(task.id(), webhook.id);
        } else if waiting {
            next_due = next_due
                .min(webhook.next_attempt_at)
                .or(webhook.next_attempt_at);
        }
    }
    let idle = Instant::now() + if shared { IDLE_LOOK_SHARED } else { IDLE_LOOK };
    let wake_at = match next_due {
        Some(at) => idle.min(Instant::now() + Duration::from_millis((at - now).max(0) as u64)),
        None => idle,
    };
    let wake_at = store_skips_by.map_or(wake_at, |by| wake_at.min(by));
    Ok((wake_at, any_active))
}

/// What a turn reads first, in one transaction.
struct Plan {
    hook: Webhook,
    /// Whether the webhook's owner reads as an admin (see [`store::reads_as_admin`]).
    is_admin: bool,
    queued: Vec<Delivery>,
}

fn feed(hook: &Webhook) -> Feed {
    match &hook.workspace_id {
        Some(workspace) => Feed::Workspace(workspace.clone()),
        None => Feed::Everything,
    }
}

/// One webhook's turn: its queued redeliveries, then up to [`BATCH`] changes
/// past `from`. Answers up to where nothing is left for it.
async fn turn(
    db: Db,
    config: Arc<Config>,
    skips_stored: SkipsStored,
    id: String,
    from: u64,
) -> u64 {
    let plan = db
        .read(move |conn, _| {
            let Some(hook) = store::get(conn, &id)? else {
                return Ok(None);
            };
            let is_admin = store::reads_as_admin(conn, &hook)?;
            let queued = store::queued(conn, &hook.id, REDELIVERIES_PER_TURN)?;
            Ok(Some(Plan {
                hook,
                is_admin,
                queued,
            }))
        })
        .await;
    let plan = match plan {
        Ok(Some(plan)) => plan,
        Ok(None) => return from,
        Err(err) => {
            log::error!("webhooks: cannot read a webhook: {}", err.chain());
            tokio::time::sleep(AFTER_A_FAULT).await;
            return from;
        }
    };
    for queued in plan.queued.clone() {
        redeliver(&db, &config, &plan, queued).await;
    }
    let now = clock::now_ms();
    let hook = &plan.hook;
    if !hook.active || hook.next_attempt_at.is_some_and(|at| at > now) {
        return from;
    }
    let page = read_page(&db, &plan, from, BATCH, false).await;
    let page = match page {
        Ok(page) => page,
        Err(err) => {
            stop_on(&db, hook, err).await;
            return from;
        }
    };
    if page.entries.is_empty() {
        let stale = skips_due(&skips_stored, &hook.id, config.persist_skips_every);
        if page.next >= hook.cursor + SKIP_PERSIST || (page.next > hook.cursor && stale) {
            let (id, cursor, next) = (hook.id.clone(), hook.cursor, page.next);
            let moved = db
                .write(move |conn| Ok(store::skipped(conn, &id, cursor, next)?))
                .await;
            match moved {
                Ok(()) => {
                    skips_stored
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(hook.id.clone(), std::time::Instant::now());
                }
                Err(err) => log::warn!("webhooks: cannot move a cursor: {}", err.chain()),
            }
        }
        return page.next.max(from);
    }
    let mut failures = hook.failures;
    let mut failing_since = hook.failing_since;
    for entry in &page.entries {
        let sent = send(&config, hook, &entry.event_id, &entry.json).await;
        let attempt = failures + 1;
        let delivery = attempt_record(
            hook,
            entry.seq,
            &entry.event_id,
            &entry.event_type,
            attempt,
            &sent,
        );
        if sent.succeeded() {
            let seq = entry.seq;
            let logged = db
                .write(move |conn| {
                    let still_active = store::delivered(conn, &delivery.webhook_id, seq)?;
                    if still_active.is_some() {
                        store::save_delivery(conn, &delivery)?;
                    }
                    Ok(still_active == Some(true))
                })
                .await;
            match logged {
                Ok(true) => {
                    failures = 0;
                    failing_since = None;
                }
                Ok(false) => return seq,
                Err(err) => {
                    log::error!("webhooks: cannot log a delivery: {}", err.chain());
                    tokio::time::sleep(AFTER_A_FAULT).await;
                    return from;
                }
            }
        } else {
            let now = clock::now_ms();
            let since = failing_since.unwrap_or(delivery.created_at);
            let (next_attempt_at, disabled) = retry(&config, attempt, since, now, &sent);
            let id = hook.id.clone();
            let logged = db
                .write(move |conn| {
                    store::save_delivery(conn, &delivery)?;
                    store::failed(
                        conn,
                        &id,
                        attempt,
                        since,
                        next_attempt_at,
                        disabled.as_deref(),
                        now,
                    )?;
                    Ok(())
                })
                .await;
            if let Err(err) = logged {
                log::error!("webhooks: cannot log a failed delivery: {}", err.chain());
                tokio::time::sleep(AFTER_A_FAULT).await;
            }
            return entry.seq.saturating_sub(1).max(from);
        }
    }
    if page.entries.len() < BATCH {
        page.next.max(from)
    } else {
        page.entries.last().map_or(from, |e| e.seq)
    }
}

/// The changes past `since` the webhook's owner may read; of its types unless
/// `all_types`.
async fn read_page(
    db: &Db,
    plan: &Plan,
    since: u64,
    limit: usize,
    all_types: bool,
) -> ApiResult<Page> {
    let hook = plan.hook.clone();
    let viewer = Viewer {
        tenant: hook.tenant.clone(),
        is_admin: plan.is_admin,
    };
    db.read(move |conn, _| {
        let query = Query {
            feed: feed(&hook),
            since,
            limit,
            types: if all_types { None } else { hook.type_filter()? },
        };
        changes::read(conn, &viewer, &query)
    })
    .await
}

/// When the next attempt is due, or why the webhook is disabled: the retry
/// window of `retry_max` from the first failure is over.
fn retry(
    config: &Config,
    failures: i64,
    failing_since: i64,
    now: i64,
    sent: &Outcome,
) -> (Option<i64>, Option<String>) {
    let window = config.retry_max.as_millis() as i64;
    let deadline = failing_since.saturating_add(window);
    if now >= deadline {
        let reason = format!(
            "Deliveries failed for {} ({failures} attempts at one change; the last: {}). \
             Re-enable with PATCH active=true: delivery resumes from the cursor",
            span(config.retry_max),
            sent.error.as_deref().unwrap_or("failed")
        );
        return (None, Some(reason));
    }
    let base = config.retry_base.as_millis() as i64;
    let doubling = 1i64 << (failures - 1).clamp(0, 40);
    let wait = base.saturating_mul(doubling);
    (Some(now.saturating_add(wait).min(deadline)), None)
}

/// `3 days`, `2 s`, `50 ms`.
fn span(d: Duration) -> String {
    let ms = d.as_millis();
    for (unit, size) in [
        ("days", 86_400_000),
        ("hours", 3_600_000),
        ("min", 60_000),
        ("s", 1000),
    ] {
        if ms >= size && ms % size == 0 {
            return format!("{} {unit}", ms / size);
        }
    }
    format!("{ms} ms")
}

/// One signed POST of a change.
async fn send(config: &Config, hook: &Webhook, event_id: &str, json: &str) -> Outcome {
    let now = clock::now_ms();
    let body = Bytes::copy_from_slice(json.as_bytes());
    let signature = sign::header(now.div_euclid(1000), &body, &hook.signing_secrets(now));
    let headers = [
        ("content-type", "application/json"),
        ("user-agent", USER_AGENT),
        ("quayside-event-id", event_id),
        ("quayside-signature", signature.as_str()),
    ];
    config.client.post(&hook.url, &headers, body).await
}

fn attempt_record(
    hook: &Webhook,
    seq: u64,
    event_id: &str,
    event_type: &str,
    attempt: i64,
    sent: &Outcome,
) -> Delivery {
    let now = clock::now_ms();
    let duration_ms = sent.duration.as_millis() as i64;
    Delivery {
        id: crate::ids::new_id(),
        webhook_id: hook.id.clone(),
        seq,
        event_id: event_id.to_string(),
        event_type: event_type.to_string(),
        attempt,
        redelivery_of: None,
        outcome: if sent.succeeded() {
            outcome::SUCCEEDED
        } else {
            outcome::FAILED
        }
        .into(),
        status: sent.status,
        duration_ms: Some(duration_ms),
        error: sent.error.clone(),
        created_at: now - duration_ms,
        updated_at: now,
    }
}

/// Sends a queued redelivery once and settles its log entry. The change is
/// read again with the owner's visibility as it is now.
async fn redeliver(db: &Db, config: &Config, plan: &Plan, queued: Delivery) {
    let seq = queued.seq;
    let found = read_page(db, plan, seq.saturating_sub(1), 1, true)
        .await
        .map(|page| page.entries.into_iter().next().filter(|e| e.seq == seq));
    let mut settled = queued;
    match found {
        Ok(Some(entry)) => {
            let sent = send(config, &plan.hook, &entry.event_id, &entry.json).await;
            let record = attempt_record(
                &plan.hook,
                seq,
                &entry.event_id,
                &entry.event_type,
                0,
                &sent,
            );
            settled.outcome = record.outcome;
            settled.status = record.status;
            settled.duration_ms = record.duration_ms;
            settled.error = record.error;
        }
        Ok(None) | Err(_) => {
            settled.outcome = outcome::FAILED.into();
            settled.error = Some(
                "The change is no longer in the change log (retention), or no longer \
                 visible to the webhook's tenant"
                    .into(),
            );
        }
    }
    settled.updated_at = clock::now_ms();
    if let Err(err) = db
        .write(move |conn| Ok(store::save_delivery(conn, &settled)?))
        .await
    {
        log::error!("webhooks: cannot log a redelivery: {}", err.chain());
    }
}

/// The change log refused the webhook's read. A cursor retention overtook
/// (410) cannot go on without a gap: the webhook is disabled with the reason.
/// Anything else is a fault of the server: logged, and tried again later.
async fn stop_on(db: &Db, hook: &Webhook, err: ApiError) {
    if err.status() != 410 {
        log::error!("webhooks: cannot read the change log: {}", err.chain());
        tokio::time::sleep(AFTER_A_FAULT).await;
        return;
    }
    let reason = format!(
        "The change log no longer holds the changes after seq {} (retention): {}",
        hook.cursor,
        err.message()
    );
    log::warn!("webhooks: disabling webhook {}: {reason}", hook.id);
    let id = hook.id.clone();
    let now = clock::now_ms();
    if let Err(err) = db
        .write(move |conn| Ok(store::disable(conn, &id, &reason, now)?))
        .await
    {
        log::error!("webhooks: cannot disable a webhook: {}", err.chain());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(base_ms: u64, max_ms: u64) -> Config {
        Config {
            client: Client::new(&crate::http::client::ClientOptions {
                allow_private: false,
                ca_file: None,
                timeout: Duration::from_secs(1),
            })
            .unwrap(),
            retry_base: Duration::from_millis(base_ms),
            retry_max: Duration::from_millis(max_ms),
            persist_skips_every: Duration::from_secs(3600),
        }
    }

    fn failed() -> Outcome {
        Outcome {
            status: Some(500),
            error: Some("answered HTTP 500".into()),
            duration: Duration::from_millis(3),
        }
    }

    #[test]
    fn retries_double_from_the_base_and_end_at_the_window() {
        let config = config(30_000, 3 * 86_400_000);
        let since = 1_000_000;
        let mut now = since;
        let mut waits = Vec::new();
        for failures in 1.. {
            match retry(&config, failures, since, now, &failed()) {
                (Some(next), None) => {
                    waits.push(next - now);
                    now = next;
                }
                (None, Some(reason)) => {
                    assert!(reason.contains("3 days"), "{reason}");
                    assert!(reason.contains("HTTP 500"), "{reason}");
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(&waits[..4], &[30_000, 60_000, 120_000, 240_000]);
        assert_eq!(
            now,
            since + 3 * 86_400_000,
            "the last attempt is at the window's end"
        );
        assert!(waits.len() < 20);
    }

    #[test]
    fn spans_read_as_people_write_them() {
        assert_eq!(span(Duration::from_secs(3 * 86_400)), "3 days");
        assert_eq!(span(Duration::from_secs(2)), "2 s");
        assert_eq!(span(Duration::from_millis(50)), "50 ms");
    }
}
