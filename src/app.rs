//! The application: shared state, the request context handlers receive, and
//! [`App::handle`], which takes one request through routing, authentication and
//! its handler to a response. Tests can call it directly, without a socket.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rusqlite::Connection;

use crate::auth::{self, Principal, SessionGuard, cache::SessionCache, lockout::Lockout};
use crate::db::Db;
use crate::db::cache::ReadCache;
use crate::db::changes::Stamp;
use crate::error::{ApiError, ApiResult};
use crate::http::request::settle_unread;
use crate::http::{Request, Response, Router};

/// Settings a running server needs; `serve`'s options fill them.
#[derive(Clone, Debug)]
pub struct Settings {
    /// A session dies when unused this long (sliding).
    pub session_idle: Duration,
    /// A session dies this long after login, used or not.
    pub session_max: Duration,
    /// Work factor for new password hashes and for decoy checks.
    pub pbkdf2_iterations: u32,
    /// Largest upload body (files and attachments).
    pub max_upload_bytes: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            session_idle: Duration::from_secs(8 * 3600),
            session_max: Duration::from_secs(7 * 24 * 3600),
            pbkdf2_iterations: auth::password::DEFAULT_ITERATIONS,
            max_upload_bytes: 256 * 1024 * 1024,
        }
    }
}

pub type HandlerFuture = Pin<Box<dyn Future<Output = ApiResult<Response>> + Send>>;
pub type Handler = Box<dyn Fn(Ctx) -> HandlerFuture + Send + Sync>;

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone: login, health, the OpenAPI document.
    Public,
    /// A live session key is required.
    Session,
}

pub struct Endpoint {
    pub access: Access,
    pub handler: Handler,
}

/// What a handler receives: the application, the request, and who it acts for.
///
/// Handlers reach the store through [`Ctx::read`] and [`Ctx::write`]: when the
/// caller's session came from the cache after the store changed, those calls
/// confirm it first, inside the same transaction (one hop, not two).
pub struct Ctx {
    pub app: Arc<App>,
    pub req: Request,
    principal: Option<Arc<Principal>>,
    guard: Option<SessionGuard>,
    /// Where the store was when the caller's session was known live.
    live_at: Option<Stamp>,
}

impl Ctx {
    /// The caller. Always present on [`Access::Session`] routes.
    pub fn user(&self) -> ApiResult<&Principal> {
        self.principal
            .as_deref()
            .ok_or_else(|| ApiError::Unauthorized("A session key is required".into()))
    }

    /// Runs `f` in one read transaction (see [`Db::read`]).
    pub fn read<T, F>(&self, f: F) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnOnce(&Connection) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let read = self.read_at(move |conn| f(conn));
        async move { Ok(read.await?.1) }
    }

    /// [`Ctx::read`], also answering the position the read began at, under
    /// which its answer may be kept with [`Ctx::remember`].
    pub fn read_at<T, F>(
        &self,
        f: F,
    ) -> impl Future<Output = ApiResult<(Option<Stamp>, T)>> + Send + 'static
    where
        F: FnOnce(&Connection) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let guard = self.pending_guard();
        self.app.db.read_at(move |conn, read_at| {
            if let Some(guard) = &guard {
                guard.confirm(conn, read_at)?;
            }
            f(conn)
        })
    }

    /// Runs `f` through the single writer (see [`Db::write`]).
    pub fn write<T, F>(&self, f: F) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnOnce(&Connection) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let guard = self.pending_guard();
        self.app.db.write(move |conn| {
            if let Some(guard) = &guard {
                guard.confirm(conn, None)?;
            }
            f(conn)
        })
    }

    /// A rendered answer kept by [`Ctx::remember`], if it was read at the
    /// position where this request found its session live (so nothing was
    /// committed in between). None for a session that needs confirming.
    pub fn cached(&self, key: &str) -> Option<Bytes> {
        self.app.reads.get(self.live_at, key)
    }

    /// Keeps a rendered answer read at `read_at`. Only for answers that are the
    /// same for every caller allowed to ask (the location catalogs).
    pub fn remember(&self, read_at: Option<Stamp>, key: String, value: Bytes) {
        self.app.reads.insert(read_at, key, value);
    }

    fn pending_guard(&self) -> Option<SessionGuard> {
        self.guard.as_ref().filter(|g| !g.passed()).cloned()
    }
}

pub struct App {
    pub db: Db,
    pub settings: Settings,
    pub lockout: Lockout,
    /// Sessions recently seen (see [`auth::cache`]).
    pub sessions: Arc<SessionCache>,
    /// Rendered answers kept until the next commit (see [`crate::db::cache`]).
    pub reads: ReadCache,
    router: Router<Endpoint>,
}

impl App {
    pub fn new(db: Db, settings: Settings) -> Arc<App> {
        Arc::new(App {
            db,
            settings,
            lockout: Lockout::default(),
            sessions: Arc::default(),
            reads: ReadCache::new(crate::db::cache::DEFAULT_BUDGET_BYTES),
            router: crate::routes::table(),
        })
    }

    pub fn router(&self) -> &Router<Endpoint> {
        &self.router
    }

    /// Routes, authenticates and runs one request. Every failure becomes the
    /// contract's error body here.
    pub async fn handle(self: &Arc<Self>, req: Request) -> Response {
        let unread = req.unread_body();
        let declared = req
            .header("content-length")
            .and_then(|l| l.trim().parse::<u64>().ok());
        let response = self.dispatch(req).await;
        settle_unread(&unread, declared, response).await
    }

    async fn dispatch(self: &Arc<Self>, mut req: Request) -> Response {
        let matched = match self.router.resolve(req.method(), req.segments()) {
            Ok(matched) => matched,
            Err(err) => return Response::error(&err),
        };
        req.set_params(matched.params);
        let endpoint = &matched.route.target;
        let (principal, guard, live_at) = match endpoint.access {
            Access::Public => (None, None, None),
            Access::Session => match auth::authenticate(self, &req).await {
                Ok(found) => (
                    Some(found.principal),
                    found.recheck.map(|hash| SessionGuard::new(self, hash)),
                    found.live_at,
                ),
                Err(err) => return Response::error(&err),
            },
        };
        let ctx = Ctx {
            app: self.clone(),
            req,
            principal,
            guard: guard.clone(),
            live_at,
        };
        let answer = (endpoint.handler)(ctx).await;
        // A handler that never reached the store has not confirmed a session
        // taken from a stale cache: confirm it before anything is answered.
        if let Some(guard) = guard.filter(|g| !g.passed()) {
            let confirm = guard.clone();
            if let Err(err) = self
                .db
                .read_at(move |conn, at| confirm.confirm(conn, at))
                .await
            {
                return Response::error(&err);
            }
        }
        match answer {
            Ok(response) => response,
            Err(err) => Response::error(&err),
        }
    }
}
