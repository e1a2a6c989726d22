//! Strict percent-decoding for path segments, query strings and
//! `application/x-www-form-urlencoded` bodies. Strict means a broken escape,
//! bytes that are not UTF-8 or a NUL character are an error the client hears
//! about, instead of being silently replaced. No stored text holds a NUL (every
//! text field refuses control characters), and PostgreSQL cannot take one in a
//! text parameter at all: refused here, a NUL answers the same 400 on both
//! engines instead of reaching the store.

use crate::error::{ApiError, ApiResult};

/// Decodes one path segment (`+` stays a plus sign).
pub fn decode_path_segment(raw: &str) -> ApiResult<String> {
    decode(raw, false).map_err(|why| {
        ApiError::bad_request(
            "invalid_path",
            format!("The request path is malformed: {why}"),
        )
    })
}

/// Decodes `a=1&b=two+words` into pairs, in order (`+` is a space).
/// `what` names the source in error messages ("query string", "form body").
pub fn decode_pairs(raw: &str, what: &str) -> ApiResult<Vec<(String, String)>> {
    let mut pairs = Vec::new();
    for piece in raw.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
        let name = decode(name, true).map_err(|why| {
            ApiError::bad_request("invalid_query", format!("The {what} is malformed: {why}"))
        })?;
        let value = decode(value, true).map_err(|why| {
            ApiError::invalid_query(
                name.clone(),
                format!("The {what} value of `{name}` is malformed: {why}"),
            )
        })?;
        pairs.push((name, value));
    }
    Ok(pairs)
}

/// Percent-encodes a query component: every byte but the unreserved ones
/// (RFC 3986 `A-Z a-z 0-9 - . _ ~`) as `%XX`, so it reads back the same
/// through [`decode_pairs`].
pub fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Why a decoded NUL is refused.
const NUL: &str = "it holds a NUL character (%00), which no value may hold";

fn decode(raw: &str, plus_is_space: bool) -> Result<String, &'static str> {
    if !raw.bytes().any(|b| b == b'%' || b == b'+' || b == 0) {
        return Ok(raw.to_string());
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).ok_or("a % escape is cut short")?;
                let high = hex_value(hex[0]).ok_or("a % escape is not two hex digits")?;
                let low = hex_value(hex[1]).ok_or("a % escape is not two hex digits")?;
                out.push(high << 4 | low);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    if out.contains(&0) {
        return Err(NUL);
    }
    String::from_utf8(out).map_err(|_| "it decodes to bytes that are not UTF-8")
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_pairs_with_plus_and_escapes() {
        let pairs = decode_pairs("name=Port+of%20Spain&x=&flag", "query string").unwrap();
        assert_eq!(
            pairs,
            vec![
                ("name".into(), "Port of Spain".into()),
                ("x".into(), "".into()),
                ("flag".into(), "".into())
            ]
        );
    }

    #[test]
    fn a_nul_is_refused_escaped_or_raw() {
        assert_eq!(
            decode_path_segment("a%00b").unwrap_err().code(),
            "invalid_path"
        );
        let error = decode_pairs("xref=%00", "query string").unwrap_err();
        assert_eq!(error.code(), "invalid_query");
        assert!(error.message().contains("NUL"), "{}", error.message());
        assert!(decode_pairs("username=a\0b", "form body").is_err());
        assert!(decode_pairs("%00=1", "query string").is_err());
        // Other control characters decode: the fields that refuse them say so.
        assert_eq!(
            decode_pairs("q=%01", "query string").unwrap(),
            vec![("q".into(), "\u{1}".into())]
        );
    }

    #[test]
    fn path_keeps_plus_and_decodes_slash() {
        assert_eq!(decode_path_segment("a+b%2Fc").unwrap(), "a+b/c");
    }

    #[test]
    fn rejects_broken_escapes_and_invalid_utf8() {
        assert!(decode_pairs("a=%zz", "query string").is_err());
        assert!(decode_pairs("a=%4", "query string").is_err());
        assert!(decode_pairs("a=%ff%fe", "query string").is_err());
        assert!(decode_path_segment("%c3%28").is_err());
    }

    #[test]
    fn decodes_multibyte_utf8() {
        assert_eq!(
            decode_pairs("n=%C5%81%C3%B3d%C5%BA", "q").unwrap()[0].1,
            "Łódź"
        );
    }
}
