//! The two envelope shapes of the workspace service: `{id, body}` on the older
//! paths, `{type, id, body, created_at, updated_at}` on `/v2`; and unwrapping
//! of v2 request bodies (`{"body": {...}}`).

use serde_json::Value;

use crate::clock;
use crate::error::{ApiError, ApiResult};
use crate::listing::Generation;

/// `{id, body}`. The body is moved in, not copied (`json!` would serialize
/// it into a new tree).
pub fn older(id: &str, body: Value) -> Value {
    let mut envelope = serde_json::Map::with_capacity(2);
    envelope.insert("id".to_string(), Value::String(id.to_string()));
    envelope.insert("body".to_string(), body);
    Value::Object(envelope)
}

/// [`older`] of a body given as JSON text, written straight out: a body
/// shown as stored is never parsed into a tree to be written again.
/// (`tests::the_older_envelope_is_the_same_from_a_tree_and_from_text`
/// holds the two to one shape.)
pub fn older_text(id: &str, body: &serde_json::value::RawValue) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Older<'a> {
        id: &'a str,
        body: &'a serde_json::value::RawValue,
    }
    serde_json::to_vec(&Older { id, body }).expect("a string and JSON text always serialise")
}

/// The v2 envelope's shape: the one place its fields are named.
#[derive(serde::Serialize)]
struct V2<'a, B: ?Sized> {
    #[serde(rename = "type")]
    entity_type: &'a str,
    id: &'a str,
    body: &'a B,
    created_at: &'a str,
    updated_at: &'a str,
}

/// `{type, id, body, created_at, updated_at}`. The fields are [`V2`]'s; the
/// body is moved in, not serialized into a copy.
pub fn v2(entity_type: &str, id: &str, body: Value, created_at: i64, updated_at: i64) -> Value {
    let stamps = (clock::format_ms(created_at), clock::format_ms(updated_at));
    let shape = V2 {
        entity_type,
        id,
        body: &Value::Null,
        created_at: &stamps.0,
        updated_at: &stamps.1,
    };
    // An envelope of strings always serializes to an object.
    let Ok(Value::Object(mut envelope)) = serde_json::to_value(&shape) else {
        return Value::Null;
    };
    if let Some(slot) = envelope.get_mut("body") {
        *slot = body;
    }
    Value::Object(envelope)
}

/// The v2 envelope of `body`, written straight to JSON text (the change log:
/// no value tree in between). The times are RFC 3339 already.
pub fn v2_text<B: serde::Serialize + ?Sized>(
    entity_type: &str,
    id: &str,
    body: &B,
    created_at: &str,
    updated_at: &str,
) -> ApiResult<String> {
    crate::http::json::to_string(&V2 {
        entity_type,
        id,
        body,
        created_at,
        updated_at,
    })
    .map_err(|e| ApiError::internal_from("rendering an envelope", e))
}

/// A record of the workspace service: what both envelopes are made of. Its
/// [`Entity::v2`] and [`Entity::render`] are the one rendering of every
/// record's envelope.
pub trait Entity {
    /// The v2 `type`.
    const ENTITY_TYPE: &'static str;
    fn id(&self) -> &str;
    fn body(&self) -> Value;
    /// Created and last updated, in milliseconds since the epoch.
    fn stamps(&self) -> (i64, i64);

    /// The v2 envelope as JSON text.
    fn v2_text(&self) -> ApiResult<String> {
        let (created_at, updated_at) = self.stamps();
        v2_text(
            Self::ENTITY_TYPE,
            self.id(),
            &self.body(),
            &clock::format_ms(created_at),
            &clock::format_ms(updated_at),
        )
    }

    /// The v2 envelope.
    fn v2(&self) -> Value {
        let (created_at, updated_at) = self.stamps();
        v2(
            Self::ENTITY_TYPE,
            self.id(),
            self.body(),
            created_at,
            updated_at,
        )
    }

    /// The envelope of a generation: `{id, body}` on the older paths, the v2
    /// entity envelope on `/v2`.
    fn render(&self, generation: Generation) -> Value {
        match generation {
            Generation::Older => older(self.id(), self.body()),
            Generation::V2 => self.v2(),
        }
    }
}

/// How a v2 request body arrives.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Wrapping {
    /// `{"body": {...}}` required (PATCH).
    Required,
    /// `{"body": {...}}`, or the bare entity when the object has no `body` key (POST).
    Optional,
    /// As [`Wrapping::Optional`], and the entity, wrapped or bare, may also
    /// be an array of entities (the POST of a document kind that takes one).
    Items,
}

/// Takes the entity out of a v2 request body; returns it and the JSON path
/// prefix its fields are reported under (`body` or empty).
pub fn unwrap_v2(value: Value, wrapping: Wrapping) -> ApiResult<(Value, &'static str)> {
    let items = wrapping == Wrapping::Items;
    let mut map = match value {
        Value::Object(map) => map,
        Value::Array(_) if items => return Ok((value, "")),
        _ if items => {
            return Err(ApiError::invalid(
                "$",
                "The request body must be a JSON object or an array of objects",
            ));
        }
        _ => {
            return Err(ApiError::invalid(
                "$",
                "The request body must be a JSON object",
            ));
        }
    };
    match map.remove("body") {
        Some(body) => {
            if let Some(extra) = map.keys().next() {
                return Err(crate::validate::unknown_field(extra, &["body"]));
            }
            if items && body.is_array() {
                return Ok((body, "body"));
            }
            if !body.is_object() {
                return Err(ApiError::invalid(
                    "body",
                    if items {
                        "`body` must be a JSON object or an array of objects"
                    } else {
                        "`body` must be a JSON object"
                    },
                ));
            }
            Ok((body, "body"))
        }
        None if wrapping != Wrapping::Required => Ok((Value::Object(map), "")),
        None => Err(crate::validate::missing("body")),
    }
}

/// Prefixes the field of a validation error with `body.` when the entity came wrapped.
pub fn in_body(err: ApiError, prefix: &str) -> ApiError {
    match err {
        ApiError::BadRequest {
            code,
            message,
            field: Some(field),
        } if !prefix.is_empty() && field != "$" => ApiError::BadRequest {
            code,
            message,
            field: Some(format!("{prefix}.{field}")),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_older_envelope_is_the_same_from_a_tree_and_from_text() {
        let body = json!({"xref": "J-\"1\"", "cargo": {"quantity": 12.5}, "tags": [1, null]});
        let text = serde_json::value::RawValue::from_string(body.to_string()).expect("JSON");
        let from_tree = serde_json::to_vec(&super::older("a-1", body.clone())).expect("tree");
        assert_eq!(super::older_text("a-1", &text), from_tree);
    }
}
