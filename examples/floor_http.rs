//! The HTTP floor for `bench/run`: a bare hyper server on the same stack as
//! Quayside (hyper 1, tokio, HTTP/1.1 with keep-alive) answering one fixed JSON
//! body. Quayside's read scenarios are measured as a fraction of this.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

const BODY: &[u8] = br#"{"clientCode":"NLRTM","name":"Rotterdam","countryCode":"NL","geoRegionCode":"NL-ZH","latitudeDeg":51,"latitudeMin":55,"latitudeSec":null,"latitudeNs":"N","longitudeDeg":4,"longitudeMin":30,"longitudeSec":null,"longitudeWe":"E","statusCode":"ACTIVE","restrictions":null,"generalComments":null,"dateCreated":"2026-11-21T09:30:00.000Z","creator":"admin","dateModified":"2026-11-21T09:30:00.000Z","modifier":"admin"}"#;

#[tokio::main]
async fn main() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    println!(
        "listening on http://{}",
        listener.local_addr().expect("address")
    );
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = service_fn(|_req| async {
                let mut response = hyper::Response::new(Full::new(Bytes::from_static(BODY)));
                response.headers_mut().insert(
                    hyper::header::CONTENT_TYPE,
                    hyper::header::HeaderValue::from_static("application/json"),
                );
                Ok::<_, Infallible>(response)
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
