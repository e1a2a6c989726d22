//! Accounts, passwords, session keys and the login lockout; and the check that
//! turns a request's key into the [`Principal`] every handler acts for.

pub mod accounts;
pub mod lockout;
pub mod password;
pub mod routes;
pub mod sessions;

use crate::app::App;
use crate::clock;
use crate::error::{ApiError, ApiResult};
use crate::http::Request;

/// Who a request acts for.
#[derive(Clone, Debug)]
pub struct Principal {
    pub account_id: i64,
    pub username: String,
    pub tenant: String,
    pub is_admin: bool,
}

/// The session key of a request: `Authorization: Bearer KEY`, else `api_key`.
pub fn request_key(req: &Request) -> Option<&str> {
    if let Some(value) = req.header("authorization") {
        let mut parts = value.splitn(2, ' ');
        if let (Some(scheme), Some(key)) = (parts.next(), parts.next()) {
            if scheme.eq_ignore_ascii_case("bearer") && !key.trim().is_empty() {
                return Some(key.trim());
            }
        }
    }
    req.query("api_key").filter(|k| !k.is_empty())
}

/// Resolves the request's key to a live session, sliding its idle expiry.
pub async fn authenticate(app: &App, req: &Request) -> ApiResult<Principal> {
    let key = request_key(req).ok_or_else(|| {
        ApiError::Unauthorized(
            "A session key is required: log in at POST /api/rest/1.0/sessions/{username} and \
             send the key as `Authorization: Bearer KEY` or `?api_key=KEY`"
                .into(),
        )
    })?;
    let hash = sessions::hash_key(key);
    let lookup = hash.clone();
    let found = app
        .db
        .read(move |conn| Ok(sessions::find(conn, &lookup)?))
        .await?
        .ok_or_else(|| {
            ApiError::Unauthorized("The session key is not valid; log in again".into())
        })?;
    let now = clock::now_ms();
    let idle = app.settings.session_idle.as_millis() as i64;
    let max = app.settings.session_max.as_millis() as i64;
    if now - found.last_used_at >= idle || now - found.created_at >= max {
        return Err(ApiError::Unauthorized(
            "The session key has expired; log in again".into(),
        ));
    }
    // Refresh the sliding expiry now and then rather than on every request, so
    // reads do not each turn into a write. The refresh is not awaited.
    let refresh_every = (idle / 8).min(60_000);
    if now - found.last_used_at >= refresh_every {
        let db = app.db.clone();
        tokio::spawn(async move {
            if let Err(err) = db
                .write(move |conn| Ok(sessions::touch(conn, &hash, now)?))
                .await
            {
                log::warn!("could not refresh a session: {err}");
            }
        });
    }
    Ok(found.principal)
}

/// Unpadded base64url, as used for session keys and generated passwords.
pub fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::base64url;

    #[test]
    fn base64url_matches_rfc4648_vectors() {
        assert_eq!(base64url(b""), "");
        assert_eq!(base64url(b"f"), "Zg");
        assert_eq!(base64url(b"fo"), "Zm8");
        assert_eq!(base64url(b"foo"), "Zm9v");
        assert_eq!(base64url(b"foob"), "Zm9vYg");
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
        assert_eq!(base64url(&[0u8; 32]).len(), 43);
    }
}
