//! TLS to a real server (the second test cluster, listening on 127.0.0.1
//! with a certificate for `localhost` from a CA made for this run): what
//! each `sslmode` accepts, and that the session is encrypted when it should be.

use quayside::db::pg::{Client, ConnectOptions, Error};
use quayside::db::value::Value;

use super::cluster::tls_cluster;

fn options(host: &str, settings: &str) -> ConnectOptions {
    let tls = tls_cluster();
    ConnectOptions::parse(&format!(
        "host={host} port={} user=postgres dbname=postgres {settings}",
        tls.port
    ))
    .unwrap()
}

/// Whether the session the client holds is encrypted, as the server sees it.
fn encrypted(client: &Client) -> Value {
    client
        .query_row(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap()
        .unwrap()[0]
        .clone()
}

#[test]
fn verify_full_connects_to_the_named_host_with_a_trusted_certificate() {
    let ca = tls_cluster().ca.display().to_string();
    let client = Client::connect(&options(
        "localhost",
        &format!("sslmode=verify-full sslrootcert='{ca}'"),
    ))
    .unwrap();
    assert_eq!(encrypted(&client), Value::Integer(1));
}

#[test]
fn verify_full_refuses_another_name_and_an_unknown_ca() {
    let ca = tls_cluster().ca.display().to_string();
    // The certificate names localhost, not 127.0.0.1.
    let wrong_name = Client::connect(&options(
        "127.0.0.1",
        &format!("sslmode=verify-full sslrootcert='{ca}'"),
    ));
    match wrong_name {
        Err(error @ Error::Lost(_)) => {
            let text = format!("{error} {:?}", std::error::Error::source(&error));
            assert!(
                text.contains("TLS") || text.contains("certificate"),
                "{text}"
            );
        }
        Err(other) => panic!("expected a failed handshake, got {other:?}"),
        Ok(_) => panic!("connected to a server whose certificate does not name 127.0.0.1"),
    }
    // The system's roots do not include this run's CA.
    match Client::connect(&options("localhost", "sslmode=verify-full")) {
        Err(Error::Lost(_)) => {}
        Err(other) => panic!("expected a failed handshake, got {other:?}"),
        Ok(_) => panic!("trusted a certificate from an unknown CA"),
    }
}

#[test]
fn require_and_prefer_encrypt_without_checking_and_disable_does_not() {
    for mode in ["require", "prefer"] {
        let client = Client::connect(&options("127.0.0.1", &format!("sslmode={mode}"))).unwrap();
        assert_eq!(encrypted(&client), Value::Integer(1), "sslmode={mode}");
    }
    let client = Client::connect(&options("127.0.0.1", "sslmode=disable")).unwrap();
    assert_eq!(encrypted(&client), Value::Integer(0));
}
