//! Unpadded base64url (RFC 4648 §5): session keys, generated passwords,
//! webhook secrets and list cursors.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

pub fn encode(bytes: &[u8]) -> String {
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

/// The bytes of unpadded base64url text; `None` for any other character, a
/// length no encoding has, or stray bits in the last character.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let sextet = |c: u8| ALPHABET.iter().position(|&a| a == c).map(|p| p as u32);
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.as_bytes().chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= sextet(c)? << (18 - 6 * i);
        }
        let bytes = chunk.len() - 1;
        let [_, a, b, c] = n.to_be_bytes();
        let decoded = [a, b, c];
        // Bits past the last whole byte must be zero (one text per value).
        if decoded[bytes..].iter().any(|&x| x != 0) && bytes < 3 {
            return None;
        }
        out.extend_from_slice(&decoded[..bytes]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{decode, encode};

    #[test]
    fn matches_rfc4648_vectors_both_ways() {
        for (bytes, text) in [
            (&b""[..], ""),
            (b"f", "Zg"),
            (b"fo", "Zm8"),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg"),
            (&[0xfb, 0xff], "-_8"),
        ] {
            assert_eq!(encode(bytes), text);
            assert_eq!(decode(text).as_deref(), Some(bytes));
        }
        assert_eq!(encode(&[0u8; 32]).len(), 43);
    }

    #[test]
    fn refuses_what_no_encoding_gives() {
        for bad in ["Z", "Zh", "Zm9v!", "Zm+v", "Zm9vY"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
