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
    let mut text = [0u8; MS_TEXT_LEN];
    format_ms_into(ms, &mut text).to_string()
}

/// Length of `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub const MS_TEXT_LEN: usize = 24;

/// [`format_ms`] into a caller's buffer, without allocating: the search path
/// formats two dates for each of hundreds of rows.
pub fn format_ms_into(ms: i64, out: &mut [u8; MS_TEXT_LEN]) -> &str {
    let Ok(t) = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000) else {
        return "invalid-date";
    };
    let year = t.year();
    if !(0..=9999).contains(&year) {
        return "invalid-date";
    }
    fn put(out: &mut [u8], value: u32) {
        let mut value = value;
        for slot in out.iter_mut().rev() {
            *slot = b'0' + (value % 10) as u8;
            value /= 10;
        }
    }
    put(&mut out[0..4], year as u32);
    out[4] = b'-';
    put(&mut out[5..7], u32::from(u8::from(t.month())));
    out[7] = b'-';
    put(&mut out[8..10], u32::from(t.day()));
    out[10] = b'T';
    put(&mut out[11..13], u32::from(t.hour()));
    out[13] = b':';
    put(&mut out[14..16], u32::from(t.minute()));
    out[16] = b':';
    put(&mut out[17..19], u32::from(t.second()));
    out[19] = b'.';
    put(&mut out[20..23], u32::from(t.millisecond()));
    out[23] = b'Z';
    // Only ASCII digits and separators were written.
    std::str::from_utf8(out).unwrap_or("invalid-date")
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

/// Waits `wait`, or less when `closing` turns true: answers whether the
/// server is still running. The one pause of every background task's loop.
pub async fn pause(
    wait: std::time::Duration,
    closing: &mut tokio::sync::watch::Receiver<bool>,
) -> bool {
    tokio::select! {
        () = tokio::time::sleep(wait) => {}
        _ = closing.changed() => {}
    }
    !*closing.borrow()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_milliseconds_in_utc() {
        assert_eq!(format_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_ms(1_795_253_400_123), "2026-11-21T09:30:00.123Z");
        assert_eq!(format_ms(-62_167_219_200_000), "0000-01-01T00:00:00.000Z");
        assert_eq!(format_ms(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(format_ms(253_402_300_800_000), "invalid-date");
    }

    #[test]
    fn the_allocation_free_formatter_agrees_with_the_time_crate() {
        let format = time::format_description::well_known::Rfc3339;
        let mut ms: i64 = -62_000_000_000_000;
        while ms < 253_000_000_000_000 {
            let t = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000).unwrap();
            let expected = t.format(&format).unwrap();
            let mut text = [0u8; MS_TEXT_LEN];
            let ours = format_ms_into(ms, &mut text);
            // The time crate drops trailing zero fractions; compare instants.
            assert_eq!(
                parse_rfc3339_nanos(ours),
                parse_rfc3339_nanos(&expected),
                "{ms}: {ours} vs {expected}"
            );
            ms += 7_919_993_001_337;
        }
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
