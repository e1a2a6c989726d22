//! Signing secrets and the `Quayside-Signature` header:
//! `t=UNIX,v1=hex(HMAC-SHA256(secret, t + "." + body))`, with one `v1=` per
//! valid secret (two while a rotated-out secret is still honoured), as Stripe
//! does. The key is the secret's text as UTF-8, so a receiver uses the string
//! it was shown.

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

use crate::error::{ApiError, ApiResult};

/// What every secret starts with, so one is recognisable in a config file.
pub const SECRET_PREFIX: &str = "whsec_";

/// A new secret: 32 bytes from the system's random source, base64url.
pub fn new_secret() -> ApiResult<String> {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| ApiError::internal("the system random source failed"))?;
    Ok(format!(
        "{SECRET_PREFIX}{}",
        crate::base64url::encode(&bytes)
    ))
}

/// `hex(HMAC-SHA256(secret, t + "." + body))`.
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut context = hmac::Context::with_key(&key);
    context.update(timestamp.to_string().as_bytes());
    context.update(b".");
    context.update(body);
    hex(context.sign().as_ref())
}

/// The header value: `t=UNIX` and one `v1=` for each of `secrets`.
pub fn header(timestamp: i64, body: &[u8], secrets: &[&str]) -> String {
    let mut value = format!("t={timestamp}");
    for secret in secrets {
        value.push_str(",v1=");
        value.push_str(&signature(secret, timestamp, body));
    }
    value
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_timestamp_dot_body_in_hex() {
        // The hex of ring's HMAC-SHA256 against RFC 4231 test case 2, then the
        // signed message: the timestamp, a dot, the body.
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"Jefe");
        let tag = hmac::sign(&key, b"what do ya want for nothing?");
        assert_eq!(
            hex(tag.as_ref()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let expected = hex(hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA256, b"whsec_k"),
            b"1700000000.{\"a\":1}",
        )
        .as_ref());
        assert_eq!(signature("whsec_k", 1_700_000_000, b"{\"a\":1}"), expected);
    }

    #[test]
    fn the_header_carries_one_v1_per_secret() {
        let body = b"{}";
        assert_eq!(
            header(42, body, &["a"]),
            format!("t=42,v1={}", signature("a", 42, body))
        );
        let both = header(42, body, &["new", "old"]);
        let parts: Vec<&str> = both.split(',').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[1], format!("v1={}", signature("new", 42, body)));
        assert_eq!(parts[2], format!("v1={}", signature("old", 42, body)));
        assert_ne!(parts[1], parts[2]);
    }

    #[test]
    fn secrets_are_random_and_prefixed() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert!(a.starts_with(SECRET_PREFIX) && a.len() == SECRET_PREFIX.len() + 43);
        assert_ne!(a, b);
    }
}
