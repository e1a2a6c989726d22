//! The database's connections cut under a running server, as a PostgreSQL
//! restart or failover cuts them (here `pg_terminate_backend` on every
//! connection of the server's database): requests meanwhile answer 503
//! `unavailable`, never a 500, and the server connects again by itself, its
//! writer included, with nothing lost.

use serde_json::json;

use quayside::db::pg::{Client, ConnectOptions};

use crate::common::{Server, wait_for};

/// Ends every other connection to `options`' database.
fn cut(options: &ConnectOptions) -> i64 {
    let client = Client::connect(options).expect("connect");
    let row = client
        .query_row(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .expect("terminate")
        .expect("a row");
    row[0].as_i64().expect("a count")
}

#[test]
fn connections_cut_under_the_server_answer_503_and_are_made_again() {
    let cluster = crate::pg::cluster::cluster();
    let database = cluster.database_string();
    let options = ConnectOptions::parse(&database).expect("options");
    let server = Server::start_on_database(&database);
    let key = server.admin_key();
    let path = "/api/rest/1.0/ports/NLRTM";
    let put = |comment: &str| {
        server.put(
            path,
            &key,
            &json!({"name": "Rotterdam", "generalComments": comment}),
        )
    };
    assert_eq!(put("before").status, 201);

    for round in 0..2 {
        assert!(
            cut(&options) > 0,
            "the server's connections were there to cut"
        );
        let comment = format!("after cut {round}");
        // Until each of the server's connections has found out, an answer
        // may be a 503; never a 500, and writes and reads work again soon.
        let answered = |what: &str, reply: crate::common::Reply| match reply.status {
            200 => Some(reply),
            503 => {
                reply.assert_error(503, "unavailable");
                None
            }
            other => panic!("{what} after the cut: {other} {}", reply.text()),
        };
        wait_for("writes to come back", 30, || {
            answered("a write", put(&comment))
        });
        let read = wait_for("reads to come back", 30, || {
            answered("a read", server.get(path, &key))
        });
        assert_eq!(read.json()["generalComments"], comment.as_str());
    }
    // The change log has every write, in order.
    let changes = server.get("/api/rest/1.0/changes?since=0", &key).json();
    let comments: Vec<&str> = changes["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter(|c| c["entity_id"] == "NLRTM")
        .filter_map(|c| c["record"]["body"]["generalComments"].as_str())
        .collect();
    assert_eq!(comments, ["before", "after cut 0", "after cut 1"]);
}
