//! The PostgreSQL connection layer (`quayside::db::pg`) against a real
//! PostgreSQL server: one cluster for the whole test binary ([`cluster`]), a
//! fresh database per test. `processes` runs two servers on one database.
//!
//! Run them alone with `cargo test --test it pg::`.

mod capture;
mod client;
pub mod cluster;
mod dialect;
mod errors;
mod migrate;
mod processes;
mod schema;
mod seam;
mod tls;
mod types;

use quayside::db::pg::{Client, ConnectOptions};

/// A fresh, empty database and a connection to it.
fn fresh() -> (ConnectOptions, Client) {
    let options = cluster::cluster().database();
    let client = Client::connect(&options).expect("connect to the test database");
    (options, client)
}
