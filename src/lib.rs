//! Quayside: an embedded, single-file HTTP server for cargo-inspection data
//! exchange. See ARCHITECTURE.md for the map of modules and the path of a request.

pub mod app;
pub mod attachments;
pub mod auth;
pub mod base64url;
pub mod catalogs;
pub mod changes;
pub mod cli;
pub mod clock;
pub mod console;
pub mod db;
pub mod documents;
pub mod envelope;
pub mod error;
pub mod http;
pub mod ids;
#[cfg(test)]
mod invariants;
pub mod listing;
pub mod locations;
pub mod memory;
pub mod openapi;
pub mod organizations;
pub mod routes;
#[cfg(test)]
mod test_support;
pub mod tls;
pub mod validate;
pub mod webhooks;
pub mod workspaces;

pub use app::{App, Settings};
