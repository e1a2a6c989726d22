//! SQL for webhooks and their delivery log.

use crate::db::Value as SqlValue;
use crate::db::{Conn, OptionalExtension, params};

use super::{Delivery, Webhook, outcome};
use crate::listing::{ListQuery, Page, fetch_page};

/// Attempts kept per webhook; older ones are removed as new ones are logged.
pub const DELIVERIES_KEPT: i64 = 1000;

const COLUMNS: &str = "id, tenant, created_by, url, event_types, workspace_id, description, \
    active, disabled_reason, secret, previous_secret, previous_until, cursor, failures, \
    failing_since, next_attempt_at, created_at, updated_at";

fn from_row(row: &crate::db::Row<'_>) -> crate::db::Result<Webhook> {
    let types: String = row.get(4)?;
    let event_types =
        serde_json::from_str(&types).map_err(|e| crate::db::Error::conversion(4, e))?;
    Ok(Webhook {
        id: row.get(0)?,
        tenant: row.get(1)?,
        created_by: row.get(2)?,
        url: row.get(3)?,
        event_types,
        workspace_id: row.get(5)?,
        description: row.get(6)?,
        active: row.get(7)?,
        disabled_reason: row.get(8)?,
        secret: row.get(9)?,
        previous_secret: row.get(10)?,
        previous_until: row.get(11)?,
        cursor: row.get::<_, i64>(12)?.max(0) as u64,
        failures: row.get(13)?,
        failing_since: row.get(14)?,
        next_attempt_at: row.get(15)?,
        created_at: row.get(16)?,
        updated_at: row.get(17)?,
        last_delivery: None,
    })
}

/// The webhook `id` whatever its tenant (the worker's view).
pub fn get(conn: &Conn, id: &str) -> crate::db::Result<Option<Webhook>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM webhooks WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// Whether `hook` reads as an admin: the account that made it is still an
/// admin of its tenant. Such a webhook receives what an admin reads (every
/// tenant's workspaces), so only the tenant's admins see and manage it.
pub fn reads_as_admin(conn: &Conn, hook: &Webhook) -> crate::db::Result<bool> {
    Ok(crate::auth::accounts::find(conn, &hook.created_by)?
        .is_some_and(|a| a.is_admin && a.tenant == hook.tenant))
}

/// [`reads_as_admin`] of a row of `webhooks`, in SQL.
const READS_AS_ADMIN: &str = "EXISTS (SELECT 1 FROM accounts a \
     WHERE a.username = webhooks.created_by AND a.is_admin = 1 AND a.tenant = webhooks.tenant)";

/// The webhook `id` if `tenant` owns it, with its newest attempt.
pub fn get_owned(conn: &Conn, tenant: &str, id: &str) -> crate::db::Result<Option<Webhook>> {
    let Some(mut hook) = get(conn, id)?.filter(|h| h.tenant == tenant) else {
        return Ok(None);
    };
    hook.last_delivery = last_delivery(conn, id)?;
    Ok(Some(hook))
}

fn last_delivery(conn: &Conn, webhook_id: &str) -> crate::db::Result<Option<Delivery>> {
    conn.prepare_cached(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries \
         WHERE webhook_id = ?1 AND outcome <> 'queued' \
         ORDER BY created_at DESC, id DESC LIMIT 1"
    ))?
    .query_row([webhook_id], delivery_from_row)
    .optional()
}

pub fn insert(conn: &Conn, hook: &Webhook) -> crate::db::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO webhooks ({COLUMNS}) VALUES \
         (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"
    ))?
    .execute(params![
        hook.id,
        hook.tenant,
        hook.created_by,
        hook.url,
        serde_json::Value::from(hook.event_types.clone()).to_string(),
        hook.workspace_id,
        hook.description,
        hook.active,
        hook.disabled_reason,
        hook.secret,
        hook.previous_secret,
        hook.previous_until,
        hook.cursor as i64,
        hook.failures,
        hook.failing_since,
        hook.next_attempt_at,
        hook.created_at,
        hook.updated_at,
    ])?;
    Ok(())
}

/// Writes what a PATCH or a rotation changes, with the retry state (a
/// re-enabled or re-targeted webhook starts a fresh window). The cursor moves
/// only with a delivery ([`delivered`]). Runs in the writer, so nothing the
/// worker logs can fall between the read of `hook` and this.
pub fn update(conn: &Conn, hook: &Webhook) -> crate::db::Result<()> {
    conn.prepare_cached(
        "UPDATE webhooks SET url = ?2, event_types = ?3, workspace_id = ?4, description = ?5, \
         active = ?6, disabled_reason = ?7, secret = ?8, previous_secret = ?9, \
         previous_until = ?10, updated_at = ?11, failures = ?12, failing_since = ?13, \
         next_attempt_at = ?14 WHERE id = ?1",
    )?
    .execute(params![
        hook.id,
        hook.url,
        serde_json::Value::from(hook.event_types.clone()).to_string(),
        hook.workspace_id,
        hook.description,
        hook.active,
        hook.disabled_reason,
        hook.secret,
        hook.previous_secret,
        hook.previous_until,
        hook.updated_at,
        hook.failures,
        hook.failing_since,
        hook.next_attempt_at,
    ])?;
    Ok(())
}

pub fn delete(conn: &Conn, id: &str) -> crate::db::Result<()> {
    conn.prepare_cached("DELETE FROM webhooks WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// A tenant's webhooks, filtered and paged.
/// The tenant's webhooks; for a caller who is not an admin, without those
/// that read as an admin ([`reads_as_admin`]).
pub fn list(
    conn: &Conn,
    tenant: &str,
    caller_is_admin: bool,
    query: &ListQuery,
) -> crate::db::Result<Page<Webhook>> {
    let condition = if caller_is_admin {
        "tenant = ?".to_string()
    } else {
        format!("tenant = ? AND NOT {READS_AS_ADMIN}")
    };
    let mut page = fetch_page(
        conn,
        COLUMNS,
        "FROM webhooks",
        &condition,
        vec![SqlValue::Text(tenant.to_string())],
        query,
        from_row,
    )?;
    for hook in &mut page.rows {
        hook.last_delivery = last_delivery(conn, &hook.id)?;
    }
    Ok(page)
}

/// What the worker needs to know of every webhook to decide which has work.
pub struct Due {
    pub id: String,
    pub active: bool,
    pub cursor: u64,
    pub next_attempt_at: Option<i64>,
    pub queued: bool,
}

/// Every webhook that is active or has a redelivery queued.
pub fn candidates(conn: &Conn) -> crate::db::Result<Vec<Due>> {
    conn.prepare_cached(
        "SELECT id, active, cursor, next_attempt_at, \
         EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.outcome = 'queued') \
         FROM webhooks w WHERE active = 1 \
         OR EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.outcome = 'queued')",
    )?
    .query_map([], |row| {
        Ok(Due {
            id: row.get(0)?,
            active: row.get(1)?,
            cursor: row.get::<_, i64>(2)?.max(0) as u64,
            next_attempt_at: row.get(3)?,
            queued: row.get(4)?,
        })
    })?
    .collect()
}

const DELIVERY_COLUMNS: &str = "id, webhook_id, seq, event_id, event_type, attempt, \
    redelivery_of, outcome, status, duration_ms, error, created_at, updated_at";

fn delivery_from_row(row: &crate::db::Row<'_>) -> crate::db::Result<Delivery> {
    Ok(Delivery {
        id: row.get(0)?,
        webhook_id: row.get(1)?,
        seq: row.get::<_, i64>(2)?.max(0) as u64,
        event_id: row.get(3)?,
        event_type: row.get(4)?,
        attempt: row.get(5)?,
        redelivery_of: row.get(6)?,
        outcome: row.get(7)?,
        status: row.get(8)?,
        duration_ms: row.get(9)?,
        error: row.get(10)?,
        created_at: row.get(11)?,
        updated_at: row.get(12)?,
    })
}

pub fn get_delivery(
    conn: &Conn,
    webhook_id: &str,
    id: &str,
) -> crate::db::Result<Option<Delivery>> {
    conn.prepare_cached(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = ?1 AND webhook_id = ?2"
    ))?
    .query_row([id, webhook_id], delivery_from_row)
    .optional()
}

/// A webhook's attempts, filtered and paged (newest first unless sorted).
pub fn deliveries(
    conn: &Conn,
    webhook_id: &str,
    query: &ListQuery,
) -> crate::db::Result<Page<Delivery>> {
    fetch_page(
        conn,
        DELIVERY_COLUMNS,
        "FROM webhook_deliveries",
        "webhook_id = ?",
        vec![SqlValue::Text(webhook_id.to_string())],
        query,
        delivery_from_row,
    )
}

/// Redeliveries waiting for their turn, oldest first.
pub fn queued(conn: &Conn, webhook_id: &str, limit: usize) -> crate::db::Result<Vec<Delivery>> {
    conn.prepare_cached(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries \
         WHERE webhook_id = ?1 AND outcome = 'queued' ORDER BY created_at, id LIMIT ?2"
    ))?
    .query_map(params![webhook_id, limit as i64], delivery_from_row)?
    .collect()
}

/// The next attempt number for change `seq` on a webhook.
pub fn next_attempt(conn: &Conn, webhook_id: &str, seq: u64) -> crate::db::Result<i64> {
    conn.prepare_cached(
        "SELECT coalesce(max(attempt), 0) + 1 FROM webhook_deliveries \
         WHERE webhook_id = ?1 AND seq = ?2",
    )?
    .query_row(params![webhook_id, seq as i64], |row| row.get(0))
}

/// Logs an attempt (or queues a redelivery, or settles a queued one when its
/// id is already there), and keeps the newest [`DELIVERIES_KEPT`] per webhook.
pub fn save_delivery(conn: &Conn, d: &Delivery) -> crate::db::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO webhook_deliveries ({DELIVERY_COLUMNS}) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
         ON CONFLICT (id) DO UPDATE SET outcome = excluded.outcome, status = excluded.status, \
         duration_ms = excluded.duration_ms, error = excluded.error, \
         updated_at = excluded.updated_at"
    ))?
    .execute(params![
        d.id,
        d.webhook_id,
        d.seq as i64,
        d.event_id,
        d.event_type,
        d.attempt,
        d.redelivery_of,
        d.outcome,
        d.status,
        d.duration_ms,
        d.error,
        d.created_at,
        d.updated_at,
    ])?;
    if d.outcome != outcome::QUEUED {
        conn.prepare_cached(
            "DELETE FROM webhook_deliveries WHERE webhook_id = ?1 AND outcome <> 'queued' \
             AND id NOT IN (SELECT id FROM webhook_deliveries WHERE webhook_id = ?1 \
                            ORDER BY created_at DESC, id DESC LIMIT ?2)",
        )?
        .execute(params![d.webhook_id, DELIVERIES_KEPT])?;
    }
    Ok(())
}

/// After a successful delivery of `seq`: the cursor moves there (never back)
/// and the retry state is cleared; in the same write as the attempt's log.
/// Answers whether the webhook is still active (`None`: it was deleted).
pub fn delivered(conn: &Conn, webhook_id: &str, seq: u64) -> crate::db::Result<Option<bool>> {
    conn.prepare_cached(
        "UPDATE webhooks SET cursor = CASE WHEN cursor > ?2 THEN cursor ELSE ?2 END, failures = 0, failing_since = NULL, \
         next_attempt_at = NULL WHERE id = ?1 RETURNING active",
    )?
    .query_row(params![webhook_id, seq as i64], |row| row.get(0))
    .optional()
}

/// Moves the cursor of a webhook past changes none of which is for it,
/// unless a delivery moved it meanwhile.
pub fn skipped(conn: &Conn, webhook_id: &str, from: u64, to: u64) -> crate::db::Result<()> {
    conn.prepare_cached("UPDATE webhooks SET cursor = ?3 WHERE id = ?1 AND cursor = ?2")?
        .execute(params![webhook_id, from as i64, to as i64])?;
    Ok(())
}

/// After a failed delivery: the retry state, or the webhook disabled with a reason.
pub fn failed(
    conn: &Conn,
    webhook_id: &str,
    failures: i64,
    failing_since: i64,
    next_attempt_at: Option<i64>,
    disabled_reason: Option<&str>,
    now: i64,
) -> crate::db::Result<()> {
    conn.prepare_cached(
        "UPDATE webhooks SET failures = ?2, failing_since = ?3, next_attempt_at = ?4, \
         active = CASE WHEN CAST(?5 AS TEXT) IS NULL THEN active ELSE 0 END, \
         disabled_reason = coalesce(CAST(?5 AS TEXT), disabled_reason), \
         updated_at = CASE WHEN CAST(?5 AS TEXT) IS NULL THEN updated_at ELSE ?6 END \
         WHERE id = ?1",
    )?
    .execute(params![
        webhook_id,
        failures,
        failing_since,
        next_attempt_at,
        disabled_reason,
        now
    ])?;
    Ok(())
}

/// Disables a webhook the worker cannot serve (its workspace is gone, its
/// cursor fell out of the change log), with the reason.
pub fn disable(conn: &Conn, webhook_id: &str, reason: &str, now: i64) -> crate::db::Result<()> {
    conn.prepare_cached(
        "UPDATE webhooks SET active = 0, disabled_reason = ?2, next_attempt_at = NULL, \
         updated_at = ?3 WHERE id = ?1",
    )?
    .execute(params![webhook_id, reason, now])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhooks::Delivery;

    fn delivery(n: i64, outcome: &str) -> Delivery {
        Delivery {
            id: format!("d{n:05}"),
            webhook_id: "h".into(),
            seq: n as u64,
            event_id: format!("e{n}"),
            event_type: "job.created".into(),
            attempt: 1,
            redelivery_of: None,
            outcome: outcome.into(),
            status: Some(200),
            duration_ms: Some(1),
            error: None,
            created_at: n,
            updated_at: n,
        }
    }

    /// The log keeps the newest `DELIVERIES_KEPT` attempts of a webhook; a
    /// redelivery still queued is never trimmed, however old.
    #[test]
    fn the_delivery_log_keeps_the_newest_attempts() {
        let conn = crate::db::Conn::memory().unwrap();
        conn.execute(
            "INSERT INTO webhooks (id, tenant, created_by, url, event_types, active, secret, \
             cursor, created_at, updated_at) \
             VALUES ('h', 't', 'u', 'http://127.0.0.1:9/', '[]', 1, 's', 0, 0, 0)",
            [],
        )
        .unwrap();
        save_delivery(&conn, &delivery(0, outcome::QUEUED)).unwrap();
        let total = DELIVERIES_KEPT + 5;
        for n in 1..=total {
            save_delivery(&conn, &delivery(n, outcome::SUCCEEDED)).unwrap();
        }
        let kept: Vec<(String, String)> = conn
            .prepare("SELECT id, outcome FROM webhook_deliveries ORDER BY created_at, id")
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<crate::db::Result<_>>()
            .unwrap();
        assert_eq!(
            kept.len() as i64,
            DELIVERIES_KEPT + 1,
            "the newest and the queued one"
        );
        assert_eq!(kept[0], ("d00000".to_string(), outcome::QUEUED.to_string()));
        assert_eq!(kept[1].0, format!("d{:05}", total - DELIVERIES_KEPT + 1));
        assert_eq!(kept.last().unwrap().0, format!("d{total:05}"));
    }
}
