//! Strict reading of JSON request bodies, in one pass: serde_json's parser
//! builds the [`Value`] through the visitor below instead of `Value`'s own, so
//! that two things serde_json accepts silently are refused with the path of the
//! field at fault:
//!
//! - an object key given twice (`{"name":"a","name":"b"}`; serde_json keeps
//!   the last): 400 `duplicate_field`;
//! - an integer that a double-precision number cannot hold exactly
//!   (`9007199254740993`): JavaScript clients, the console among them, would
//!   read another number than the one stored; 400 `invalid_field`.
//!
//! The path is built only when something is wrong: the fault is noted where it
//! is found, and each enclosing object or array adds its key or index while the
//! error unwinds. A body without fault costs one map lookup per key more than
//! `serde_json::from_slice`, which the key's insertion does anyway.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

use crate::error::ApiError;

/// Parses a whole body as one JSON value, strictly (see the module's text).
pub fn parse(bytes: &[u8]) -> Result<Value, ApiError> {
    let fault = RefCell::new(None);
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let parsed = Strict { fault: &fault }
        .deserialize(&mut reader)
        .and_then(|value| reader.end().map(|()| value));
    match (parsed, fault.into_inner()) {
        (Ok(value), None) => Ok(value),
        (_, Some(fault)) => Err(fault.into_error()),
        (Err(err), None) => Err(ApiError::bad_request(
            "invalid_json",
            format!("The request body is not valid JSON: {err}"),
        )),
    }
}

/// Whether a double holds this integer exactly (every integer up to 2^53 in
/// size, and larger ones with enough trailing zero bits, such as 2^60).
fn exact_in_a_double(n: i128) -> bool {
    (n as f64) as i128 == n
}

#[derive(Debug)]
enum Problem {
    DuplicateKey,
    InexactNumber(String),
}

enum Segment {
    Key(String),
    Index(usize),
}

/// What was wrong, and where: `path` innermost first, as the error unwinds.
struct Fault {
    problem: Problem,
    path: Vec<Segment>,
}

impl Fault {
    fn into_error(self) -> ApiError {
        let mut field = String::new();
        for segment in self.path.iter().rev() {
            match segment {
                Segment::Key(key) if field.is_empty() => field.push_str(key),
                Segment::Key(key) => {
                    field.push('.');
                    field.push_str(key);
                }
                Segment::Index(i) => field.push_str(&format!("[{i}]")),
            }
        }
        if field.is_empty() {
            field.push('$');
        }
        match self.problem {
            Problem::DuplicateKey => ApiError::BadRequest {
                code: "duplicate_field",
                message: format!(
                    "`{field}` is given more than once; send each field of an object once"
                ),
                field: Some(field),
            },
            Problem::InexactNumber(number) => ApiError::invalid(
                &field,
                format!(
                    "`{field}` is {number}, which a double-precision number (what JavaScript and \
                     most JSON readers use) cannot hold exactly; numbers above 2^53 \
                     (9007199254740992) must be multiples that a double holds"
                ),
            ),
        }
    }
}

/// The visitor: builds a [`Value`] as `serde_json` would, noting a fault.
#[derive(Clone, Copy)]
struct Strict<'f> {
    fault: &'f RefCell<Option<Fault>>,
}

impl Strict<'_> {
    fn fail<E: de::Error>(&self, problem: Problem, segment: Option<Segment>) -> E {
        *self.fault.borrow_mut() = Some(Fault {
            problem,
            path: segment.into_iter().collect(),
        });
        E::custom("refused")
    }

    /// An error came up from inside `segment`: say where, if it is ours.
    fn within(&self, segment: Segment) {
        if let Some(fault) = self.fault.borrow_mut().as_mut() {
            fault.path.push(segment);
        }
    }

    fn integer<E: de::Error>(&self, n: i128) -> Result<(), E> {
        if exact_in_a_double(n) {
            Ok(())
        } else {
            Err(self.fail(Problem::InexactNumber(n.to_string()), None))
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.integer(v.into())?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.integer(v.into())?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(items.size_hint().unwrap_or(0).min(1024));
        loop {
            match items.next_element_seed(self) {
                Ok(Some(item)) => out.push(item),
                Ok(None) => return Ok(Value::Array(out)),
                Err(err) => {
                    self.within(Segment::Index(out.len()));
                    return Err(err);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = fields.next_key::<String>()? {
            let value = match fields.next_value_seed(self) {
                Ok(value) => value,
                Err(err) => {
                    self.within(Segment::Key(key));
                    return Err(err);
                }
            };
            match out.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                Entry::Occupied(slot) => {
                    let key = slot.key().clone();
                    return Err(self.fail(Problem::DuplicateKey, Some(Segment::Key(key))));
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// What a record's JSON text typically takes: the buffer [`to_vec`] and
/// [`to_string`] start with, so that serializing one does not grow it from
/// nothing, a reallocation and a copy at each doubling.
const TYPICAL_RECORD: usize = 1024;

/// `value` as JSON text, into a buffer sized for a record.
pub fn to_vec<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(TYPICAL_RECORD);
    serde_json::to_writer(&mut out, value)?;
    Ok(out)
}

/// `value` as JSON text, into a string sized for a record.
pub fn to_string<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let bytes = to_vec(value)?;
    // serde_json writes UTF-8 only.
    String::from_utf8(bytes).map_err(serde::ser::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::parse;
    use serde_json::json;

    fn refused(body: &str) -> (u16, String, Option<String>) {
        let err = parse(body.as_bytes()).unwrap_err();
        (
            err.status(),
            err.code().to_string(),
            err.field().map(String::from),
        )
    }

    #[test]
    fn builds_the_same_value_as_serde_json() {
        let body =
            r#"{"b":[1,-2,3.5,true,null,"x\n"],"a":{"c":{}},"big":9007199254740992,"e":1e300}"#;
        let strict = parse(body.as_bytes()).unwrap();
        let plain: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(strict, plain);
        assert_eq!(
            strict.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["b", "a", "big", "e"]
        );
    }

    #[test]
    fn a_duplicate_key_is_named_by_its_path() {
        let dup = |body: &str| refused(body);
        assert_eq!(
            dup(r#"{"name":"a","name":"b"}"#),
            (400, "duplicate_field".into(), Some("name".into()))
        );
        assert_eq!(
            dup(r#"{"body":{"cargo":{"uom":"a","uom":"b"}}}"#)
                .2
                .as_deref(),
            Some("body.cargo.uom")
        );
        assert_eq!(
            dup(r#"{"measurements":[{"a":1},{"value":1,"value":2}]}"#)
                .2
                .as_deref(),
            Some("measurements[1].value")
        );
        // Same name at different levels is fine.
        assert_eq!(parse(br#"{"a":{"a":1}}"#).unwrap(), json!({"a": {"a": 1}}));
    }

    #[test]
    fn integers_a_double_cannot_hold_are_refused() {
        assert_eq!(
            refused(r#"{"x":{"q":[0,9007199254740993]}}"#),
            (400, "invalid_field".into(), Some("x.q[1]".into()))
        );
        assert_eq!(refused("-9007199254740993").2.as_deref(), Some("$"));
        assert!(parse(b"18446744073709551615").is_err());
        for fine in [
            "9007199254740992",
            "-9007199254740992",
            "1152921504606846976",
            "9223372036854775808",
            "-9223372036854775808",
            "0.1",
        ] {
            assert!(parse(fine.as_bytes()).is_ok(), "{fine}");
        }
    }

    #[test]
    fn malformed_json_is_invalid_json() {
        assert_eq!(refused(r#"{"a":1} x"#).1, "invalid_json");
        assert_eq!(refused(r#"{"a":"#).1, "invalid_json");
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(refused(&deep).1, "invalid_json");
    }
}
