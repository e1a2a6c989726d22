//! The application: shared state, the request context handlers receive, and
//! [`App::handle`], which takes one request through routing, authentication and
//! its handler to a response. Tests can call it directly, without a socket.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::{self, Principal, lockout::Lockout};
use crate::db::Db;
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
pub struct Ctx {
    pub app: Arc<App>,
    pub req: Request,
    principal: Option<Principal>,
}

impl Ctx {
    /// The caller. Always present on [`Access::Session`] routes.
    pub fn user(&self) -> ApiResult<&Principal> {
        self.principal
            .as_ref()
            .ok_or_else(|| ApiError::Unauthorized("A session key is required".into()))
    }
}

pub struct App {
    pub db: Db,
    pub settings: Settings,
    pub lockout: Lockout,
    router: Router<Endpoint>,
}

impl App {
    pub fn new(db: Db, settings: Settings) -> Arc<App> {
        Arc::new(App {
            db,
            settings,
            lockout: Lockout::default(),
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
        let principal = match endpoint.access {
            Access::Public => None,
            Access::Session => match auth::authenticate(self, &req).await {
                Ok(principal) => Some(principal),
                Err(err) => return Response::error(&err),
            },
        };
        let ctx = Ctx {
            app: self.clone(),
            req,
            principal,
        };
        match (endpoint.handler)(ctx).await {
            Ok(response) => response,
            Err(err) => Response::error(&err),
        }
    }
}
