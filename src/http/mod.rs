//! HTTP plumbing: the listener, the router, request parsing and responses, and
//! the outbound client of webhook deliveries.
//!
//! Architecture invariant: only this module knows hyper. Domain modules see
//! [`Request`] and [`Response`] and return [`crate::error::ApiError`].

pub mod access_log;
pub mod automatic;
pub mod client;
pub mod cors;
pub mod json;
pub mod multipart;
pub mod range;
pub mod request;
pub mod response;
pub mod router;
pub mod server;
pub mod urlencoded;

/// A boxed error of a body stream (requests and responses): the service's one
/// boxed error type.
pub use crate::error::BoxError;
/// Header names as constants (`header::AUTHORIZATION`): a look-up by one
/// skips parsing the name.
pub use hyper::header;

pub use request::{Method, Request};
pub use response::Response;
pub use router::Router;
