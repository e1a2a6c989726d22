//! Removing old change entries, in the background and in small steps, so that
//! no write waits behind a large delete. How far it went is kept in
//! `change_log.trimmed_through`: a feed cursor below it answers 410.

use std::sync::Arc;
use std::time::Duration;

use crate::db::{Conn, params};

use crate::db::Db;

/// Entries removed per write: a short transaction for the writer thread.
const STEP: usize = 2000;

/// Removes up to `STEP` of the oldest entries that occurred before
/// `cutoff_ms`; returns how many it removed.
pub fn trim(conn: &Conn, cutoff_ms: i64) -> crate::db::Result<usize> {
    // The oldest entries first: sequence order is commit order, and the
    // first entry not old enough ends the step (a clock set back cannot
    // make retention skip over a newer entry). The newest entry is always
    // kept: the next sequence is the newest plus one, so it never repeats.
    let head = super::head(conn)? as i64;
    let mut last = None;
    let mut count = 0;
    {
        let mut oldest =
            conn.prepare_cached("SELECT seq, occurred_at FROM changes ORDER BY seq LIMIT ?1")?;
        let mut rows = oldest.query([STEP as i64])?;
        while let Some(row) = rows.next()? {
            let (seq, at): (i64, i64) = (row.get(0)?, row.get(1)?);
            if at >= cutoff_ms || seq >= head {
                break;
            }
            last = Some(seq);
            count += 1;
        }
    }
    if let Some(last) = last {
        conn.prepare_cached("DELETE FROM changes WHERE seq <= ?1")?
            .execute([last])?;
        conn.prepare_cached(
            "UPDATE change_log SET trimmed_through = CASE WHEN trimmed_through > ?1 THEN trimmed_through ELSE ?1 END WHERE id = 1",
        )?
        .execute(params![last])?;
    }
    Ok(count)
}

/// Trims entries older than `keep` every `every`, until `closing` turns true.
pub async fn run(
    db: Db,
    keep: Duration,
    every: Duration,
    mut closing: tokio::sync::watch::Receiver<bool>,
) {
    let actor: Arc<str> = Arc::from("retention");
    loop {
        let cutoff = crate::clock::now_ms() - keep.as_millis().min(i64::MAX as u128) as i64;
        loop {
            match db
                .write_as(actor.clone(), move |conn| Ok(trim(conn, cutoff)?))
                .await
            {
                Ok(removed) if removed == STEP => tokio::task::yield_now().await,
                Ok(removed) => {
                    if removed > 0 {
                        log::info!("change log: removed {removed} entries past retention");
                    }
                    break;
                }
                Err(err) => {
                    log::warn!("change log retention failed (tried again later): {err}");
                    break;
                }
            }
            if *closing.borrow() {
                return;
            }
        }
        if !crate::clock::pause(every, &mut closing).await {
            return;
        }
    }
}
