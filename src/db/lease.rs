//! Background work that must run in one process at a time: the webhook
//! delivery worker and change-log retention. On a data file there is one
//! server process, so the work simply runs. On PostgreSQL, several `serve`
//! processes may share one database; the work runs only in the process that
//! holds the *lease*: a session-level `pg_try_advisory_lock` taken on a
//! connection of its own and held for as long as that connection lives.
//!
//! The others try again every [`RETRY`]. A holder that exits, is killed or
//! loses its connection releases the lock with its session (PostgreSQL ends
//! the backend of a closed socket), so another process takes over within
//! [`RETRY`]. The holder checks its connection every [`CHECK_EVERY`]; when
//! it is gone, the work is stopped (its turns in flight dropped) before the
//! process tries to take the lease again. An HTTP call in flight at the
//! moment ownership moves may be made again by the new holder: at least
//! once per attempt, as after a crash of a single server.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;

use super::pg;
use super::value::Value;
use super::{Db, Location};

/// How often a process without the lease tries to take it.
pub const RETRY: Duration = Duration::from_secs(2);
/// How often the holder checks that its lease connection is alive.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The lease the server's background work runs under.
pub const BACKGROUND: &str = "quayside.background";

/// Runs `work` until `closing` turns true: at once and for good on a data
/// file; on PostgreSQL only while this process holds the lease `name`,
/// started again each time the lease is taken again. `work` gets a receiver
/// that turns true when it must stop (shutdown, or the lease was lost).
pub async fn run<F, Fut>(db: Db, name: &'static str, mut closing: watch::Receiver<bool>, work: F)
where
    F: Fn(watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let options = match db.location() {
        Location::File(_) => return work(closing).await,
        Location::Postgres(options) => (**options).clone(),
    };
    // The connection the lock is tried on, kept between tries.
    let mut spare: Option<pg::Client> = None;
    loop {
        if *closing.borrow() {
            break;
        }
        let attempt = options.clone();
        let kept = spare.take();
        let taken = tokio::task::spawn_blocking(move || take(kept, &attempt, name)).await;
        match taken {
            Ok(Ok(Taken::Held(client))) => {
                log::info!("{name}: this process holds the lease and runs the background work");
                let (stop, stopped) = watch::channel(false);
                let worker = tokio::spawn(work(stopped));
                let lost = hold(client, &mut closing).await;
                let _ = stop.send(true);
                let _ = worker.await;
                if !lost {
                    break;
                }
                log::warn!("{name}: the lease's connection is gone; the background work stopped");
            }
            Ok(Ok(Taken::Elsewhere(client))) => spare = Some(client),
            Ok(Err(err)) => log::warn!("{name}: cannot try the lease: {err}"),
            Err(err) => log::warn!("{name}: cannot try the lease: {err}"),
        }
        if !crate::clock::pause(RETRY, &mut closing).await {
            break;
        }
    }
    if let Some(client) = spare {
        let _ = tokio::task::spawn_blocking(move || drop(client)).await;
    }
}

/// What a try of the lock found; the connection either way.
enum Taken {
    /// This connection holds the lease now.
    Held(pg::Client),
    /// Another session holds it.
    Elsewhere(pg::Client),
}

/// Tries the lock `name` on `kept` (made anew when there is none, or it is gone).
fn take(kept: Option<pg::Client>, options: &pg::ConnectOptions, name: &str) -> pg::Result<Taken> {
    let client = match kept {
        Some(client) if !client.is_closed() => client,
        _ => pg::Client::connect(options)?,
    };
    let row = client.query_row(
        "SELECT pg_try_advisory_lock(hashtext(?1))",
        &[Value::from(name)],
    )?;
    Ok(match row.as_ref().and_then(|row| row.get(0)) {
        Some(Value::Integer(1)) => Taken::Held(client),
        _ => Taken::Elsewhere(client),
    })
}

/// Holds the lease until shutdown (false) or until its connection fails
/// (true). The connection is closed on a blocking thread either way.
async fn hold(client: pg::Client, closing: &mut watch::Receiver<bool>) -> bool {
    let mut client = Some(client);
    let lost = loop {
        tokio::select! {
            changed = closing.changed() => {
                if changed.is_err() || *closing.borrow() {
                    break false;
                }
            }
            () = tokio::time::sleep(CHECK_EVERY) => {
                let held = client.take().expect("the lease's connection");
                let checked = tokio::task::spawn_blocking(move || {
                    let alive = !held.is_closed() && held.execute("SELECT 1", &[]).is_ok();
                    (held, alive)
                })
                .await;
                match checked {
                    Ok((held, true)) => client = Some(held),
                    Ok((held, false)) => {
                        client = Some(held);
                        break true;
                    }
                    Err(_) => break true,
                }
            }
        }
    };
    if let Some(client) = client {
        let _ = tokio::task::spawn_blocking(move || drop(client)).await;
    }
    lost
}
