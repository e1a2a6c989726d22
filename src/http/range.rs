//! Single byte ranges (`Range: bytes=...`), as file downloads honour them.

/// What a `Range` header asks of a body of `size` bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum ByteRange {
    /// No usable range: send everything (no header, a malformed one, or several ranges).
    Full,
    /// Bytes `start..end` (end exclusive).
    Partial { start: u64, end: u64 },
    /// Nothing of the body is in the range: 416.
    Unsatisfiable,
}

/// A position of a range: digits only (anything else makes the header
/// malformed, and ignored); digits past what 64 bits hold make it unsatisfiable.
enum Position {
    At(u64),
    TooLarge,
    Malformed,
}

fn position(text: &str) -> Position {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Position::Malformed;
    }
    text.parse().map_or(Position::TooLarge, Position::At)
}

pub fn parse(header: Option<&str>, size: u64) -> ByteRange {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return ByteRange::Full;
    };
    if spec.contains(',') {
        return ByteRange::Full;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return ByteRange::Full;
    };
    let (first, last) = (first.trim(), last.trim());
    use Position::{At, Malformed, TooLarge};
    let (start, end) = match (first.is_empty(), last.is_empty()) {
        // bytes=-N: the last N bytes.
        (true, false) => match position(last) {
            At(0) | TooLarge => return ByteRange::Unsatisfiable,
            At(n) => (size.saturating_sub(n), size),
            Malformed => return ByteRange::Full,
        },
        // bytes=N-: from N to the end.
        (false, true) => match position(first) {
            At(start) => (start, size),
            TooLarge => return ByteRange::Unsatisfiable,
            Malformed => return ByteRange::Full,
        },
        (false, false) => match (position(first), position(last)) {
            (Malformed, _) | (_, Malformed) => return ByteRange::Full,
            (TooLarge, _) | (_, TooLarge) => return ByteRange::Unsatisfiable,
            (At(start), At(last)) if last >= start => (start, last.saturating_add(1).min(size)),
            (At(_), At(_)) => return ByteRange::Full,
        },
        (true, true) => return ByteRange::Full,
    };
    if start >= size {
        ByteRange::Unsatisfiable
    } else {
        ByteRange::Partial { start, end }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_forms() {
        assert_eq!(
            parse(Some("bytes=0-9"), 100),
            ByteRange::Partial { start: 0, end: 10 }
        );
        assert_eq!(
            parse(Some("bytes=90-"), 100),
            ByteRange::Partial {
                start: 90,
                end: 100
            }
        );
        assert_eq!(
            parse(Some("bytes=-5"), 100),
            ByteRange::Partial {
                start: 95,
                end: 100
            }
        );
        assert_eq!(
            parse(Some("bytes=50-500"), 100),
            ByteRange::Partial {
                start: 50,
                end: 100
            }
        );
        assert_eq!(
            parse(Some("bytes=-500"), 100),
            ByteRange::Partial { start: 0, end: 100 }
        );
    }

    #[test]
    fn unusable_ranges_fall_back_or_fail() {
        assert_eq!(parse(None, 100), ByteRange::Full);
        assert_eq!(parse(Some("bytes=0-1,5-6"), 100), ByteRange::Full);
        assert_eq!(parse(Some("items=0-1"), 100), ByteRange::Full);
        assert_eq!(parse(Some("bytes=9-3"), 100), ByteRange::Full);
        assert_eq!(parse(Some("bytes=100-"), 100), ByteRange::Unsatisfiable);
        assert_eq!(parse(Some("bytes=-0"), 100), ByteRange::Unsatisfiable);
        assert_eq!(parse(Some("bytes=+5-9"), 100), ByteRange::Full);
    }

    #[test]
    fn positions_past_64_bits_are_unsatisfiable() {
        let huge = "99999999999999999999999";
        for spec in [
            format!("bytes={huge}-"),
            format!("bytes=0-{huge}"),
            format!("bytes={huge}-{huge}"),
            format!("bytes=-{huge}"),
        ] {
            assert_eq!(parse(Some(&spec), 100), ByteRange::Unsatisfiable, "{spec}");
        }
        assert_eq!(
            parse(Some("bytes=0-18446744073709551615"), 100),
            ByteRange::Partial { start: 0, end: 100 }
        );
    }
}
