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

/// An optional string of at most `max_chars` characters.
pub fn optional_string(value: &Value, path: &str, max_chars: usize) -> ApiResult<Option<String>> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => {
            if s.chars().count() > max_chars {
                return Err(ApiError::invalid(
                    path,
                    format!("`{path}` is longer than {max_chars} characters"),
                ));
            }
            if s.contains('\0') {
                return Err(ApiError::invalid(
                    path,
                    format!("`{path}` must not contain NUL characters"),
                ));
            }
            Ok(Some(s.clone()))
        }
        other => Err(ApiError::invalid(
            path,
            format!("`{path}` must be a string, not {}", kind_of(other)),
        )),
    }
}

/// A required, non-blank string.
pub fn required_string(value: Option<&Value>, path: &str, max_chars: usize) -> ApiResult<String> {
    match value
        .map(|v| optional_string(v, path, max_chars))
        .transpose()?
        .flatten()
    {
        Some(s) if !s.trim().is_empty() => Ok(s),
        Some(_) => Err(ApiError::invalid(
            path,
            format!("`{path}` must not be empty"),
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
                Ok(Some(f))
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
    fn required_string_names_the_field() {
        let err = required_string(None, "name", 10).unwrap_err();
        assert_eq!(err.field(), Some("name"));
        assert!(required_string(Some(&json!("  ")), "name", 10).is_err());
        assert!(required_string(Some(&json!("abcdefghijk")), "name", 10).is_err());
    }
}
