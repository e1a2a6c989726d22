//! The session check: a request's key turned into the [`Principal`] it acts
//! for, from memory while nothing was committed since the key was last read,
//! else from the store (now, or inside the handler's own transaction through
//! a [`SessionGuard`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::cache::SessionCache;
use super::principal::Principal;
use super::{confirmed, sessions};
use crate::clock;
use crate::db::stamp::Stamp;
use crate::db::writer;
use crate::db::{Db, Tables};
use crate::error::{ApiError, ApiResult};
use crate::http::Request;

/// The session key of a request: `Authorization: Bearer KEY`, else `api_key`.
/// A repeated `api_key` is a 400, whichever is used: which one would count?
pub fn request_key(req: &Request) -> ApiResult<Option<&str>> {
    let mut keys = req
        .query_pairs()
        .iter()
        .filter(|(name, _)| name == "api_key");
    let query = keys.next();
    if keys.next().is_some() {
        return Err(ApiError::invalid_query(
            "api_key",
            "`api_key` is given more than once; send the key once",
        ));
    }
    if let Some(value) = req.header(crate::http::header::AUTHORIZATION) {
        let mut parts = value.splitn(2, ' ');
        if let (Some(scheme), Some(key)) = (parts.next(), parts.next()) {
            if scheme.eq_ignore_ascii_case("bearer") && !key.trim().is_empty() {
                return Ok(Some(key.trim()));
            }
        }
    }
    Ok(query.map(|(_, key)| key.as_str()).filter(|k| !k.is_empty()))
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
    pub fn new(idle: Duration, max: Duration) -> SessionLimits {
        SessionLimits {
            idle_ms: idle.as_millis() as i64,
            max_ms: max.as_millis() as i64,
        }
    }

    fn expired(&self, found: &sessions::Found, now: i64) -> bool {
        now - found.last_used_at >= self.idle_ms || now - found.created_at >= self.max_ms
    }
}

/// Looks the session up in the store: the authority on whether a key is live.
pub fn check_session(
    conn: &crate::db::Conn,
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

/// What the session check needs: the sessions seen, their lifetimes, the store.
#[derive(Clone)]
pub struct SessionCheck {
    pub cache: Arc<SessionCache>,
    pub limits: SessionLimits,
    pub db: Db,
}

impl SessionCheck {
    pub fn new(db: Db, limits: SessionLimits) -> SessionCheck {
        SessionCheck {
            cache: Arc::default(),
            limits,
            db,
        }
    }

    /// A guard that confirms the session of `hash` inside a store call.
    pub fn guard(&self, hash: Vec<u8>) -> SessionGuard {
        SessionGuard {
            hash: Arc::new(hash),
            limits: self.limits,
            cache: self.cache.clone(),
            passed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Resolves the request's key to a live session, sliding its idle expiry.
    ///
    /// A key seen before, with nothing committed to the store since, is answered
    /// from memory; otherwise the store is asked (now, or by the handler's first
    /// store call when the key is cached but the store has moved on).
    pub async fn authenticate(&self, req: &Request) -> ApiResult<Authenticated> {
        let key = request_key(req)?.ok_or_else(|| {
            ApiError::Unauthorized(
                "A session key is required: log in at POST /api/rest/1.0/sessions/{username} and \
             send the key as `Authorization: Bearer KEY` or `?api_key=KEY`"
                    .into(),
            )
        })?;
        let hash = sessions::hash_key(key);
        let limits = self.limits;
        let now = clock::now_ms();
        let (found, recheck, live_at) = match self.cache.get(&hash) {
            // A cached entry that looks expired may have been refreshed since:
            // only the store can say.
            Some((read_at, found)) if !limits.expired(&found, now) => {
                let at = self.db.stamp().await;
                if self.db.same(Tables::SESSIONS, read_at, at) {
                    if read_at != at {
                        self.cache.restamp(&hash, read_at, at);
                    }
                    // An entry may have been kept by a read that has not yet
                    // waited for the flush of what it saw: nothing it shows
                    // leaves before that is on disk (`db::durable`; without
                    // writes in flight, two atomic loads).
                    self.db.flushed().await;
                    (found, None, at)
                } else {
                    (found, Some(hash.clone()), None)
                }
            }
            _ => {
                let lookup = hash.clone();
                let (read_at, found) = self
                    .db
                    .read_sized(None, crate::db::ReadSize::Point, move |conn, _| {
                        check_session(conn, &lookup, limits)
                    })
                    .await?;
                self.cache.insert(read_at, &hash, found.clone());
                (found, None, read_at)
            }
        };
        // Refresh the sliding expiry now and then rather than on every request, so
        // reads do not each turn into a write. The refresh is not awaited.
        let refresh_every = (limits.idle_ms / 8).min(60_000);
        // One refresh at a time per key, and bookkeeping only: it changes no
        // data the caches hold, so they keep their entries across it.
        if now - found.last_used_at >= refresh_every && self.cache.claim_touch(&hash) {
            let (db, cache) = (self.db.clone(), self.cache.clone());
            let touched = hash.clone();
            tokio::spawn(async move {
                let key = touched.clone();
                match db
                    .write_bookkeeping(Arc::from(crate::db::SERVER_ACTOR), move |conn| {
                        Ok(sessions::touch(conn, &key, now)?)
                    })
                    .await
                {
                    Ok(()) => cache.touched(&touched, now),
                    Err(err) => log::warn!("could not refresh a session: {err}"),
                }
                cache.touch_ended(&touched);
            });
        }
        Ok(Authenticated {
            principal: found.principal,
            recheck,
            live_at,
        })
    }

    /// Whether `value` is a live session key: the access log hides such a
    /// value under any parameter name. Only a text with the shape of a key
    /// costs a look-up: in memory while nothing was committed since the key
    /// was read, else in the store.
    pub async fn is_live_key(&self, value: &str) -> bool {
        if !sessions::looks_like_key(value) {
            return false;
        }
        let hash = sessions::hash_key(value);
        if let Some((read_at, found)) = self.cache.get(&hash) {
            if self
                .db
                .same(Tables::SESSIONS, read_at, self.db.stamp().await)
                && !self.limits.expired(&found, clock::now_ms())
            {
                return true;
            }
        }
        let limits = self.limits;
        self.db
            .read(move |conn, _| check_session(conn, &hash, limits))
            .await
            .is_ok()
    }
}

/// Confirms, inside a store call of the request, a session that was taken from
/// the cache after the store had changed. Once it passed, later calls of the
/// same request skip it.
#[derive(Clone)]
pub struct SessionGuard {
    hash: Arc<Vec<u8>>,
    limits: SessionLimits,
    cache: Arc<SessionCache>,
    passed: Arc<AtomicBool>,
}

impl SessionGuard {
    pub fn passed(&self) -> bool {
        self.passed.load(Ordering::Acquire)
    }

    /// Runs on the store call's connection, before the call's own work.
    /// `read_at` is the position the read began at (`None` in the writer,
    /// whose view includes its batch's uncommitted work).
    ///
    /// In the writer, a key confirmed by an earlier write of the same batch
    /// is not looked up again: nothing can end it in between but a logout in
    /// that batch, which forgets the confirmations ([`confirmed::forget`]).
    pub fn confirm(&self, conn: &crate::db::Conn, read_at: Option<Stamp>) -> ApiResult<()> {
        if self.passed() {
            return Ok(());
        }
        let transaction = read_at
            .is_none()
            .then(writer::current_transaction)
            .flatten();
        let seen = transaction.is_some_and(|t| confirmed::contains(t, &self.hash));
        if !seen {
            let found = check_session(conn, &self.hash, self.limits)?;
            self.cache.insert(read_at, &self.hash, found);
            if let Some(t) = transaction {
                confirmed::insert(t, self.hash.clone());
            }
        }
        self.passed.store(true, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{SessionCheck, SessionLimits};
    use crate::auth::{accounts, password, sessions};
    use crate::db::Db;
    use crate::error::ApiError;
    use crate::test_support::{hold_writer, queued};

    /// A store on a fresh file in a directory of its own (named after
    /// `tag`), and a session check on it.
    fn open(tag: &str) -> (std::path::PathBuf, Db, SessionCheck) {
        let dir = std::env::temp_dir().join(format!("quayside-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = Db::open(
            &dir.join(format!("{tag}.db")),
            2,
            None,
            std::sync::Arc::new(crate::db::writer::NoCapture),
        )
        .unwrap();
        let check = SessionCheck::new(
            db.clone(),
            SessionLimits::new(Duration::from_secs(3600), Duration::from_secs(7200)),
        );
        (dir, db, check)
    }

    /// Regression test for the per-batch memo of confirmed keys: a logout
    /// queued between two writes of the same key, all three in one batch,
    /// must end the key for the write after it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_logout_in_the_same_batch_ends_the_key_for_the_writes_after_it() {
        let (dir, db, check) = open("memo");
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
        // Hold the writer until the next three writes are queued, so that
        // they join its batch after it.
        let (release, hold) = hold_writer(&db).await;
        let (before, after) = (check.guard(key.hash.clone()), check.guard(key.hash.clone()));
        let first = queued(db.write(move |conn| before.confirm(conn, None)));
        let ended = key.hash.clone();
        let logout = queued(db.write(move |conn| Ok(sessions::delete(conn, &ended)?)));
        let second = queued(db.write(move |conn| after.confirm(conn, None)));
        drop(release);
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

    /// Every request's future holds its session check's inline, and the
    /// server moves a request's future into its box whole: the reads the
    /// check may make (`Db::read_sized`, the PostgreSQL position behind
    /// `Db::stamp`) are boxed, so the check's future stays small on either
    /// engine (it was 4,896 bytes, and a request's 23,248, before they were).
    #[tokio::test]
    async fn a_session_check_s_future_is_small() {
        let (dir, db, check) = open("size");
        let req = crate::http::Request::from_bytes(
            "GET",
            "/api/rest/1.0/ports/NLRTM",
            &[("authorization", "Bearer none")],
            "",
        )
        .unwrap();
        let authenticating = check.authenticate(&req);
        let size = std::mem::size_of_val(&authenticating);
        assert!(size <= 1024, "the session check's future is {size} bytes");
        assert!(matches!(
            authenticating.await,
            Err(ApiError::Unauthorized(_))
        ));
        let stamping = db.stamp();
        let size = std::mem::size_of_val(&stamping);
        assert!(size <= 256, "a stamp's future is {size} bytes");
        drop(stamping);
        db.close().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
