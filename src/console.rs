//! The browser console: a plain HTML, CSS and JavaScript page for people who do
//! not use curl, served by the binary itself. `GET /` answers the page and
//! `GET /console/{file}` its few other files; all are compiled into the binary
//! (`include_bytes!` of `console/`), so there is no web server to set up, no
//! build step and nothing fetched from elsewhere. The page calls the same JSON
//! API as any other client, with the session key as a bearer token.
//!
//! Every file is answered with an `ETag` of its content (`If-None-Match` gives
//! 304), `Cache-Control: no-cache` (so a new binary's page is picked up at
//! once), and headers that keep the page to its own origin: a
//! `Content-Security-Policy` that allows only the server's own scripts, styles
//! and connections, `X-Content-Type-Options: nosniff` and
//! `Referrer-Policy: no-referrer`. A name that is not one of the files answers
//! the usual 404 error body.

use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::app::{Ctx, Endpoint, public};
use crate::error::{ApiError, ApiResult};
use crate::http::Method::Get;
use crate::http::Response;
use crate::openapi::op::Op;
use crate::openapi::op::tags::SERVICE;
use crate::openapi::schema::{parameter, string};

/// One embedded file of the console.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// Every file the console has. `index.html` is also the answer to `GET /`.
const ASSETS: &[Asset] = &[
    Asset {
        name: "index.html",
        content_type: HTML,
        bytes: include_bytes!("../console/index.html"),
    },
    Asset {
        name: "app.css",
        content_type: CSS,
        bytes: include_bytes!("../console/app.css"),
    },
    Asset {
        name: "app.js",
        content_type: JS,
        bytes: include_bytes!("../console/app.js"),
    },
    Asset {
        name: "api.js",
        content_type: JS,
        bytes: include_bytes!("../console/api.js"),
    },
    Asset {
        name: "format.js",
        content_type: JS,
        bytes: include_bytes!("../console/format.js"),
    },
];

/// The names of the console's files, as `GET /console/{file}` takes them.
pub fn files() -> impl Iterator<Item = &'static str> {
    ASSETS.iter().map(|asset| asset.name)
}

/// The page may load scripts, styles and data from this server only, and may
/// not be framed; `data:` images allow the inline favicon.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; img-src 'self' data:; \
     style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

/// The console's routes.
pub fn routes() -> Vec<Endpoint> {
    let if_none_match = || {
        parameter(
            "header",
            "If-None-Match",
            "The ETag of a copy held: 304 when it still matches",
            string(),
        )
    };
    let text = |media_types: &[&str]| {
        Value::Object(
            media_types
                .iter()
                .map(|m| (m.to_string(), json!({"schema": {"type": "string"}})))
                .collect(),
        )
    };
    vec![
        public(
            Get,
            "/",
            Op::new(SERVICE, "The browser console's page")
                .without_store()
                .parameters([if_none_match()])
                .answer(200, "The console (HTML)", text(&["text/html"]), &["ETag"])
                .answer(304, "Not modified: the ETag matches", json!({}), &["ETag"]),
            index,
        ),
        public(
            Get,
            "/console/{file}",
            Op::new(SERVICE, "A file of the browser console")
                .without_store()
                .parameters([if_none_match()])
                .answer(
                    200,
                    "The file",
                    text(&["text/javascript", "text/css", "text/html"]),
                    &["ETag"],
                )
                .answer(304, "Not modified: the ETag matches", json!({}), &["ETag"])
                .error(404, Some("Not one of the console's files")),
            asset,
        ),
    ]
}

/// `GET /`: the console's page.
pub async fn index(ctx: Ctx) -> ApiResult<Response> {
    serve("index.html", ctx.req.header("if-none-match"))
}

/// `GET /console/{file}`: one of the console's files.
pub async fn asset(ctx: Ctx) -> ApiResult<Response> {
    serve(ctx.req.param("file"), ctx.req.header("if-none-match"))
}

/// The answer for one file by name: 200 with the bytes, 304 when the client's
/// `If-None-Match` names the current content, 404 for an unknown name.
fn serve(name: &str, if_none_match: Option<&str>) -> ApiResult<Response> {
    let (index, asset) = ASSETS
        .iter()
        .enumerate()
        .find(|(_, asset)| asset.name == name)
        .ok_or_else(|| ApiError::not_found("No such file in the console"))?;
    let etag = etags()[index].as_str();
    let fresh = if_none_match.is_some_and(|wanted| {
        wanted.split(',').any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag.trim_start_matches("W/") == etag
        })
    });
    let response = if fresh {
        Response::empty(304)
    } else {
        body(asset.bytes)
            .header("content-type", asset.content_type)
            .header("content-length", &asset.bytes.len().to_string())
    };
    Ok(response
        .header("etag", etag)
        .header("cache-control", "no-cache")
        .header("content-security-policy", CONTENT_SECURITY_POLICY)
        .header("x-content-type-options", "nosniff")
        .header("referrer-policy", "no-referrer"))
}

/// A 200 whose body is one static piece.
fn body(bytes: &'static [u8]) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    // The channel is new and has room for exactly this one piece.
    let _ = tx.try_send(Ok(Bytes::from_static(bytes)));
    Response::stream(200, rx)
}

/// The quoted ETag of each file, in [`ASSETS`] order: the first 128 bits of
/// its SHA-256, computed once.
fn etags() -> &'static [String] {
    static ETAGS: OnceLock<Vec<String>> = OnceLock::new();
    ETAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|asset| {
                let digest = ring::digest::digest(&ring::digest::SHA256, asset.bytes);
                let hex: String = digest.as_ref()[..16]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                format!("\"{hex}\"")
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of(response: Response) -> Bytes {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(response.into_bytes())
            .expect("body")
    }

    #[test]
    fn every_file_is_served_with_its_type_and_the_security_headers() {
        for asset in ASSETS {
            let response = serve(asset.name, None).expect("known file");
            assert_eq!(response.status(), 200);
            assert_eq!(
                response.header_value("content-type"),
                Some(asset.content_type)
            );
            assert_eq!(
                response.header_value("content-length"),
                Some(asset.bytes.len().to_string().as_str())
            );
            assert_eq!(response.header_value("cache-control"), Some("no-cache"));
            assert_eq!(
                response.header_value("content-security-policy"),
                Some(
                    "default-src 'self'; img-src 'self' data:; style-src 'self'; \
                     script-src 'self'; connect-src 'self'; frame-ancestors 'none'"
                )
            );
            assert_eq!(
                response.header_value("x-content-type-options"),
                Some("nosniff")
            );
            assert_eq!(
                response.header_value("referrer-policy"),
                Some("no-referrer")
            );
            let etag = response.header_value("etag").expect("etag").to_string();
            assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() == 34);
            assert_eq!(bytes_of(response).as_ref(), asset.bytes);
        }
    }

    #[test]
    fn etags_differ_between_files_and_answer_304() {
        let tags = etags();
        for (i, a) in tags.iter().enumerate() {
            assert!(tags[i + 1..].iter().all(|b| b != a), "duplicate {a}");
        }
        let etag = tags[0].clone();
        let response = serve("index.html", Some(&format!("\"other\", W/{etag}"))).unwrap();
        assert_eq!(response.status(), 304);
        assert_eq!(response.header_value("etag"), Some(etag.as_str()));
        assert!(bytes_of(response).is_empty());
        assert_eq!(
            serve("index.html", Some("\"stale\"")).unwrap().status(),
            200
        );
    }

    #[test]
    fn unknown_files_are_404() {
        for name in ["", "nope.js", "../Cargo.toml", "INDEX.HTML"] {
            match serve(name, None) {
                Err(err) => assert_eq!(err.code(), "not_found", "{name}"),
                Ok(response) => panic!("{name}: {}", response.status()),
            }
        }
    }

    #[test]
    fn the_page_loads_only_files_that_are_served() {
        let page = std::str::from_utf8(ASSETS[0].bytes).expect("utf-8");
        for reference in page.split("/console/").skip(1) {
            let name: String = reference
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
                .collect();
            assert!(
                ASSETS.iter().any(|a| a.name == name),
                "index.html refers to {name}"
            );
        }
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let text = std::str::from_utf8(asset.bytes).expect("utf-8");
            for import in text.split("from './").skip(1) {
                let name = import.split('\'').next().unwrap_or_default();
                assert!(
                    ASSETS.iter().any(|a| a.name == name),
                    "{} imports {name}",
                    asset.name
                );
            }
        }
    }
}
