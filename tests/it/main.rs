//! The integration tests, as one test crate (`cargo test --test it`): the
//! library and the harness are compiled and linked once, into one binary. Each
//! module is one area. Tests run the real `quayside` binary through [`common`];
//! `hostile` also drives the request handler in-process, and `isolation` reads
//! the route table from the library.
//!
//! Select an area with a filter, e.g. `cargo test --test it workspaces::` or
//! `cargo test --test it crash:: -- --nocapture`.
//!
//! Every test runs in this one process, in parallel with the others (libtest's
//! default: a thread per core). None is serialized: the tests that load the
//! machine on purpose (`crash`, `load`) were run on top of the ones that assert
//! on time (session lifetimes in `auth`, more than ten writes in 400 ms in
//! `operations::backup_while_writing_holds_every_write_acknowledged_before_it`),
//! also with 8 to 32 test threads on 2 cores, and those kept a wide margin.
//! Only far more load than one `cargo test` makes (three whole suites at 32
//! threads each, all at once) starved the backup test.

mod common;

mod access_log;
mod auth;
mod bounds;
mod caching;
mod changes;
mod crash;
mod files;
mod headers;
mod hostile;
mod isolation;
mod load;
mod locations;
mod openapi;
mod operations;
mod pg;
mod strict;
mod v2;
mod webhooks;
mod workspaces;
