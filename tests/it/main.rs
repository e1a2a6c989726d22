//! The integration tests, as one test crate (`cargo test --test it`): the
//! library and the harness are compiled and linked once, into one binary. Each
//! module is one area. Tests run the real `quayside` binary through [`common`];
//! `hostile` also drives the request handler in-process, and `isolation` reads
//! the route table from the library.
//!
//! Select an area with a filter, e.g. `cargo test --test it workspaces::` or
//! `cargo test --test it crash:: -- --nocapture`.

mod common;

mod auth;
mod caching;
mod crash;
mod files;
mod hostile;
mod isolation;
mod load;
mod locations;
mod openapi;
mod operations;
mod v2;
mod workspaces;
