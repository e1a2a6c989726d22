//! The PostgreSQL connection layer (`quayside::db::pg`) against a real
//! PostgreSQL server: one cluster for the whole test binary ([`cluster`]), a
//! fresh database per test. `processes` runs two servers on one database.
//!
//! Run them alone with `cargo test --test it pg::`.

mod capture;
mod client;
pub mod cluster;
mod deferred;
mod dialect;
mod errors;
mod held;
mod migrate;
mod plans;
mod position;
mod processes;
mod reconnect;
mod schema;
mod seam;
mod tls;
mod types;
mod writer;

use quayside::db::pg::{Client, ConnectOptions};
use quayside::locations::model::LocationFields;

/// The plan PostgreSQL chooses for `sql` with `params` (`EXPLAIN (FORMAT
/// JSON)`): its top node, as JSON.
fn explain(client: &Client, sql: &str, params: &[quayside::db::Value]) -> serde_json::Value {
    let params: Vec<quayside::db::value::Value> = params.iter().cloned().map(Into::into).collect();
    let row = client
        .query_row(&format!("EXPLAIN (FORMAT JSON) {sql}"), &params)
        .unwrap()
        .unwrap();
    let text = row[0].as_str().expect("a plan as JSON text");
    let plan: serde_json::Value = serde_json::from_str(text).unwrap();
    plan[0]["Plan"].clone()
}

/// A plan's node and every node under it.
fn plan_nodes(plan: &serde_json::Value) -> Vec<&serde_json::Value> {
    let mut out = vec![plan];
    if let Some(children) = plan["Plans"].as_array() {
        out.extend(children.iter().flat_map(plan_nodes));
    }
    out
}

/// A fresh, empty database and a connection to it.
fn fresh() -> (ConnectOptions, Client) {
    let options = cluster::cluster().database();
    let client = Client::connect(&options).expect("connect to the test database");
    (options, client)
}

/// A port's fields (Rotterdam's position), named `name`.
pub fn port(name: &str) -> LocationFields {
    LocationFields {
        name: name.into(),
        country_code: Some("NL".into()),
        geo_region_code: None,
        latitude_deg: Some(51),
        latitude_min: Some(55),
        latitude_sec: None,
        latitude_ns: Some("N".into()),
        longitude_deg: Some(4),
        longitude_min: Some(30),
        longitude_sec: None,
        longitude_we: Some("E".into()),
        status_code: "ACTIVE".into(),
        restrictions: None,
        general_comments: None,
    }
}
