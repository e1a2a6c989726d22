//! Schema helpers of the OpenAPI document: small constructors of JSON Schema
//! values (types, objects, envelopes, list parameters) shared by the route
//! declarations and the components.

use serde_json::{Map, Value, json};

use crate::listing::Generation::{self, Older, V2};
use crate::listing::{ColumnFields, FieldType, MAX_LIMIT, OLDER_DEFAULT_LIMIT, V2_DEFAULT_LIMIT};

pub fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

pub fn string() -> Value {
    json!({"type": "string"})
}

pub fn uuid(description: &str) -> Value {
    describe(json!({"type": "string", "format": "uuid"}), description)
}

pub fn date_time(description: &str) -> Value {
    describe(
        json!({"type": "string", "format": "date-time"}),
        description,
    )
}

pub fn integer(min: i64, max: i64) -> Value {
    json!({"type": "integer", "minimum": min, "maximum": max})
}

pub fn one_of(values: &[&str]) -> Value {
    json!({"type": "string", "enum": values})
}

pub fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

/// Adds (or replaces) a description; an empty one adds nothing.
pub fn describe(mut schema: Value, description: &str) -> Value {
    if !description.is_empty() {
        schema["description"] = Value::from(description);
    }
    schema
}

/// An object with these properties, in this order.
pub fn object<S: Into<String>>(properties: Vec<(S, Value)>, required: &[&str]) -> Value {
    let properties: Map<String, Value> = properties
        .into_iter()
        .map(|(name, schema)| (name.into(), schema))
        .collect();
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// An object whose every property is always present (answers of the server).
pub fn record<S: Into<String>>(properties: Vec<(S, Value)>) -> Value {
    let properties: Vec<(String, Value)> = properties
        .into_iter()
        .map(|(name, schema)| (name.into(), schema))
        .collect();
    let names: Vec<String> = properties.iter().map(|(name, _)| name.clone()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    object(properties, &names)
}

/// The object admits no other property: request bodies refuse unknown fields.
pub fn closed(mut schema: Value) -> Value {
    schema["additionalProperties"] = Value::Bool(false);
    schema
}

/// The schema, or `null`: in request bodies `null` means "not set".
pub fn or_null(mut schema: Value) -> Value {
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.push(Value::Null);
    }
    match schema.get("type").cloned() {
        Some(Value::String(ty)) => {
            schema["type"] = json!([ty, "null"]);
            schema
        }
        _ => json!({"anyOf": [schema, {"type": "null"}]}),
    }
}

/// Every property of an object schema may also be `null`.
pub fn nullable_properties(mut schema: Value, except: &[&str]) -> Value {
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if !except.contains(&name.as_str()) {
                *property = or_null(property.take());
            }
        }
    }
    schema
}

/// Marks a dotted path (`sample.location`) as required in an object schema.
/// With `non_null`, the schema also refuses `null` there (a request overlay:
/// `null` counts as absent).
pub fn require(schema: &mut Value, path: &str, non_null: bool) {
    let (head, rest) = match path.split_once('.') {
        Some((head, rest)) => (head, Some(rest)),
        None => (path, None),
    };
    if !schema["required"].is_array() {
        schema["required"] = json!([]);
    }
    if let Some(required) = schema["required"].as_array_mut() {
        if !required.iter().any(|r| r == head) {
            required.push(Value::from(head));
        }
    }
    let property = &mut schema["properties"][head];
    match rest {
        Some(rest) => {
            if non_null {
                property["type"] = Value::from("object");
            }
            require(property, rest, non_null);
        }
        None if non_null => property["not"] = json!({"type": "null"}),
        None => {}
    }
}

/// `base` plus the required fields of a create.
pub fn with_required(base: Value, required: &[&str]) -> Value {
    if required.is_empty() {
        return base;
    }
    let mut overlay = json!({});
    for path in required {
        require(&mut overlay, path, true);
    }
    json!({"allOf": [base, overlay]})
}

/// `linked_item` or `synonymRecord` as `linked item`, `synonym record`.
pub fn words(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        match c {
            '_' => out.push(' '),
            c if c.is_ascii_uppercase() => {
                out.push(' ');
                out.push(c.to_ascii_lowercase());
            }
            c => out.push(c),
        }
    }
    out
}

/// `Camel Case`, `snake_case`, `kebab-case` or `1.0` as one PascalCase word.
pub fn pascal(text: &str) -> String {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

// Envelopes and bodies

/// The envelope of a generation around a body schema.
pub fn envelope(generation: Generation, body: &str, entity_type: &str) -> Value {
    match generation {
        Older => json!({"allOf": [
            schema_ref("Envelope"),
            {"properties": {"body": schema_ref(body)}},
        ]}),
        V2 => json!({"allOf": [
            schema_ref("V2Envelope"),
            {"properties": {"type": {"const": entity_type}, "body": schema_ref(body)}},
        ]}),
    }
}

/// A v2 request body: `{"body": {...}}`, or (`bare`) also the entity itself.
pub fn v2_body(entity: Value, bare: bool) -> Value {
    let wrapped = closed(object(vec![("body", entity.clone())], &["body"]));
    if bare {
        json!({"oneOf": [wrapped, entity]})
    } else {
        wrapped
    }
}

/// The request body of a create or patch in a generation.
pub fn body_of(generation: Generation, entity: Value, creating: bool) -> Value {
    match generation {
        Older => entity,
        V2 => v2_body(entity, creating),
    }
}

// Parameters

pub fn parameter(location: &str, name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "in": location, "description": description, "schema": schema})
}

pub fn query(name: &str, description: &str, schema: Value) -> Value {
    parameter("query", name, description, schema)
}

/// `limit`, `offset`, `sort` and exact-match filters of a workspace-service list.
pub fn list_parameters(generation: Generation, filters: Vec<(String, Value)>) -> Vec<Value> {
    let mut limit = integer(0, MAX_LIMIT);
    let mut sort = json!({"type": "string", "examples": ["created_at:desc"]});
    if generation == V2 {
        limit["default"] = Value::from(V2_DEFAULT_LIMIT);
        sort["default"] = Value::from("created_at:desc,id:asc");
    } else {
        limit["default"] = Value::from(OLDER_DEFAULT_LIMIT);
        sort["default"] = Value::from("created_at:asc,id:asc");
    }
    let mut params = vec![
        query(
            "limit",
            "Largest number of items to answer; the answer's `Link: <...>; rel=\"next\"` leads \
             to the next page",
            limit,
        ),
        query(
            "after",
            "The cursor of the page to answer: the `after` of the previous page's \
             `Link: <...>; rel=\"next\"` (also its `X-Next-Cursor`), with the same `sort`. A \
             next page costs the same however deep it is; not with `offset`",
            json!({"type": "string"}),
        ),
        query(
            "offset",
            "Items to skip (the skipped items are still read: prefer `after`)",
            json!({"type": "integer", "minimum": 0, "default": 0}),
        ),
        query(
            "sort",
            "`field:asc|desc`, comma-separated, over `created_at`, `updated_at`, `id` and the \
             resource's fields (dotted for nested ones); equal keys in creation order, then by \
             `id`, in the direction of the last term given",
            sort,
        ),
    ];
    for (field, schema) in filters {
        let name = match generation {
            Older => field.clone(),
            V2 => format!("filter[body.{field}]"),
        };
        params.push(query(&name, &format!("Exact match on `{field}`"), schema));
    }
    params
}

/// The filters of a list backed by columns: each field of the list's own
/// field map, with the type its value is compared as.
pub fn filters(fields: &ColumnFields) -> Vec<(String, Value)> {
    fields
        .0
        .iter()
        .map(|(name, _, ty)| {
            let ty = match ty {
                FieldType::Text => "string",
                FieldType::Number => "number",
                FieldType::Bool => "boolean",
            };
            (name.to_string(), json!({"type": ty}))
        })
        .collect()
}
