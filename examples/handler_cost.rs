//! The server's own cost of a request, without the network: `App::handle`
//! called in a loop on one thread, on a data file the caller loaded, for a
//! random port code each time (as `bench/lua/get_port.lua` asks). Prints the
//! time per request. The network, hyper and the access log are left out:
//! what remains is routing, the session, the read cache and the answer.
//!
//! Usage: `handler_cost DATA_FILE KEY CODES_FILE [REQUESTS] [ROUNDS]`, where
//! KEY is a live session key in that file and CODES_FILE holds one port code
//! a line. The first round reads every code once (filling the read cache).

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use quayside::http::Request;
use quayside::{App, Settings};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: handler_cost DATA_FILE KEY CODES_FILE [REQUESTS] [ROUNDS]");
        std::process::exit(2);
    }
    let (path, key) = (&args[1], &args[2]);
    let codes: Vec<String> = std::fs::read_to_string(&args[3])
        .expect("the codes file")
        .lines()
        .map(str::to_string)
        .filter(|code| !code.is_empty())
        .collect();
    let requests: usize = args
        .get(4)
        .map_or(200_000, |n| n.parse().expect("REQUESTS"));
    let rounds: usize = args.get(5).map_or(5, |n| n.parse().expect("ROUNDS"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let location = quayside::db::Location::parse(path).expect("a data file");
        let db = tokio::task::block_in_place(|| {
            quayside::db::Db::open_at(
                &location,
                2,
                None,
                Arc::new(quayside::changes::Capture::default()),
            )
        })
        .expect("the store");
        let app = App::new(db, Settings::default(), quayside::routes::table());
        let authorization = format!("Bearer {key}");
        let get = |code: &str| {
            Request::from_bytes(
                "GET",
                &format!("/api/rest/1.0/ports/{code}"),
                &[("authorization", &authorization)],
                "",
            )
            .expect("a request")
        };
        for code in &codes {
            let answer = app.handle(get(code)).await;
            assert_eq!(answer.status(), 200, "GET {code}");
        }
        // A small generator of our own: the same codes in the same order each round.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for round in 1..=rounds {
            let started = Instant::now();
            let mut pending = 0u64;
            for _ in 0..requests {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let code = &codes[(state % codes.len() as u64) as usize];
                let mut future = std::pin::pin!(app.handle(get(code)));
                let answer = std::future::poll_fn(|cx| {
                    let polled = future.as_mut().poll(cx);
                    if polled.is_pending() {
                        pending += 1;
                    }
                    polled
                })
                .await;
                debug_assert_eq!(answer.status(), 200);
                drop(answer);
            }
            let elapsed = started.elapsed();
            println!(
                "round {round}: {requests} requests, {:.3} us each, {pending} times not ready",
                elapsed.as_secs_f64() * 1e6 / requests as f64
            );
        }
    });
}
