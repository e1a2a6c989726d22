//! Checks for JSON input that name the offending field and say what would be
//! accepted, so every 400 is one a person can act on. `null` counts as absent
//! for optional fields.

use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};

/// Joins a JSON path: `""` + `name` -> `name`; `cargo` + `uom` -> `cargo.uom`.
pub fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// Folds text for case-insensitive comparison and search: Unicode lower case,
/// with the Greek final sigma folded to the ordinary one (`ΘΕΣ` lower-cases to
/// `θες` but must still find `θεσσαλονικη`).
pub fn fold(text: &str) -> String {
    text.to_lowercase().replace('ς', "σ")
}

/// What a JSON value is, in words, for error messages.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub fn object<'a>(value: &'a Value, path: &str) -> ApiResult<&'a Map<String, Value>> {
    value.as_object().ok_or_else(|| {
        let what = if path.is_empty() {
            "The request body"
        } else {
            path
        };
        ApiError::invalid(
            if path.is_empty() { "$" } else { path },
            format!("{what} must be a JSON object, not {}", kind_of(value)),
        )
    })
}

pub fn unknown_field(path: &str, allowed: &[&str]) -> ApiError {
    ApiError::BadRequest {
        code: "unknown_field",
        message: format!(
            "Unknown field `{path}`; the fields accepted here are: {}",
            allowed.join(", ")
        ),
        field: Some(path.to_string()),
    }
}

pub fn missing(path: &str) -> ApiError {
    ApiError::BadRequest {
        code: "missing_field",
        message: format!("`{path}` is required"),
        field: Some(path.to_string()),
    }
}

/// Whether a text may span lines. Control characters (Unicode `Cc`: NUL, the
/// other C0 codes, DEL, C1) are refused in every text; multi-line texts (notes,
/// comments) may hold line breaks (`\n`, or `\r\n`) and tabs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    One,
    Many,
}

/// Refuses control characters in a text (see [`Lines`]).
pub fn check_text(text: &str, path: &str, lines: Lines) -> ApiResult<()> {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !c.is_control() {
            continue;
        }
        let allowed = lines == Lines::Many
            && match c {
                '\n' | '\t' => true,
                '\r' => chars.peek() == Some(&'\n'),
                _ => false,
            };
        if !allowed {
            let what = match lines {
                Lines::One => "control characters (line breaks, tabs, NUL, ...)",
                Lines::Many => "control characters other than line breaks and tabs",
            };
            return Err(ApiError::invalid(
                path,
                format!("`{path}` must not contain {what}; found U+{:04X}", c as u32),
            ));
        }
    }
    Ok(())
}

/// Whether a character shows nothing: white space, a format character
/// (Unicode `Cf`: zero-width spaces and joiners, direction marks and
/// overrides, the byte order mark, ...) or one of the other characters that
/// render as nothing (fillers, variation selectors, the braille blank).
pub fn is_invisible(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(c as u32,
            // Format characters (Cf), Unicode 15.1.
            0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890..=0x891 | 0x8E2 | 0x180E
            | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF
            | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F
            // Invisible letters and marks: the combining grapheme joiner, Hangul
            // fillers, Khmer inherent vowels, Mongolian and other variation
            // selectors, the braille pattern blank.
            | 0x34F | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180D | 0x180F | 0x2800
            | 0x3164 | 0xFE00..=0xFE0F | 0xFFA0 | 0xE0100..=0xE01EF)
}

/// Blank: nothing a reader would see (empty, or only [`is_invisible`] characters).
pub fn is_blank(text: &str) -> bool {
    text.chars().all(is_invisible)
}

/// An optional single-line string of at most `max_chars` characters.
pub fn optional_string(value: &Value, path: &str, max_chars: usize) -> ApiResult<Option<String>> {
    optional_text(value, path, max_chars, Lines::One)
}

/// An optional string of at most `max_chars` characters, on one line or many.
pub fn optional_text(
    value: &Value,
    path: &str,
    max_chars: usize,
    lines: Lines,
) -> ApiResult<Option<String>> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => {
            check_length(s, path, max_chars)?;
            check_text(s, path, lines)?;
            Ok(Some(s.clone()))
        }
        other => Err(ApiError::invalid(
            path,
            format!("`{path}` must be a string, not {}", kind_of(other)),
        )),
    }
}

/// At most `max_chars` characters.
pub fn check_length(text: &str, path: &str, max_chars: usize) -> ApiResult<()> {
    // Bytes bound characters from above: most texts need no counting.
    if text.len() > max_chars && text.chars().count() > max_chars {
        return Err(ApiError::invalid(
            path,
            format!("`{path}` is longer than {max_chars} characters"),
        ));
    }
    Ok(())
}

/// A required, non-blank single-line string (see [`is_blank`]).
pub fn required_string(value: Option<&Value>, path: &str, max_chars: usize) -> ApiResult<String> {
    match value
        .map(|v| optional_string(v, path, max_chars))
        .transpose()?
        .flatten()
    {
        Some(s) if !is_blank(&s) => Ok(s),
        Some(_) => Err(ApiError::invalid(
            path,
            format!("`{path}` must not be blank (empty, or only spaces or invisible characters)"),
        )),
        None => Err(missing(path)),
    }
}

/// An optional whole number in `min..=max` (`5` and `5.0` are both whole).
pub fn optional_integer(value: &Value, path: &str, min: i64, max: i64) -> ApiResult<Option<i64>> {
    let out_of_range = || {
        ApiError::invalid(
            path,
            format!("`{path}` must be a whole number from {min} to {max} (got {value})"),
        )
    };
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => {
            let whole = match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => i,
                (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => f as i64,
                _ => return Err(out_of_range()),
            };
            if (min..=max).contains(&whole) {
                Ok(Some(whole))
            } else {
                Err(out_of_range())
            }
        }
        other => Err(ApiError::invalid(
            path,
            format!("`{path}` must be a number, not {}", kind_of(other)),
        )),
    }
}

/// An optional number in `min..max` (upper bound excluded).
pub fn optional_number_below(
    value: &Value,
    path: &str,
    min: f64,
    below: f64,
) -> ApiResult<Option<f64>> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f >= min && f < below {
                // `-0` is zero: stored as SQLite stores it (the integer 0,
                // read back as `0.0`), never answered as `-0.0`.
                Ok(Some(f + 0.0))
            } else {
                Err(ApiError::invalid(
                    path,
                    format!("`{path}` must be a number from {min} to below {below} (got {value})"),
                ))
            }
        }
        other => Err(ApiError::invalid(
            path,
            format!("`{path}` must be a number, not {}", kind_of(other)),
        )),
    }
}

/// An optional string that must be one of `allowed` (exact, case-sensitive).
pub fn optional_enum(value: &Value, path: &str, allowed: &[&str]) -> ApiResult<Option<String>> {
    match optional_string(value, path, 64)? {
        None => Ok(None),
        Some(s) if allowed.contains(&s.as_str()) => Ok(Some(s)),
        Some(s) => Err(ApiError::invalid(
            path,
            format!(
                "`{path}` must be one of {} (got \"{s}\")",
                allowed.join(", ")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fold_ignores_case_and_final_sigma() {
        assert_eq!(fold("ΘΕΣΣΑΛΟΝΙΚΗ"), "θεσσαλονικη");
        assert!(fold("ΘΕΣΣΑΛΟΝΙΚΗ").contains(&fold("ΘΕΣ")));
        assert_eq!(fold("Łódź"), fold("łÓDŹ"));
    }

    #[test]
    fn integers_accept_whole_floats_and_reject_fractions() {
        assert_eq!(optional_integer(&json!(5.0), "x", 0, 9).unwrap(), Some(5));
        assert_eq!(optional_integer(&json!(null), "x", 0, 9).unwrap(), None);
        assert!(optional_integer(&json!(5.5), "x", 0, 9).is_err());
        assert!(optional_integer(&json!(10), "x", 0, 9).is_err());
        assert!(optional_integer(&json!("5"), "x", 0, 9).is_err());
        assert!(optional_integer(&json!(1e300), "x", 0, 9).is_err());
    }

    #[test]
    fn numbers_respect_the_open_upper_bound() {
        assert_eq!(
            optional_number_below(&json!(59.999), "s", 0.0, 60.0).unwrap(),
            Some(59.999)
        );
        assert!(optional_number_below(&json!(60), "s", 0.0, 60.0).is_err());
        assert!(optional_number_below(&json!(-0.1), "s", 0.0, 60.0).is_err());
    }

    #[test]
    fn control_characters_are_refused_but_notes_keep_line_breaks_and_tabs() {
        for text in [
            "a\u{0}b", "a\nb", "a\tb", "a\u{7f}", "a\u{85}", "a\u{9f}", "a\rb",
        ] {
            assert!(check_text(text, "x", Lines::One).is_err(), "{text:?}");
        }
        for text in ["a\nb\tc", "line\r\nline"] {
            assert!(check_text(text, "x", Lines::Many).is_ok(), "{text:?}");
        }
        for text in ["a\u{0}b", "a\rb", "a\u{1b}[31m", "\u{85}"] {
            let err = check_text(text, "notes", Lines::Many).unwrap_err();
            assert_eq!(err.field(), Some("notes"));
        }
        assert!(check_text("Łódź \u{200b} ünïcødé", "x", Lines::One).is_ok());
    }

    #[test]
    fn blank_includes_invisible_and_format_characters() {
        for text in [
            "",
            " ",
            "\u{202e}\u{200b}",
            "\u{feff}\u{2060}",
            "\u{3164}",
            "\u{a0}\u{3000}",
        ] {
            assert!(is_blank(text), "{text:?}");
        }
        for text in ["a", "\u{202e}a", "\u{200b}.", "ß"] {
            assert!(!is_blank(text), "{text:?}");
        }
        let err = required_string(Some(&json!("\u{202e}\u{200b}")), "name", 10).unwrap_err();
        assert_eq!(err.field(), Some("name"));
    }

    #[test]
    fn required_string_names_the_field() {
        let err = required_string(None, "name", 10).unwrap_err();
        assert_eq!(err.field(), Some("name"));
        assert!(required_string(Some(&json!("  ")), "name", 10).is_err());
        assert!(required_string(Some(&json!("abcdefghijk")), "name", 10).is_err());
    }
}
