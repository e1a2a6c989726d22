//! Accounts, passwords, session keys, the login lockout and the bound on
//! password checks; and the check that
//! turns a request's key into the [`principal::Principal`] every handler acts
//! for (`check.rs`).

pub mod accounts;
pub mod cache;
pub mod check;
pub mod checks;
pub mod confirmed;
pub mod lockout;
pub mod password;
pub mod principal;
pub mod routes;
pub mod sessions;
