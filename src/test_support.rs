//! What the unit tests share to wait for a state instead of sleeping past it
//! (a fixed sleep assumes another thread got somewhere meanwhile; on a busy
//! machine it has not, and the test fails now and then).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::db::Db;
use crate::error::ApiResult;

/// Waits until `state` holds, looking every millisecond; a state never
/// reached fails the test after 10 s instead of hanging it.
pub async fn until(what: &str, mut state: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !state() {
        assert!(Instant::now() < deadline, "never reached: {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A write holding `db`'s writer from when it runs until the returned
/// sender is used or dropped, so that writes queued meanwhile ([`queued`])
/// join its batch, after it; returns once it runs. Run again (a batch
/// replayed), it holds nothing: the release is gone by then.
pub async fn hold_writer(
    db: &Db,
) -> (
    std::sync::mpsc::Sender<()>,
    tokio::task::JoinHandle<ApiResult<()>>,
) {
    let (release, held) = std::sync::mpsc::channel::<()>();
    let running = Arc::new(AtomicBool::new(false));
    let started = running.clone();
    let hold = tokio::spawn(db.write(move |_| {
        started.store(true, Ordering::SeqCst);
        let _ = held.recv();
        Ok(())
    }));
    until("the holding write runs", || running.load(Ordering::SeqCst)).await;
    (release, hold)
}

/// Spawns a write queued at once, in the order made: polled once, it joins
/// the writer's queue, which has room, and waits for its answer.
pub fn queued<T: Send + 'static>(
    write: impl Future<Output = ApiResult<T>> + Send + 'static,
) -> tokio::task::JoinHandle<ApiResult<T>> {
    let mut write = Box::pin(write);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(
        write.as_mut().poll(&mut cx).is_pending(),
        "the writer is held"
    );
    tokio::spawn(write)
}
