//! The listener: accepts connections, serves HTTP/1.1 on each with hyper, turns
//! hyper's request into ours, hands one access-log line per request to the
//! [`super::access_log`] writer, and on shutdown stops accepting and lets requests in flight finish (bounded).
//!
//! A connection that is not working on a request (no request in the handler,
//! no response body still being written) for longer than the header timeout is
//! closed: that cuts off slow-loris clients that trickle header bytes, and idle
//! keep-alive connections. One watchdog timer per connection does this; hyper's
//! own header timeout would arm and cancel a timer on every request.
//!
//! At most `max_connections` connections are served at once ([`Connections`]).
//! A new connection beyond them takes the place of the one idle the longest
//! (connections that never made a request go first, so established clients
//! keep theirs), which is closed; when every connection is working on a
//! request, the new one is answered by the shedder: `/healthz` as usual,
//! anything else 503 `busy` with `Retry-After` and `Connection: close`,
//! within a second, at most [`SHED_RESERVE`] at a time (beyond them it is
//! closed unanswered). So a flood of idle connections never takes the
//! descriptors, and `/healthz` and working clients stay served.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};

use super::access_log::{AccessLog, Peer};
use super::automatic::Answered;
use super::request::{Method, Request};
use super::response::{Response, ResponseBody};
use crate::error::ApiError;

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
    /// Connections served at once (`--max-connections`).
    pub max_connections: usize,
}

/// Connections beyond `max_connections` answered at once by the shedder
/// (`/healthz`, or 503); descriptors to keep free for them.
pub const SHED_RESERVE: usize = 64;

/// How long the shedder waits for a shed connection's request.
const SHED_TIMEOUT: Duration = Duration::from_secs(1);

/// `Retry-After` of a shed connection's 503.
const SHED_RETRY_AFTER_SECS: u64 = 1;

/// The one route a shed connection is still answered on: the liveness probe.
const HEALTH_PATH: &str = "/healthz";

/// Largest read buffer of a connection: request headers must fit in it, and a
/// body is read through it a piece at a time. hyper's default (about 400 KiB)
/// is what every stalled upload and idle connection could keep.
const READ_BUFFER_MAX: usize = 64 * 1024;

/// Connections asked to give way and not yet closed, at most: the listener
/// accepts no more until they have gone, so a flood of new connections is
/// taken in at the pace the old ones close, and never holds more than the
/// cap and this many descriptors.
const EVICTING_MAX: usize = 64;

/// A failing `accept` is logged at most this often, with the count.
const ACCEPT_WARN_EVERY: Duration = Duration::from_secs(10);

/// Pause after a failed `accept`.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Connections the kernel completes and queues for `accept` (capped by
/// `net.core.somaxconn`). The standard library's 128 overflows under a burst
/// of connections, and each connection refused there waits a second for its
/// client's retry: a new client's `/healthz` took 1.2 s during a flood.
const LISTEN_BACKLOG: u32 = 4096;

/// A listener on `address` with a backlog of [`LISTEN_BACKLOG`].
pub fn bind(address: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(LISTEN_BACKLOG)
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
    let (stopping, stop) = watch::channel(false);
    let connections = Arc::new(Connections::new(limits.max_connections));
    let mut builder = http1::Builder::new();
    builder
        .header_read_timeout(None)
        .keep_alive(true)
        .max_buf_size(READ_BUFFER_MAX);
    let epoch = Instant::now();
    let mut failures = Throttle::new(ACCEPT_WARN_EVERY);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = connections.settled() => {}
            () = &mut shutdown => break,
        }
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    // Out of descriptors (the cap leaves a reserve, but other
                    // processes' or the system's limit may bite): free one.
                    if matches!(err.raw_os_error(), Some(23 | 24)) {
                        connections.evict_one();
                    }
                    if let Some(missed) = failures.ready() {
                        log::warn!("accept failed: {err} ({missed} more failures not logged)");
                    }
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let activity = Arc::new(Activity::new(epoch));
        let Some(id) = connections.admit(&activity) else {
            connections.shed(
                stream,
                remote,
                handler.clone(),
                access.clone(),
                &builder,
                limits,
            );
            continue;
        };
        let connection = Connection {
            id,
            stream,
            remote,
            activity,
            connections: connections.clone(),
            stop: stop.clone(),
        };
        tokio::spawn(connection.serve(handler.clone(), access.clone(), builder.clone(), limits));
    }
    drop(listener);
    log::info!("stopped accepting; waiting for requests in flight");
    stopping.send_replace(true);
    let grace = limits.grace;
    if tokio::time::timeout(grace, connections.drained())
        .await
        .is_err()
    {
        log::warn!("requests still in flight after {grace:?}; closing them");
    }
}

/// One admitted connection.
struct Connection {
    id: u64,
    stream: TcpStream,
    remote: SocketAddr,
    activity: Arc<Activity>,
    connections: Arc<Connections>,
    stop: watch::Receiver<bool>,
}

impl Connection {
    /// Serves requests until the client closes, the watchdog finds it idle,
    /// or it is asked to close (evicted, or shutdown): then it closes at once
    /// when idle (hyper's own graceful shutdown would wait for the first
    /// request of a connection that never sent one), or once the request in
    /// flight is answered.
    async fn serve<H, Fut>(
        mut self,
        handler: Arc<H>,
        access: AccessLog,
        builder: http1::Builder,
        limits: Limits,
    ) where
        H: Fn(Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response> + Send + 'static,
    {
        let remote = self.remote;
        let peer = Arc::new(Peer::new(remote));
        let tracked = self.activity.clone();
        let service = service_fn(move |req: hyper::Request<Incoming>| {
            let handler = handler.clone();
            let access = access.clone();
            let activity = tracked.clone();
            let peer = peer.clone();
            activity.begin();
            // Boxed: the connection can then be taken apart when it ends.
            Box::pin(async move {
                let response =
                    handle(&*handler, req, &peer, limits.body_timeout, &access, None).await;
                Ok::<_, std::convert::Infallible>(response.map(|body| Tracked {
                    body,
                    activity: Some(activity),
                }))
            })
        });
        let mut connection = builder.serve_connection(
            TokioIo::new(Answered::new(self.stream, READ_BUFFER_MAX)),
            service,
        );
        let header_timeout = limits.header_timeout;
        let mut closing = false;
        let mut answered = false;
        loop {
            tokio::select! {
                ended = std::future::poll_fn(|cx| connection.poll_without_shutdown(cx)) => {
                    match ended {
                        Ok(()) => answered = true,
                        Err(err) => log::debug!("connection from {remote} ended: {err}"),
                    }
                    break;
                }
                () = self.activity.idle_for(header_timeout) => {
                    log::debug!("closed {remote}: no request within {header_timeout:?}");
                    break;
                }
                () = self.activity.evicted.notified(), if !closing => {
                    if self.activity.busy.load(Ordering::Acquire) == 0 {
                        log::debug!("closed {remote}: its place went to a new connection");
                        break;
                    }
                    // A request began since it was picked: it is answered first.
                    self.connections.still_working(self.id);
                    Pin::new(&mut connection).graceful_shutdown();
                    closing = true;
                }
                _ = self.stop.changed(), if !closing => {
                    if self.activity.busy.load(Ordering::Acquire) == 0 {
                        break;
                    }
                    Pin::new(&mut connection).graceful_shutdown();
                    closing = true;
                }
            }
        }
        if answered {
            linger(connection.into_parts().io.into_inner().into_inner()).await;
        }
        self.connections.remove(self.id);
        crate::memory::released();
    }
}

/// After the last answer: the write side is closed, and what the client
/// still sends is read and thrown away for a moment before the socket is
/// closed. Closed with unread bytes, the socket would reset the connection,
/// and a client still sending a body that was answered early (a 400 on an
/// upload's part headers, a 503) could lose the answer with it.
async fn linger(mut stream: TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if stream.shutdown().await.is_err() {
        return;
    }
    let mut buffer = vec![0u8; 8 * 1024];
    let mut left = LINGER_BYTES;
    let deadline = tokio::time::sleep(LINGER);
    tokio::pin!(deadline);
    while left > 0 {
        tokio::select! {
            read = stream.read(&mut buffer) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => left = left.saturating_sub(n),
            },
            () = &mut deadline => return,
        }
    }
}

/// How long, and how many bytes, [`linger`] reads at most.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 16 * 1024 * 1024;

/// The connections being served, for the cap and for shutdown.
struct Connections {
    max: usize,
    open: Mutex<Open>,
    next_id: AtomicU64,
    /// Shed connections being answered.
    shedding: Arc<AtomicUsize>,
    /// Signalled when the last connection ends.
    empty: Notify,
    /// Signalled when a connection asked to give way has gone.
    gone: Notify,
}

/// The connections and how many of them were asked to give way.
struct Open {
    all: HashMap<u64, Arc<Activity>>,
    evicting: usize,
}

impl Open {
    /// Connections that count against the cap: all but those on their way
    /// out (idle when asked, so closing at once).
    fn live(&self) -> usize {
        self.all.len() - self.evicting
    }

    /// Asks the connection idle the longest to close, connections that
    /// never made a request before any other; false when none is idle.
    fn evict(&mut self) -> bool {
        let victim = self
            .all
            .values()
            .filter(|a| !a.evicting.load(Ordering::Relaxed) && a.busy.load(Ordering::Acquire) == 0)
            .min_by_key(|a| {
                (
                    a.requests.load(Ordering::Relaxed) > 0,
                    a.idle_since_ms.load(Ordering::Acquire),
                )
            });
        let Some(victim) = victim else {
            return false;
        };
        victim.evicting.store(true, Ordering::Relaxed);
        victim.evicted.notify_one();
        self.evicting += 1;
        true
    }
}

impl Connections {
    fn new(max: usize) -> Connections {
        Connections {
            max: max.max(1),
            open: Mutex::new(Open {
                all: HashMap::new(),
                evicting: 0,
            }),
            next_id: AtomicU64::new(0),
            shedding: Arc::new(AtomicUsize::new(0)),
            empty: Notify::new(),
            gone: Notify::new(),
        }
    }

    /// Resolves while fewer than [`EVICTING_MAX`] connections asked to give
    /// way are still open.
    async fn settled(&self) {
        loop {
            let gone = self.gone.notified();
            if self.lock().evicting < EVICTING_MAX {
                return;
            }
            gone.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a new connection, making room for it when the cap is
    /// reached by asking idle connections to close; `None` when every
    /// connection is working on a request.
    fn admit(&self, activity: &Arc<Activity>) -> Option<u64> {
        let mut open = self.lock();
        while open.live() >= self.max {
            if !open.evict() {
                return None;
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        open.all.insert(id, activity.clone());
        Some(id)
    }

    /// Asks the connection idle the longest, if any, to close.
    fn evict_one(&self) {
        self.lock().evict();
    }

    /// A connection asked to close had begun a request meanwhile: it
    /// finishes it, then closes, and counts against the cap until then.
    fn still_working(&self, id: u64) {
        let mut open = self.lock();
        if let Some(activity) = open.all.get(&id) {
            if activity.evicting.swap(false, Ordering::Relaxed) {
                open.evicting -= 1;
                self.gone.notify_waiters();
            }
        }
    }

    fn remove(&self, id: u64) {
        let mut open = self.lock();
        if let Some(activity) = open.all.remove(&id) {
            if activity.evicting.load(Ordering::Relaxed) {
                open.evicting -= 1;
                self.gone.notify_waiters();
            }
        }
        if open.all.is_empty() {
            self.empty.notify_waiters();
        }
    }

    /// Resolves once no connection is left.
    async fn drained(&self) {
        loop {
            let notified = self.empty.notified();
            if self.lock().all.is_empty() {
                return;
            }
            notified.await;
        }
    }

    /// Answers a connection the cap has no room for (see the module's
    /// documentation), or closes it when [`SHED_RESERVE`] are being answered.
    fn shed<H, Fut>(
        &self,
        stream: TcpStream,
        remote: SocketAddr,
        handler: Arc<H>,
        access: AccessLog,
        builder: &http1::Builder,
        limits: Limits,
    ) where
        H: Fn(Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response> + Send + 'static,
    {
        let shedding = self.shedding.clone();
        if shedding.fetch_add(1, Ordering::AcqRel) >= SHED_RESERVE {
            shedding.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        let mut builder = builder.clone();
        builder.keep_alive(false);
        let max = self.max;
        let peer = Arc::new(Peer::new(remote));
        tokio::spawn(async move {
            let service = service_fn(move |req: hyper::Request<Incoming>| {
                let handler = handler.clone();
                let access = access.clone();
                let peer = peer.clone();
                async move {
                    let busy = ApiError::Busy {
                        limit: format!("{max} connections at once"),
                        retry_after_secs: SHED_RETRY_AFTER_SECS,
                    };
                    let response = handle(
                        &*handler,
                        req,
                        &peer,
                        limits.body_timeout,
                        &access,
                        Some(busy),
                    )
                    .await;
                    Ok::<_, std::convert::Infallible>(response)
                }
            });
            let connection = builder.serve_connection(
                TokioIo::new(Answered::new(stream, READ_BUFFER_MAX)),
                service,
            );
            let _ = tokio::time::timeout(SHED_TIMEOUT, connection).await;
            shedding.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

/// Lets a repeated event through at most once per period, counting the rest.
struct Throttle {
    every: Duration,
    last: Option<Instant>,
    missed: u64,
}

impl Throttle {
    fn new(every: Duration) -> Throttle {
        Throttle {
            every,
            last: None,
            missed: 0,
        }
    }

    /// `Some(events held back since the last one let through)` when this one
    /// may pass.
    fn ready(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self.last.is_some_and(|last| now - last < self.every) {
            self.missed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.missed))
    }
}

/// What one connection is doing, for its watchdog.
struct Activity {
    epoch: Instant,
    /// Requests in the handler plus response bodies not yet fully written.
    busy: AtomicUsize,
    /// When `busy` last fell to zero (or the connection opened), in ms after `epoch`.
    idle_since_ms: AtomicU64,
    /// Requests begun on this connection.
    requests: AtomicU64,
    /// Asked to give its place to a new connection (see [`Connections`]).
    evicting: std::sync::atomic::AtomicBool,
    /// Signalled when the connection's place went to a new one.
    evicted: Notify,
}

impl Activity {
    fn new(epoch: Instant) -> Activity {
        Activity {
            epoch,
            busy: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(epoch.elapsed().as_millis() as u64),
            requests: AtomicU64::new(0),
            evicting: std::sync::atomic::AtomicBool::new(false),
            evicted: Notify::new(),
        }
    }

    fn begin(&self) {
        self.busy.fetch_add(1, Ordering::AcqRel);
        self.requests.fetch_add(1, Ordering::Relaxed);
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
    peer: &Peer,
    body_timeout: Duration,
    access: &AccessLog,
    shed: Option<ApiError>,
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
    let response = match shed {
        // A shed connection: the liveness probe is answered, nothing else.
        Some(busy) if parts.uri.path() != HEALTH_PATH => Response::error(&busy),
        _ => match Request::new(
            method,
            target,
            parts.headers,
            body,
            Some(peer.addr),
            body_timeout,
        ) {
            Ok(request) => handler(request).await,
            Err(err) => Response::error(&err),
        },
    };
    // An answer that says nothing of caching is not to be kept: API answers
    // carry keys and tenants' data. The console's files and downloads say
    // otherwise themselves.
    let response = response.default_header(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static(NO_STORE),
    );
    if let Some(started) = started {
        access.record(
            peer,
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
pub fn redact_secrets<'a>(target: &'a str, also: &[String]) -> std::borrow::Cow<'a, str> {
    let Some((path, query)) = target.split_once('?') else {
        return std::borrow::Cow::Borrowed(target);
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
    std::borrow::Cow::Owned(format!("{path}?{}", redacted.join("&")))
}

#[cfg(test)]
mod tests {
    use super::{Activity, Connections, Duration, Instant, Ordering, Throttle, redact_secrets};
    use std::sync::Arc;

    #[test]
    fn a_repeated_warning_passes_once_per_period_with_the_count_held_back() {
        let mut throttle = Throttle::new(Duration::from_secs(3600));
        assert_eq!(throttle.ready(), Some(0));
        for _ in 0..5 {
            assert_eq!(throttle.ready(), None);
        }
        throttle.last = Some(Instant::now() - Duration::from_secs(3601));
        assert_eq!(throttle.ready(), Some(5));
        assert_eq!(throttle.ready(), None);
    }

    #[test]
    fn connections_that_never_made_a_request_give_way_first_and_working_ones_never() {
        let epoch = Instant::now();
        let connections = Connections::new(3);
        let activity = |requests: u64, idle_since: u64, busy: usize| {
            let a = Arc::new(Activity::new(epoch));
            a.requests.store(requests, Ordering::Relaxed);
            a.idle_since_ms.store(idle_since, Ordering::Relaxed);
            a.busy.store(busy, Ordering::Relaxed);
            a
        };
        let established = activity(4, 10, 0);
        let fresh = activity(0, 50, 0);
        let working = activity(1, 0, 1);
        for a in [&established, &fresh, &working] {
            assert!(connections.admit(a).is_some());
        }
        // Full: the connection that never made a request goes, though it is
        // the youngest.
        assert!(connections.admit(&activity(0, 60, 1)).is_some());
        assert!(fresh.evicting.load(Ordering::Relaxed));
        assert!(!established.evicting.load(Ordering::Relaxed));
        // Then the established one, idle; never the working ones.
        assert!(connections.admit(&activity(0, 70, 1)).is_some());
        assert!(established.evicting.load(Ordering::Relaxed));
        assert!(connections.admit(&activity(0, 80, 0)).is_none());
        assert!(!working.evicting.load(Ordering::Relaxed));
    }

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
