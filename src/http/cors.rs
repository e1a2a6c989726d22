//! Cross-origin requests (CORS), off unless `serve --cors-origin ORIGIN` names
//! the one web origin allowed to call the API from a browser. Then a preflight
//! (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from exactly
//! that origin is answered with the methods of the path, and every answer to a
//! request from it carries `Access-Control-Allow-Origin` and the headers a
//! script may read. Any other origin gets no CORS header at all, so browsers
//! keep its scripts out. Keys travel in `Authorization` (or `api_key`), never
//! in cookies, so credentials mode is not needed.

use super::request::Request;
use super::response::Response;

/// Request headers a page may send: the key, JSON bodies, downloads'
/// conditional and range requests, and a stream's resumption.
const ALLOW_HEADERS: &str = "Authorization, Content-Type, If-None-Match, Range, Last-Event-ID";
/// Answer headers a page may read beyond the safelisted ones.
const EXPOSE_HEADERS: &str = "Allow, Content-Disposition, Content-Range, ETag, Link, \
    Retry-After, X-Next-Cursor, X-Total-Count, X-Total-Count-Capped";
/// Seconds a browser may keep a preflight's answer.
const MAX_AGE_SECS: &str = "600";

#[derive(Clone, Debug)]
pub struct Cors {
    origin: String,
}

impl Cors {
    /// An origin as browsers send it: `scheme://host[:port]`, no path. `*` and
    /// `null` are refused: the point is to name one origin.
    pub fn new(origin: &str) -> Result<Cors, String> {
        let refused = || {
            format!(
                "--cors-origin takes one origin such as https://erp.example.com or \
                 http://localhost:3000 (scheme, host and port; no path), not {origin:?}"
            )
        };
        let (scheme, rest) = origin.split_once("://").ok_or_else(refused)?;
        let host_ok = !rest.is_empty()
            && rest.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']')
            });
        if !matches!(scheme, "http" | "https") || !host_ok {
            return Err(refused());
        }
        Ok(Cors {
            origin: origin.to_ascii_lowercase(),
        })
    }

    /// Whether the request comes from the allowed origin.
    pub fn allows(&self, req: &Request) -> bool {
        req.header("origin")
            .is_some_and(|origin| origin.eq_ignore_ascii_case(&self.origin))
    }

    /// The answer to `OPTIONS` on a path taking `allow`: `204` with `Allow`,
    /// and for a preflight from the allowed origin the CORS headers.
    pub fn options(cors: Option<&Cors>, req: &Request, allow: &str) -> Response {
        let response = Response::empty(204).header("allow", allow);
        match cors {
            Some(cors)
                if cors.allows(req) && req.header("access-control-request-method").is_some() =>
            {
                response
                    .header("access-control-allow-methods", allow)
                    .header("access-control-allow-headers", ALLOW_HEADERS)
                    .header("access-control-max-age", MAX_AGE_SECS)
            }
            _ => response,
        }
    }

    /// Adds the CORS headers to an answer to a request from the allowed origin
    /// (and `Vary: Origin` to every answer, since they differ by origin).
    pub fn decorate(&self, origin_allowed: bool, response: Response) -> Response {
        let response = response.header("vary", "Origin");
        if !origin_allowed {
            return response;
        }
        response
            .header("access-control-allow-origin", &self.origin)
            .header("access-control-expose-headers", EXPOSE_HEADERS)
    }
}

#[cfg(test)]
mod tests {
    use super::Cors;

    #[test]
    fn takes_one_origin_only() {
        assert!(Cors::new("https://erp.example.com").is_ok());
        assert!(Cors::new("http://localhost:3000").is_ok());
        assert!(Cors::new("http://[::1]:8080").is_ok());
        for refused in [
            "*",
            "null",
            "erp.example.com",
            "https://a.example/",
            "ftp://a",
            "https://",
        ] {
            assert!(Cors::new(refused).is_err(), "{refused}");
        }
    }
}
