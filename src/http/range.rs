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
    let parsed = |s: &str| s.parse::<u64>().ok();
    let (start, end) = match (first.is_empty(), last.is_empty()) {
        // bytes=-N: the last N bytes.
        (true, false) => match parsed(last) {
            Some(0) => return ByteRange::Unsatisfiable,
            Some(n) => (size.saturating_sub(n), size),
            None => return ByteRange::Full,
        },
        // bytes=N-: from N to the end.
        (false, true) => match parsed(first) {
            Some(start) => (start, size),
            None => return ByteRange::Full,
        },
        (false, false) => match (parsed(first), parsed(last)) {
            (Some(start), Some(last)) if last >= start => (start, last.saturating_add(1).min(size)),
            _ => return ByteRange::Full,
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
    }
}
