//! The application: shared state, the request context handlers receive, and
//! [`App::handle`], which takes one request through routing, authentication and
//! its handler to a response. Tests can call it directly, without a socket.
//!
//! A route is declared once, as an [`Endpoint`] (method, path, access, handler
//! and its OpenAPI operation); `src/routes.rs` lists them and hands the list
//! to [`App::new`], which builds the router from it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::db::Conn;
use bytes::Bytes;

use crate::auth::check::{SessionCheck, SessionGuard, SessionLimits};
use crate::auth::checks::PasswordChecks;
use crate::auth::lockout::Lockout;
use crate::auth::principal::{Access, Principal};
use crate::db::ReadSize;
use crate::db::blobs::{self, BlobWriter};
use crate::db::cache::{ReadCache, RowCache};
use crate::db::stamp::Stamp;
use crate::db::{Db, Tables};
use crate::error::{ApiError, ApiResult};
use crate::http::cors::Cors;
use crate::http::request::settle_unread;
use crate::http::{Method, Request, Response, Router};
use crate::openapi::op::{Op, ResourceOps};
use crate::workspaces::scope::{self, Scope};

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
    /// Uploads in progress at once; one more is answered 503 before its body
    /// is read (`--max-uploads`).
    pub max_uploads: usize,
    /// A live change stream sends a comment at least this often, and checks
    /// the caller's session as often.
    pub changes_heartbeat: Duration,
    /// Webhooks may target loopback and private addresses (`--webhook-allow-private`).
    pub webhook_allow_private: bool,
    /// The one web origin whose pages may call the API (`--cors-origin`);
    /// none: no CORS at all.
    pub cors: Option<Cors>,
    /// Downloads of active content (HTML, SVG, scripts, XML) keep their media
    /// type (`--serve-active-content`); else they are `application/octet-stream`.
    pub serve_active_content: bool,
    /// The access log is on (`--access-log`, at log level info or finer):
    /// query values that are live keys are looked for, to be redacted.
    pub access_log: bool,
    /// Password checks that may run at once (`--login-checks`).
    pub login_checks: usize,
    /// Logins that may wait for a check (`--login-queue`); more answer 503.
    pub login_queue: usize,
    /// Failed logins an address may make per minute (`--login-failures-per-minute`; 0: no limit).
    pub login_failures_per_minute: u32,
    /// Where `quayside user unlock` leaves its requests for this server
    /// (`auth::lockout::unlock_requests_path` of the data file).
    pub unlock_requests: Option<std::path::PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            session_idle: Duration::from_secs(8 * 3600),
            session_max: Duration::from_secs(7 * 24 * 3600),
            pbkdf2_iterations: crate::auth::password::DEFAULT_ITERATIONS,
            max_upload_bytes: 256 * 1024 * 1024,
            max_uploads: DEFAULT_MAX_UPLOADS,
            changes_heartbeat: Duration::from_secs(15),
            webhook_allow_private: false,
            cors: None,
            serve_active_content: false,
            access_log: false,
            login_checks: crate::auth::checks::default_checks(),
            login_queue: crate::auth::checks::DEFAULT_QUEUE,
            login_failures_per_minute: crate::auth::lockout::DEFAULT_FAILURES_PER_MINUTE,
            unlock_requests: None,
        }
    }
}

/// Uploads in progress at once, by default. Each holds a connection, a
/// writer turn per MiB and, paused, at most what arrives in a second.
pub const DEFAULT_MAX_UPLOADS: usize = 32;

/// Seconds a client is asked to wait before trying an upload again when all
/// upload slots are in use.
pub const UPLOAD_RETRY_AFTER_SECS: u64 = 5;

/// A slot of [`Settings::max_uploads`], held for the whole upload.
pub struct UploadSlot(#[allow(dead_code)] tokio::sync::OwnedSemaphorePermit);

impl Drop for UploadSlot {
    fn drop(&mut self) {
        crate::memory::released();
    }
}

/// How [`Ctx`] finds the workspace of a path for its caller (`scope::load`).
type ScopeLoader = fn(&Conn, Arc<Principal>, &str) -> ApiResult<Scope>;

pub type HandlerFuture = Pin<Box<dyn Future<Output = ApiResult<Response>> + Send>>;
pub type Handler = Box<dyn Fn(Ctx) -> HandlerFuture + Send + Sync>;

/// One route, declared once: the router and `/openapi.json` both read it.
pub struct Endpoint {
    pub method: Method,
    pub pattern: &'static str,
    pub access: Access,
    pub handler: Handler,
    /// Its operation in the OpenAPI document.
    pub doc: Op,
}

/// A route any caller may use.
pub fn public<F, Fut>(method: Method, pattern: &'static str, doc: Op, handler: F) -> Endpoint
where
    F: Fn(Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ApiResult<Response>> + Send + 'static,
{
    endpoint(method, pattern, Access::Public, doc, handler)
}

/// A route that needs a live session key.
pub fn session<F, Fut>(method: Method, pattern: &'static str, doc: Op, handler: F) -> Endpoint
where
    F: Fn(Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ApiResult<Response>> + Send + 'static,
{
    endpoint(method, pattern, Access::Session, doc, handler)
}

/// A boxed handler, for [`resource`].
pub fn handler<F, Fut>(f: F) -> Handler
where
    F: Fn(Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ApiResult<Response>> + Send + 'static,
{
    Box::new(move |ctx| Box::pin(f(ctx)))
}

/// The five session routes of a resource with an id: list and create on
/// `collection`, read, patch and delete on `item`, with their operations
/// (`openapi::op::Resource`) and handlers in that order.
pub fn resource(
    collection: &'static str,
    item: &'static str,
    ops: ResourceOps,
    [list, create, get, patch, delete]: [Handler; 5],
) -> Vec<Endpoint> {
    let route = |method, pattern, doc, handler| Endpoint {
        method,
        pattern,
        access: Access::Session,
        handler,
        doc,
    };
    vec![
        route(Method::Get, collection, ops.list, list),
        route(Method::Post, collection, ops.create, create),
        route(Method::Get, item, ops.get, get),
        route(Method::Patch, item, ops.patch, patch),
        route(Method::Delete, item, ops.delete, delete),
    ]
}

fn endpoint<F, Fut>(
    method: Method,
    pattern: &'static str,
    access: Access,
    doc: Op,
    handler: F,
) -> Endpoint
where
    F: Fn(Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ApiResult<Response>> + Send + 'static,
{
    Endpoint {
        method,
        pattern,
        access,
        handler: self::handler(handler),
        doc,
    }
}

/// What a handler receives: the application, the request, and who it acts for.
///
/// Handlers reach the store only through this: [`Ctx::read`] and
/// [`Ctx::write`], or, under `/workspaces/{workspace_id}`, [`Ctx::read_in`]
/// and [`Ctx::write_in`], which load the workspace the caller may see inside
/// the same transaction. When the caller's session came from the cache after
/// the store changed, each confirms it first, in that same transaction (one
/// hop, not two).
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
        self.principal.as_deref().ok_or_else(no_session)
    }

    fn caller(&self) -> ApiResult<Arc<Principal>> {
        self.principal.clone().ok_or_else(no_session)
    }

    /// The session's confirmation still to make, if any.
    fn pending_guard(&self) -> Option<SessionGuard> {
        self.guard.as_ref().filter(|g| !g.passed()).cloned()
    }

    /// `f` preceded by the session's confirmation, when one is pending; `f`
    /// is given the read's position too.
    fn confirming<T, F>(
        &self,
        f: F,
    ) -> impl FnOnce(&Conn, Option<Stamp>) -> ApiResult<T> + Send + 'static
    where
        F: FnOnce(&Conn, Option<Stamp>) -> ApiResult<T> + Send + 'static,
    {
        let guard = self.pending_guard();
        move |conn, read_at| {
            if let Some(guard) = &guard {
                guard.confirm(conn, read_at)?;
            }
            f(conn, read_at)
        }
    }

    /// Runs `f` in one read transaction (see [`Db::read`]).
    pub fn read<T, F>(&self, f: F) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnOnce(&Conn) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let read = self.read_at(f);
        async move { Ok(read.await?.1) }
    }

    /// [`Ctx::read`] of one record ([`ReadSize::Point`]).
    pub fn read_point<T, F>(&self, f: F) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnOnce(&Conn) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let read = self.read_sized(ReadSize::Point, f);
        async move { Ok(read.await?.1) }
    }

    /// [`Ctx::read`], also answering the position the read began at, under
    /// which its answer may be kept with [`Ctx::remember`].
    pub fn read_at<T, F>(
        &self,
        f: F,
    ) -> impl Future<Output = ApiResult<(Option<Stamp>, T)>> + Send + 'static
    where
        F: FnOnce(&Conn) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        self.read_sized(ReadSize::Long, f)
    }

    /// [`Ctx::read_at`] for a read of the given size.
    pub fn read_sized<T, F>(
        &self,
        size: ReadSize,
        f: F,
    ) -> impl Future<Output = ApiResult<(Option<Stamp>, T)>> + Send + 'static
    where
        F: FnOnce(&Conn) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        self.read_positioned(size, move |conn, _| f(conn))
    }

    /// [`Ctx::read_sized`] of an `f` that is given the read's position.
    fn read_positioned<T, F>(
        &self,
        size: ReadSize,
        f: F,
    ) -> impl Future<Output = ApiResult<(Option<Stamp>, T)>> + Send + 'static
    where
        F: FnOnce(&Conn, Option<Stamp>) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        // The session's position was read before this read begins.
        self.app
            .db
            .read_sized(self.live_at, size, self.confirming(f))
    }

    /// Runs `f` through the single writer (see [`Db::write`]); `f` may run
    /// more than once (`db::writer`: a batch replayed), each time in a
    /// transaction that holds none of its earlier runs' writes.
    pub fn write<T, F>(&self, f: F) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnMut(&Conn) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        // A write may run twice (`db::writer`: a batch replayed after
        // another write in it failed), so the confirmation is made each time.
        let guard = self.pending_guard();
        let actor: Arc<str> = match &self.principal {
            Some(user) => Arc::from(user.username.as_str()),
            None => Arc::from(crate::db::SERVER_ACTOR),
        };
        let mut f = f;
        self.app.db.write_as(actor, move |conn| {
            if let Some(guard) = &guard {
                guard.confirm(conn, None)?;
            }
            f(conn)
        })
    }

    /// Runs `f` outside the writer (see [`crate::db::Db::write_aside`]): a write that
    /// must not count as a commit.
    pub fn write_aside<T, F>(&self, f: F) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnMut(&Conn) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        self.app.db.write_aside(f)
    }

    /// The workspace of the path (`{workspace_id}`) as `load` finds it for
    /// the caller (`scope::load`: as the caller may see it), with the caller:
    /// a workspace the caller may not see is a 404.
    fn scoped<T, F>(
        &self,
        load: ScopeLoader,
        f: F,
    ) -> ApiResult<impl FnMut(&Conn) -> ApiResult<T> + Send + 'static>
    where
        F: FnMut(&Conn, &Scope) -> ApiResult<T> + Send + 'static,
    {
        let user = self.caller()?;
        let workspace = self.req.param("workspace_id").to_string();
        let mut f = f;
        Ok(move |conn: &Conn| {
            let scope = load(conn, user.clone(), &workspace)?;
            f(conn, &scope)
        })
    }

    /// [`Ctx::read`] in the workspace of the path: `f` gets the [`Scope`].
    pub fn read_in<T, F>(&self, f: F) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnOnce(&Conn, &Scope) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let read = self.read_scoped(ReadSize::Long, f);
        async move { Ok(read.await?.1) }
    }

    /// [`Ctx::read_point`] in the workspace of the path: one record of it.
    pub fn read_point_in<T, F>(&self, f: F) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnOnce(&Conn, &Scope) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let read = self.read_point_in_at(f);
        async move { Ok(read.await?.1) }
    }

    /// [`Ctx::read_point_in`], also answering the position the read began
    /// at, under which its answer may be kept ([`Ctx::keep_document`]).
    pub fn read_point_in_at<T, F>(
        &self,
        f: F,
    ) -> impl Future<Output = ApiResult<(Option<Stamp>, T)>> + Send + 'static
    where
        F: FnOnce(&Conn, &Scope) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        self.read_scoped(ReadSize::Point, f)
    }

    /// A read of `size` in the workspace of the path, found as the read's
    /// position holds it (`scope::load_read`: kept while no commit changes a
    /// workspace or an organization).
    fn read_scoped<T, F>(
        &self,
        size: ReadSize,
        f: F,
    ) -> impl Future<Output = ApiResult<(Option<Stamp>, T)>> + Send + 'static
    where
        F: FnOnce(&Conn, &Scope) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let read = self.caller().map(|user| {
            let workspace = self.req.param("workspace_id").to_string();
            let app = self.app.clone();
            self.read_positioned(size, move |conn, read_at| {
                let scope =
                    scope::load_read(conn, &app.db, &app.scopes, read_at, user, &workspace)?;
                f(conn, &scope)
            })
        });
        async move { read?.await }
    }

    /// [`Ctx::write`] in the workspace of the path: `f` gets the [`Scope`].
    pub fn write_in<T, F>(&self, f: F) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnMut(&Conn, &Scope) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let write = self.scoped(scope::load, f).map(|f| self.write(f));
        async move { write?.await }
    }

    /// [`Ctx::write_in`] for answering the invitation of the path's workspace:
    /// also a pending workspace the caller's tenant is invited to, which it
    /// may not see yet (`scope::load_invitation`).
    pub fn write_invited<T, F>(&self, f: F) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnMut(&Conn, &Scope) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let write = self
            .scoped(scope::load_invitation, f)
            .map(|f| self.write(f));
        async move { write?.await }
    }

    /// One of the server's upload slots, or 503 `busy` with `Retry-After`
    /// when all are in use: taken before an upload's body is read.
    pub fn upload_slot(&self) -> ApiResult<UploadSlot> {
        self.app
            .uploads
            .clone()
            .try_acquire_owned()
            .map(UploadSlot)
            .map_err(|_| ApiError::Busy {
                limit: format!("{} uploads at once", self.app.settings.max_uploads),
                retry_after_secs: UPLOAD_RETRY_AFTER_SECS,
            })
    }

    /// A new blob, written chunk by chunk through the writer (uploads).
    pub async fn blob_writer(&self) -> ApiResult<BlobWriter> {
        BlobWriter::create(&self.app.db).await
    }

    /// The bytes `start..end` of a blob, read a piece at a time (downloads).
    pub fn blob_stream(
        &self,
        blob_id: &str,
        start: u64,
        end: u64,
    ) -> tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>> {
        blobs::stream(&self.app.db, blob_id, start, end)
    }

    /// A rendered answer kept by [`Ctx::remember`], if the store holds the
    /// same locations at the position where this request found its session
    /// live as where the answer was read (`Db::same` of the locations). None for a
    /// session that needs confirming.
    pub fn cached(&self, key: &crate::db::cache::Key) -> Option<Bytes> {
        let db = &self.app.db;
        self.app.reads.get(self.live_at, key, &|then, now| {
            db.same(Tables::LOCATIONS, Some(then), Some(now))
        })
    }

    /// A document's answer kept by [`Ctx::keep_document`] (`form`: which
    /// answer), if at the position where this request found its session
    /// live the caller may see the path's workspace as it is kept there
    /// (`scope::kept`), and the document did not change since the answer was
    /// read (`Db::changed_documents`). None otherwise: the caller reads.
    pub fn kept_document(&self, form: &str, id: &str) -> Option<Bytes> {
        let user = self.principal.as_ref()?;
        let workspace = self.req.param("workspace_id");
        let db = &self.app.db;
        let found = scope::kept(db, &self.app.scopes, self.live_at, workspace)?;
        if !found.visible_to(user) {
            return None;
        }
        self.app
            .documents
            .get(self.live_at, id, (form, workspace), &|then, now| {
                db.changed_documents(Some(then), Some(now))
            })
    }

    /// Keeps a document's answer read at `read_at`, for the path's workspace.
    /// Only for an answer made of the document's own row alone, the same for
    /// every caller who may see the workspace (`documents::routes::get`).
    pub fn keep_document(
        &self,
        read_at: Option<Stamp>,
        form: &'static str,
        id: &str,
        answer: Bytes,
    ) {
        let db = &self.app.db;
        let workspace = self.req.param("workspace_id");
        self.app
            .documents
            .insert(read_at, id, (form, workspace), answer, &|then, now| {
                db.changed_documents(Some(then), Some(now))
            });
    }

    /// Keeps a rendered answer read at `read_at`. Only for answers that are the
    /// same for every caller allowed to ask and made of the location records
    /// alone (the location catalogs' GET one record): the cache outlives
    /// commits that changed no location.
    pub fn remember(&self, read_at: Option<Stamp>, key: crate::db::cache::Key, value: Bytes) {
        let db = &self.app.db;
        self.app.reads.insert(read_at, key, value, &|then, now| {
            db.same(Tables::LOCATIONS, Some(then), Some(now))
        });
    }

    /// What a long-lived reader (a long-poll, a live stream) waits on between
    /// its reads.
    pub async fn follow(&self) -> Follow {
        Follow {
            head: self.app.db.changes_head(),
            elsewhere: self.app.db.changes_elsewhere(),
            closing: self.app.closing.subscribe(),
            db: self.app.db.clone(),
            stamp: self.app.db.stamp().await,
        }
    }

    /// Whether the caller's session still holds (a live stream checks it
    /// between events, so a logout or an expiry ends the stream).
    pub async fn still_signed_in(&self) -> bool {
        let Ok(found) = self.app.sessions.authenticate(&self.req).await else {
            return false;
        };
        // A session taken from a cache the store has moved past is confirmed
        // in the store, as a handler's first read would.
        match found.recheck {
            None => true,
            Some(hash) => self
                .app
                .confirm(self.app.sessions.guard(hash))
                .await
                .is_ok(),
        }
    }
}

/// Why [`Follow::wait`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The change log moved past what the reader has seen (or another process
    /// committed, which may have appended changes).
    Moved,
    /// The deadline passed first.
    Timeout,
    /// The server is shutting down.
    Closing,
}

/// The change log's head and the server's shutdown, for a reader that waits.
pub struct Follow {
    head: tokio::sync::watch::Receiver<u64>,
    /// Other processes' commits (PostgreSQL), heard: a reason to look.
    elsewhere: Option<tokio::sync::watch::Receiver<u64>>,
    closing: tokio::sync::watch::Receiver<bool>,
    db: Db,
    stamp: Option<Stamp>,
}

impl Follow {
    /// How often a waiting reader looks for commits of other processes (the
    /// CLI's import), which do not pass through this server's writer. On
    /// PostgreSQL they are also heard at once (`db::pg::listen`); this is
    /// the fallback when a notification is lost.
    const OTHER_PROCESSES: Duration = Duration::from_millis(500);

    /// Waits until the log's head passes `seen`, `deadline` passes or the
    /// server begins shutting down.
    pub async fn wait(&mut self, seen: u64, deadline: tokio::time::Instant) -> Wake {
        loop {
            if *self.closing.borrow_and_update() {
                return Wake::Closing;
            }
            if *self.head.borrow_and_update() > seen {
                return Wake::Moved;
            }
            let stamp = self.db.stamp().await;
            if stamp != self.stamp {
                self.stamp = stamp;
                return Wake::Moved;
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Wake::Timeout;
            }
            let nap = (deadline - now).min(Self::OTHER_PROCESSES);
            tokio::select! {
                _ = self.head.changed() => {}
                _ = self.closing.changed() => {}
                () = crate::db::heard_elsewhere(self.elsewhere.as_mut()) => {}
                () = tokio::time::sleep(nap) => {
                    // No commit position could be read (PostgreSQL not
                    // answering): another process may have committed; the
                    // reader looks again.
                    if stamp.is_none() && now + nap < deadline {
                        return Wake::Moved;
                    }
                }
            }
        }
    }

    /// True once the server has begun shutting down.
    pub fn closing(&self) -> bool {
        *self.closing.borrow()
    }
}

fn no_session() -> ApiError {
    ApiError::Unauthorized("A session key is required".into())
}

pub struct App {
    pub db: Db,
    pub settings: Settings,
    pub lockout: Lockout,
    /// The bound on password checks running and waiting (see [`crate::auth::checks`]).
    pub checks: PasswordChecks,
    /// The session check and the sessions seen (see [`crate::auth::check`]).
    pub sessions: SessionCheck,
    /// Rendered answers kept until the next commit (see [`crate::db::cache`]).
    pub reads: ReadCache,
    /// The workspaces reads found (see [`crate::workspaces::scope`]).
    pub scopes: scope::Scopes,
    /// Documents' answers, each kept until its document changes (see
    /// [`crate::db::cache::RowCache`]).
    pub documents: RowCache,
    /// The upload slots (see [`Ctx::upload_slot`]).
    uploads: Arc<tokio::sync::Semaphore>,
    router: Router<Endpoint>,
    /// True once shutdown began: live streams end, long-polls answer.
    closing: tokio::sync::watch::Sender<bool>,
}

impl App {
    /// The application serving `routes` (see `src/routes.rs`).
    pub fn new(db: Db, settings: Settings, routes: Vec<Endpoint>) -> Arc<App> {
        let mut router = Router::default();
        for endpoint in routes {
            router.add(endpoint.method, endpoint.pattern, endpoint);
        }
        let limits = SessionLimits::new(settings.session_idle, settings.session_max);
        let uploads = Arc::new(tokio::sync::Semaphore::new(settings.max_uploads.max(1)));
        let shared = db.shared();
        Arc::new(App {
            sessions: SessionCheck::new(db.clone(), limits),
            db,
            // Several processes may serve a PostgreSQL database: there the
            // pairs' failures are counted in it (`lockout::shared`).
            lockout: if shared {
                Lockout::shared(settings.login_failures_per_minute)
            } else {
                Lockout::new(
                    settings.login_failures_per_minute,
                    settings.unlock_requests.clone(),
                )
            },
            checks: PasswordChecks::new(settings.login_checks, settings.login_queue),
            settings,
            reads: ReadCache::new(crate::db::cache::DEFAULT_BUDGET_BYTES),
            scopes: scope::Scopes::new(),
            documents: RowCache::new(crate::db::cache::DOCUMENTS_BUDGET_BYTES),
            uploads,
            router,
            closing: tokio::sync::watch::channel(false).0,
        })
    }

    /// Confirms in the store a session taken from a cache the store has moved
    /// past, in a read of its own.
    async fn confirm(&self, guard: SessionGuard) -> ApiResult<()> {
        self.db.read(move |conn, at| guard.confirm(conn, at)).await
    }

    /// Begins shutdown: live streams end and waiting long-polls answer, so
    /// that the requests in flight can finish.
    pub fn shut_down(&self) {
        self.closing.send_replace(true);
    }

    /// A receiver that turns true when shutdown begins (background tasks).
    pub fn closing(&self) -> tokio::sync::watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// Routes, authenticates and runs one request. Every failure becomes the
    /// contract's error body here.
    pub async fn handle(self: &Arc<Self>, req: Request) -> Response {
        let unread = req.unread_body();
        let declared = req
            .header(crate::http::header::CONTENT_LENGTH)
            .and_then(|l| l.trim().parse::<u64>().ok());
        let secrets = self.live_keys_in_query(&req).await;
        let cors = self
            .settings
            .cors
            .as_ref()
            .map(|cors| (cors, cors.allows(&req)));
        let mut response = self.dispatch(req).await;
        for name in &secrets {
            response = response.secret_param(name);
        }
        if let Some((cors, allowed)) = cors {
            response = cors.decorate(allowed, response);
        }
        settle_unread(&unread, declared, response).await
    }

    /// The query parameters, other than `api_key`, whose value is a live
    /// session key: the access log hides them too. Looked for only while the
    /// access log is on, and only texts shaped like a key cost a look-up.
    async fn live_keys_in_query(&self, req: &Request) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        if !self.settings.access_log {
            return names;
        }
        for (name, value) in req.query_pairs() {
            if name != "api_key" && !names.contains(name) && self.sessions.is_live_key(value).await
            {
                names.push(name.clone());
            }
        }
        names
    }

    async fn dispatch(self: &Arc<Self>, mut req: Request) -> Response {
        let matched = match self.router.resolve(req.method(), req.segments()) {
            Ok(matched) => matched,
            // OPTIONS on any path of the table: the methods it takes. (No
            // route declares OPTIONS; the router's 405 lists them, OPTIONS too.)
            Err(ApiError::MethodNotAllowed { allow }) if req.method() == Method::Options => {
                return Cors::options(self.settings.cors.as_ref(), &req, &allow.join(", "));
            }
            Err(err) => return Response::error(&err),
        };
        req.set_params(matched.params);
        let endpoint = &matched.route.target;
        let (principal, guard, live_at) = match endpoint.access {
            Access::Public => (None, None, None),
            Access::Session => match self.sessions.authenticate(&req).await {
                Ok(found) => (
                    Some(found.principal),
                    found.recheck.map(|hash| self.sessions.guard(hash)),
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
            if let Err(err) = self.confirm(guard).await {
                return Response::error(&err);
            }
        }
        match answer {
            Ok(response) => response,
            Err(err) => Response::error(&err),
        }
    }
}
