//! The allocator's share of the server's memory: how many arenas glibc keeps,
//! and memory handed back to the system after a burst.
//!
//! glibc keeps what a burst freed (a thousand uploads' buffers, the read
//! buffers of thousands of connections) inside its arenas, for reuse: the
//! process's RSS stays at the burst's peak long after it ended. So whatever
//! ends a piece of work that held memory (a connection, an upload) calls
//! [`released`], and [`run`] looks every [`TRIM_EVERY`]: once releases have
//! stopped for a whole period after some were made (the burst is over), it
//! calls `malloc_trim(0)`, which gives every whole free page of every arena
//! back to the kernel; and once more after the runtime's idle blocking threads
//! have exited, which returns what their thread caches held. Not during the burst: a trim takes the arenas' locks
//! while it walks them, and would hold up the requests still being served.
//! A server under a steady load (keep-alive clients) releases nothing and is
//! never trimmed; after a burst, one trim costs a few milliseconds on a
//! blocking thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How often [`run`] looks for released memory.
pub const TRIM_EVERY: Duration = Duration::from_secs(1);

/// Pieces of work that held memory and ended, since the start.
static RELEASED: AtomicU64 = AtomicU64::new(0);

/// Something that held memory ended (a connection closed, an upload ended).
pub fn released() {
    RELEASED.fetch_add(1, Ordering::Relaxed);
}

/// glibc gives every thread that allocates its own arena (up to 8 per core),
/// and freed memory stays in them. Eight arenas keep the async workers from
/// queueing on one allocator lock (two cost 15% of the read throughput) while
/// bounding the footprint: 38 MiB peak with 16 concurrent 64 MiB downloads.
/// (A fixed mmap threshold saved a few MiB more but made uploads 1.8x slower.)
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const M_ARENA_MAX: i32 = -8;
        unsafe extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        // SAFETY: mallopt only adjusts allocator settings; called once, before
        // any other thread exists.
        unsafe {
            mallopt(M_ARENA_MAX, 8);
        }
    }
}

/// Gives the free pages of every arena back to the kernel.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: malloc_trim takes the arenas' own locks; safe from any thread.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// After a trim, another this much later: by then the runtime's idle blocking
/// threads (kept 10 s) have exited, and the freed memory their thread caches
/// held back from the first trim is in the arenas.
pub const SECOND_TRIM_AFTER: Duration = Duration::from_secs(12);

/// Trims after every burst (see the module's documentation), and once more
/// [`SECOND_TRIM_AFTER`] later if nothing was released meanwhile, until
/// `closing` turns true.
pub async fn run(mut closing: tokio::sync::watch::Receiver<bool>) {
    let second_after = (SECOND_TRIM_AFTER.as_millis() / TRIM_EVERY.as_millis()) as u32;
    let mut seen = RELEASED.load(Ordering::Relaxed);
    let mut trimmed = seen;
    // Periods left before the second trim of the last burst.
    let mut second: Option<u32> = None;
    loop {
        if !crate::clock::pause(TRIM_EVERY, &mut closing).await {
            return;
        }
        let now = RELEASED.load(Ordering::Relaxed);
        if now != seen {
            // Still releasing: the burst goes on.
            seen = now;
            second = None;
            continue;
        }
        if now != trimmed {
            trimmed = now;
            second = Some(second_after);
            let _ = tokio::task::spawn_blocking(trim).await;
            continue;
        }
        second = match second {
            Some(0) => {
                let _ = tokio::task::spawn_blocking(trim).await;
                None
            }
            Some(left) => Some(left - 1),
            None => None,
        };
    }
}
