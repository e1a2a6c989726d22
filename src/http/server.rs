//! The listener: accepts connections, serves HTTP/1.1 on each with hyper, turns
//! hyper's request into ours, hands one access-log line per request to the
//! [`super::access_log`] writer, and on shutdown stops accepting and lets requests in flight finish (bounded).
//!
//! A connection that is not working on a request (no request in the handler,
//! no response body still being written) for longer than the header timeout is
//! closed: that cuts off slow-loris clients that trickle header bytes, and idle
//! keep-alive connections. One watchdog timer per connection does this; hyper's
//! own header timeout would arm and cancel a timer on every request.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use super::access_log::AccessLog;
use super::request::{Method, Request};
use super::response::{Response, ResponseBody};

/// How the listener treats connections.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// A client that has not sent its request headers in this time is dropped
    /// (defends against slow-loris connections).
    pub header_timeout: Duration,
    /// On shutdown, how long requests in flight may take to finish.
    pub grace: Duration,
    /// Longest wait for the next piece of a request body (408 after it).
    pub body_timeout: Duration,
}

/// Serves until `shutdown` resolves, then waits at most `limits.grace` for
/// requests in flight.
pub async fn serve<H, Fut>(
    listener: TcpListener,
    handler: H,
    shutdown: impl Future<Output = ()>,
    limits: Limits,
    access: AccessLog,
) where
    H: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    let handler = Arc::new(handler);
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder.header_read_timeout(None).keep_alive(true);
    let epoch = Instant::now();
    tokio::pin!(shutdown);
    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    log::warn!("accept failed: {err}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let handler = handler.clone();
        let access = access.clone();
        let body_timeout = limits.body_timeout;
        let activity = Arc::new(Activity::new(epoch));
        let tracked = activity.clone();
        let service = service_fn(move |req: hyper::Request<Incoming>| {
            let handler = handler.clone();
            let access = access.clone();
            let activity = tracked.clone();
            activity.begin();
            async move {
                let response = handle(&*handler, req, remote, body_timeout, &access).await;
                Ok::<_, std::convert::Infallible>(response.map(|body| Tracked {
                    body,
                    activity: Some(activity),
                }))
            }
        });
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        let header_timeout = limits.header_timeout;
        tokio::spawn(async move {
            tokio::select! {
                ended = connection => if let Err(err) = ended {
                    log::debug!("connection from {remote} ended: {err}");
                },
                () = activity.idle_for(header_timeout) => {
                    log::debug!("closed {remote}: no request within {header_timeout:?}");
                }
            }
        });
    }
    drop(listener);
    log::info!("stopped accepting; waiting for requests in flight");
    let grace = limits.grace;
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        log::warn!("requests still in flight after {grace:?}; closing them");
    }
}

/// What one connection is doing, for its watchdog.
struct Activity {
    epoch: Instant,
    /// Requests in the handler plus response bodies not yet fully written.
    busy: AtomicUsize,
    /// When `busy` last fell to zero (or the connection opened), in ms after `epoch`.
    idle_since_ms: AtomicU64,
}

impl Activity {
    fn new(epoch: Instant) -> Activity {
        Activity {
            epoch,
            busy: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(epoch.elapsed().as_millis() as u64),
        }
    }

    fn begin(&self) {
        self.busy.fetch_add(1, Ordering::AcqRel);
    }

    fn end(&self) {
        self.idle_since_ms
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Release);
        self.busy.fetch_sub(1, Ordering::AcqRel);
    }

    /// Resolves once the connection has been idle for `limit`; checked a few
    /// times per `limit`, so it fires between `limit` and 1.25 x `limit`.
    async fn idle_for(&self, limit: Duration) {
        let tick = (limit / 4).max(Duration::from_millis(100));
        loop {
            tokio::time::sleep(tick).await;
            if self.busy.load(Ordering::Acquire) > 0 {
                continue;
            }
            let now = self.epoch.elapsed().as_millis() as u64;
            let since = self.idle_since_ms.load(Ordering::Acquire);
            if now.saturating_sub(since) >= limit.as_millis() as u64 {
                return;
            }
        }
    }
}

/// A response body that tells its connection's [`Activity`] when it is done
/// (written to the end, or dropped with the connection).
struct Tracked {
    body: ResponseBody,
    activity: Option<Arc<Activity>>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(activity) = self.activity.take() {
            activity.end();
        }
    }
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = super::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

async fn handle<H, Fut>(
    handler: &H,
    req: hyper::Request<Incoming>,
    remote: SocketAddr,
    body_timeout: Duration,
    access: &AccessLog,
) -> hyper::Response<ResponseBody>
where
    H: Fn(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    // The access line costs a clock read and two copies; skip them when off.
    let started = access.enabled().then(Instant::now);
    let (parts, body) = req.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path(), |pq| pq.as_str());
    let body = body.map_err(Into::into).boxed();
    let method = Method::parse(parts.method.as_str());
    let response = match Request::new(
        method,
        target,
        parts.headers,
        body,
        Some(remote),
        body_timeout,
    ) {
        Ok(request) => handler(request).await,
        Err(err) => Response::error(&err),
    };
    // An answer that says nothing of caching is not to be kept: API answers
    // carry keys and tenants' data. The console's files and downloads say
    // otherwise themselves.
    let response = response.default_header("cache-control", NO_STORE);
    if let Some(started) = started {
        access.record(
            remote,
            parts.method.as_str(),
            &redact_secrets(target, response.secret_params()),
            response.status(),
            started.elapsed(),
        );
    }
    response.into_hyper()
}

/// `Cache-Control` of every answer that does not set its own.
pub const NO_STORE: &str = "no-store";

/// The request target with every `api_key` and `password` value replaced, and
/// those of the parameters in `also` (named by the handler: values that are
/// live keys under another name), so a log file never holds a usable key.
pub fn redact_secrets(target: &str, also: &[String]) -> String {
    let Some((path, query)) = target.split_once('?') else {
        return target.to_string();
    };
    let redacted: Vec<String> = query
        .split('&')
        .map(|pair| {
            let name = pair.split('=').next().unwrap_or("");
            // Judge the decoded name: `api%5Fkey` is an api_key too.
            let decoded = super::urlencoded::decode_pairs(name, "query string")
                .ok()
                .and_then(|pairs| pairs.into_iter().next())
                .map_or_else(|| name.to_string(), |(n, _)| n);
            if decoded.eq_ignore_ascii_case("api_key")
                || decoded.eq_ignore_ascii_case("password")
                || also.contains(&decoded)
            {
                format!("{name}=REDACTED")
            } else {
                pair.to_string()
            }
        })
        .collect();
    format!("{path}?{}", redacted.join("&"))
}

#[cfg(test)]
mod tests {
    use super::redact_secrets;

    #[test]
    fn api_key_never_survives_redaction() {
        assert_eq!(
            redact_secrets("/ports?page=2&api_key=abc123&name=x", &[]),
            "/ports?page=2&api_key=REDACTED&name=x"
        );
        assert_eq!(redact_secrets("/ports/X", &[]), "/ports/X");
        assert!(!redact_secrets("/p?API_KEY=zzz", &[]).contains("zzz"));
        assert!(!redact_secrets("/p?api%5Fkey=zzz", &[]).contains("zzz"));
    }

    #[test]
    fn parameters_named_by_the_handler_are_redacted_too() {
        let also = ["apikey".to_string()];
        assert_eq!(
            redact_secrets("/p?apikey=k1&name=x&apikey=k2&api%6Bey=k3", &also),
            "/p?apikey=REDACTED&name=x&apikey=REDACTED&api%6Bey=REDACTED"
        );
    }
}
