//! Time as the store keeps it (integer milliseconds since the Unix epoch, UTC)
//! and as the API shows it (RFC 3339 in UTC with milliseconds,
//! e.g. `2026-11-21T09:30:00.000Z`).

use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// Renders stored milliseconds as RFC 3339 UTC with exactly three fraction digits.
pub fn format_ms(ms: i64) -> String {
    let Ok(t) = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000) else {
        return String::from("invalid-date");
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// Parses an RFC 3339 date-time with any offset into nanoseconds since the
/// epoch. Instants whose UTC year is outside 0000-9999 have no RFC 3339 form
/// in UTC and are refused.
pub fn parse_rfc3339_nanos(text: &str) -> Option<i128> {
    let t = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    let utc = t.checked_to_offset(UtcOffset::UTC)?;
    (0..=9999)
        .contains(&utc.year())
        .then(|| utc.unix_timestamp_nanos())
}

/// Parses an RFC 3339 date-time and rounds it up to whole milliseconds, so that
/// `stored_ms >= bound` means exactly `stored instant >= given instant`.
pub fn parse_rfc3339_ms_ceil(text: &str) -> Option<i64> {
    let nanos = parse_rfc3339_nanos(text)?;
    let ms = nanos.div_euclid(1_000_000) + i128::from(nanos.rem_euclid(1_000_000) != 0);
    i64::try_from(ms).ok()
}

/// Normalises an RFC 3339 date-time to the form the server writes (UTC, milliseconds).
pub fn normalize_rfc3339(text: &str) -> Option<String> {
    let nanos = parse_rfc3339_nanos(text)?;
    Some(format_ms(nanos.div_euclid(1_000_000) as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_milliseconds_in_utc() {
        assert_eq!(format_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_ms(1_795_253_400_123), "2026-11-21T09:30:00.123Z");
    }

    #[test]
    fn parses_offsets_and_rounds_up() {
        assert_eq!(
            parse_rfc3339_ms_ceil("2026-11-21T10:30:00.123+01:00"),
            Some(1_795_253_400_123)
        );
        assert_eq!(
            parse_rfc3339_ms_ceil("2026-11-21T09:30:00.1231Z"),
            Some(1_795_253_400_124)
        );
        assert_eq!(parse_rfc3339_ms_ceil("2026-11-21"), None);
        assert_eq!(parse_rfc3339_ms_ceil("yesterday"), None);
    }

    #[test]
    fn refuses_instants_outside_four_digit_utc_years() {
        assert_eq!(parse_rfc3339_nanos("9999-12-31T23:59:59-01:00"), None);
        assert_eq!(parse_rfc3339_nanos("0000-01-01T00:30:00+01:00"), None);
        assert!(parse_rfc3339_nanos("9999-12-31T23:59:59Z").is_some());
    }

    #[test]
    fn normalizes_to_server_form() {
        assert_eq!(
            normalize_rfc3339("2026-11-21T10:30:00+01:00").as_deref(),
            Some("2026-11-21T09:30:00.000Z")
        );
    }
}
