//! Accounts, passwords, session keys and the login lockout; and the check that
//! turns a request's key into the [`Principal`] every handler acts for.

pub mod accounts;
pub mod cache;
pub mod lockout;
pub mod password;
pub mod routes;
pub mod sessions;

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::app::App;
use crate::clock;
use crate::db::changes::Stamp;
use crate::db::writer;
use crate::error::{ApiError, ApiResult};
use crate::http::Request;

/// Who a request acts for.
#[derive(Clone, Debug)]
pub struct Principal {
    pub account_id: i64,
    pub username: String,
    pub tenant: String,
    pub is_admin: bool,
}

/// The session key of a request: `Authorization: Bearer KEY`, else `api_key`.
pub fn request_key(req: &Request) -> Option<&str> {
    if let Some(value) = req.header("authorization") {
        let mut parts = value.splitn(2, ' ');
        if let (Some(scheme), Some(key)) = (parts.next(), parts.next()) {
            if scheme.eq_ignore_ascii_case("bearer") && !key.trim().is_empty() {
                return Some(key.trim());
            }
        }
    }
    req.query("api_key").filter(|k| !k.is_empty())
}

/// A request's caller, and whether that still has to be confirmed.
pub struct Authenticated {
    pub principal: Arc<Principal>,
    /// The key's hash when the principal came from the session cache while the
    /// store has changed since it was cached (a logout, a `user remove` by the
    /// CLI...): the request's first store call confirms the session inside its
    /// own transaction (see [`SessionGuard`]), so no extra round trip is spent.
    pub recheck: Option<Vec<u8>>,
    /// The store position at which the session was known live (none when it
    /// still has to be confirmed): cached answers read at this same position
    /// are current for this request.
    pub live_at: Option<Stamp>,
}

/// How long sessions live, in milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct SessionLimits {
    pub idle_ms: i64,
    pub max_ms: i64,
}

impl SessionLimits {
    pub fn of(app: &App) -> SessionLimits {
        SessionLimits {
            idle_ms: app.settings.session_idle.as_millis() as i64,
            max_ms: app.settings.session_max.as_millis() as i64,
        }
    }

    fn expired(&self, found: &sessions::Found, now: i64) -> bool {
        now - found.last_used_at >= self.idle_ms || now - found.created_at >= self.max_ms
    }
}

/// Looks the session up in the store: the authority on whether a key is live.
pub fn check_session(
    conn: &rusqlite::Connection,
    hash: &[u8],
    limits: SessionLimits,
) -> ApiResult<sessions::Found> {
    let found = sessions::find(conn, hash)?.ok_or_else(|| {
        ApiError::Unauthorized("The session key is not valid; log in again".into())
    })?;
    if limits.expired(&found, clock::now_ms()) {
        return Err(ApiError::Unauthorized(
            "The session key has expired; log in again".into(),
        ));
    }
    Ok(found)
}

/// Resolves the request's key to a live session, sliding its idle expiry.
///
/// A key seen before, with nothing committed to the store since, is answered
/// from memory; otherwise the store is asked (now, or by the handler's first
/// store call when the key is cached but the store has moved on).
pub async fn authenticate(app: &Arc<App>, req: &Request) -> ApiResult<Authenticated> {
    let key = request_key(req).ok_or_else(|| {
        ApiError::Unauthorized(
            "A session key is required: log in at POST /api/rest/1.0/sessions/{username} and \
             send the key as `Authorization: Bearer KEY` or `?api_key=KEY`"
                .into(),
        )
    })?;
    let hash = sessions::hash_key(key);
    let limits = SessionLimits::of(app);
    let now = clock::now_ms();
    let (found, recheck, live_at) = match app.sessions.get(&hash) {
        // A cached entry that looks expired may have been refreshed since:
        // only the store can say.
        Some((read_at, found)) if !limits.expired(&found, now) => {
            let unchanged = read_at.is_some() && read_at == app.db.stamp();
            if unchanged {
                (found, None, read_at)
            } else {
                (found, Some(hash.clone()), None)
            }
        }
        _ => {
            let lookup = hash.clone();
            let (read_at, found) = app
                .db
                .read_at(move |conn, _| check_session(conn, &lookup, limits))
                .await?;
            app.sessions.insert(read_at, &hash, found.clone());
            (found, None, read_at)
        }
    };
    // Refresh the sliding expiry now and then rather than on every request, so
    // reads do not each turn into a write. The refresh is not awaited.
    let refresh_every = (limits.idle_ms / 8).min(60_000);
    if now - found.last_used_at >= refresh_every {
        let app = app.clone();
        let touched = hash.clone();
        tokio::spawn(async move {
            let key = touched.clone();
            match app
                .db
                .write(move |conn| Ok(sessions::touch(conn, &key, now)?))
                .await
            {
                Ok(()) => app.sessions.touched(&touched, now),
                Err(err) => log::warn!("could not refresh a session: {err}"),
            }
        });
    }
    Ok(Authenticated {
        principal: found.principal,
        recheck,
        live_at,
    })
}

/// Confirms, inside a store call of the request, a session that was taken from
/// the cache after the store had changed. Once it passed, later calls of the
/// same request skip it.
#[derive(Clone)]
pub struct SessionGuard {
    hash: Arc<Vec<u8>>,
    limits: SessionLimits,
    cache: Arc<cache::SessionCache>,
    passed: Arc<AtomicBool>,
}

impl SessionGuard {
    pub fn new(app: &App, hash: Vec<u8>) -> SessionGuard {
        SessionGuard {
            hash: Arc::new(hash),
            limits: SessionLimits::of(app),
            cache: app.sessions.clone(),
            passed: Arc::new(AtomicBool::new(false)),
        }
    }

    pub fn passed(&self) -> bool {
        self.passed.load(Ordering::Acquire)
    }

    /// Runs on the store call's connection, before the call's own work.
    /// `read_at` is the position the read began at (`None` in the writer,
    /// whose view includes its batch's uncommitted work).
    ///
    /// In the writer, a key confirmed by an earlier write of the same batch
    /// is not looked up again: nothing can end it in between but a logout in
    /// that batch, which forgets the confirmations ([`forget_confirmed`]).
    pub fn confirm(&self, conn: &rusqlite::Connection, read_at: Option<Stamp>) -> ApiResult<()> {
        if self.passed() {
            return Ok(());
        }
        let transaction = read_at
            .is_none()
            .then(writer::current_transaction)
            .flatten();
        let seen = transaction.is_some_and(|t| {
            CONFIRMED_IN_TRANSACTION.with(|c| {
                let c = c.borrow();
                c.0 == t && c.1.iter().any(|h| **h == **self.hash)
            })
        });
        if !seen {
            let found = check_session(conn, &self.hash, self.limits)?;
            self.cache.insert(read_at, &self.hash, found);
            if let Some(t) = transaction {
                CONFIRMED_IN_TRANSACTION.with(|c| {
                    let mut c = c.borrow_mut();
                    if c.0 != t {
                        *c = (t, Vec::new());
                    }
                    c.1.push(self.hash.clone());
                });
            }
        }
        self.passed.store(true, Ordering::Release);
        Ok(())
    }
}

thread_local! {
    /// Keys confirmed in the writer's current transaction (its id, the key hashes).
    static CONFIRMED_IN_TRANSACTION: RefCell<(u64, Vec<Arc<Vec<u8>>>)> =
        const { RefCell::new((0, Vec::new())) };
}

/// Called where the writer ends a session: later writes of the same batch must
/// look their key up again.
pub fn forget_confirmed() {
    CONFIRMED_IN_TRANSACTION.with(|c| c.borrow_mut().1.clear());
}

/// Unpadded base64url, as used for session keys and generated passwords.
pub fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{SessionGuard, accounts, base64url, password, sessions};
    use crate::app::{App, Settings};
    use crate::db::Db;
    use crate::error::ApiError;

    /// Regression test for the per-batch memo of confirmed keys: a logout
    /// queued between two writes of the same key, all three in one batch,
    /// must end the key for the write after it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_logout_in_the_same_batch_ends_the_key_for_the_writes_after_it() {
        let dir = std::env::temp_dir().join(format!("quayside-memo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = Db::open(&dir.join("memo.db"), 2, None).unwrap();
        let app = App::new(db.clone(), Settings::default());
        let key = sessions::new_key();
        let stored = key.hash.clone();
        db.write(move |conn| {
            let hashed = password::hash("a-long-password", 1000);
            let id = accounts::insert(conn, "dora", "tenant-a", false, &hashed, 0)?;
            sessions::insert(conn, &stored, id, crate::clock::now_ms())?;
            Ok(())
        })
        .await
        .unwrap();
        // Hold the writer so the next three writes queue up as one batch.
        let hold = tokio::spawn(db.write(|_| {
            std::thread::sleep(Duration::from_millis(150));
            Ok(())
        }));
        tokio::time::sleep(Duration::from_millis(30)).await;
        let (before, after) = (
            SessionGuard::new(&app, key.hash.clone()),
            SessionGuard::new(&app, key.hash.clone()),
        );
        let first = tokio::spawn(db.write(move |conn| before.confirm(conn, None)));
        tokio::time::sleep(Duration::from_millis(10)).await;
        let ended = key.hash.clone();
        let logout = tokio::spawn(db.write(move |conn| Ok(sessions::delete(conn, &ended)?)));
        tokio::time::sleep(Duration::from_millis(10)).await;
        let second = tokio::spawn(db.write(move |conn| after.confirm(conn, None)));
        hold.await.unwrap().unwrap();
        assert!(first.await.unwrap().is_ok(), "the key was live");
        assert!(logout.await.unwrap().unwrap(), "the logout removed it");
        assert!(
            matches!(second.await.unwrap(), Err(ApiError::Unauthorized(_))),
            "a write after the logout in the same batch is refused"
        );
        db.close().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn base64url_matches_rfc4648_vectors() {
        assert_eq!(base64url(b""), "");
        assert_eq!(base64url(b"f"), "Zg");
        assert_eq!(base64url(b"fo"), "Zm8");
        assert_eq!(base64url(b"foo"), "Zm9v");
        assert_eq!(base64url(b"foob"), "Zm9vYg");
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
        assert_eq!(base64url(&[0u8; 32]).len(), 43);
    }
}
