//! Validation and normalisation of document bodies against their kind's
//! table: types, enum values, unknown fields, aliases, required fields,
//! datetimes (stored as RFC 3339 UTC with milliseconds), catalog references
//! (stored as record ids) and organization ids. Also the JSON merge patch that
//! PATCH applies, and the expansion of references for reading.

use serde_json::{Map, Value};

use super::kinds::{Field, Kind, Type};
use crate::catalogs::store::{RefContext, Reference};
use crate::clock;
use crate::error::{ApiError, ApiResult};
use crate::organizations;
use crate::validate::{self, Lines, kind_of, missing, object, optional_enum, unknown_field};

/// Longest text field.
const TEXT_MAX: usize = 10_000;

/// Renames aliases (`testDate` -> `date`) to their canonical names. Sending both
/// names of one field is an error.
pub fn apply_aliases(kind: &Kind, body: Value) -> ApiResult<Value> {
    let Value::Object(map) = body else {
        return Ok(body);
    };
    // Most bodies use no alias: kept as they are, not rebuilt key by key.
    let alias = |key: &String| kind.aliases.iter().any(|(alias, _)| *alias == key);
    if !map.keys().any(alias) {
        return Ok(Value::Object(map));
    }
    let mut out = Map::with_capacity(map.len());
    for (key, value) in map {
        let canonical = kind
            .aliases
            .iter()
            .find(|(alias, _)| *alias == key)
            .map_or(key.as_str(), |(_, canonical)| canonical)
            .to_string();
        if out.contains_key(&canonical) {
            return Err(ApiError::invalid(
                &canonical,
                format!("`{canonical}` is given twice (under its own name and an alias)"),
            ));
        }
        out.insert(canonical, value);
    }
    Ok(Value::Object(out))
}

/// What normalising does with catalog references and organization ids.
enum References<'r, 'c> {
    /// Checks their form only: no store is touched, so a create's body is
    /// checked before the writer and the writer only resolves.
    Check,
    /// Also resolves them to record ids (in the writer's transaction).
    Resolve(&'r mut RefContext<'c>),
}

/// Checks a whole body and returns it normalised, its references checked in
/// form but not resolved (see [`resolve`]). `null` means absent. Touches no
/// store: a create runs it before the writer.
pub fn check(kind: &Kind, body: &Value) -> ApiResult<Map<String, Value>> {
    let map = object(body, "")?;
    normalize_object(kind.fields, map, "", &mut References::Check)
}

/// A body [`check`] made, its catalog references resolved to record ids
/// (missing records created through `refs`) and its organization ids found.
/// Borrows the body and builds the resolved one: a write may run again
/// (`db::writer`), and a reference's object is replaced, never copied.
pub fn resolve(
    kind: &Kind,
    body: &Map<String, Value>,
    refs: &mut RefContext<'_>,
) -> ApiResult<Map<String, Value>> {
    resolve_object(kind.fields, body, "", refs)
}

fn resolve_object(
    fields: &'static [Field],
    map: &Map<String, Value>,
    prefix: &str,
    refs: &mut RefContext<'_>,
) -> ApiResult<Map<String, Value>> {
    // Resolved in the fields' order (the order records are created in and
    // errors found), placed in the body's.
    let mut resolved = Vec::new();
    for field in fields.iter().filter(|f| holds_references(&f.ty)) {
        if let Some(value) = map.get(field.name) {
            let path = validate::join(prefix, field.name);
            resolved.push((field.name, resolve_value(&field.ty, value, &path, refs)?));
        }
    }
    let mut out = Map::with_capacity(map.len());
    for (name, value) in map {
        let value = match resolved.iter().position(|(n, _)| *n == name.as_str()) {
            Some(i) => resolved.swap_remove(i).1,
            None => value.clone(),
        };
        out.insert(name.clone(), value);
    }
    Ok(out)
}

fn resolve_value(
    ty: &'static Type,
    value: &Value,
    path: &str,
    refs: &mut RefContext<'_>,
) -> ApiResult<Value> {
    match (ty, value) {
        (Type::Catalog(_) | Type::Organization, _) => {
            normalize_value(ty, value, path, &mut References::Resolve(refs))
        }
        (Type::Object(fields), Value::Object(map)) => {
            Ok(Value::Object(resolve_object(fields, map, path, refs)?))
        }
        (Type::Array(inner), Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| resolve_value(inner, item, &format!("{path}[{i}]"), refs))
            .collect::<ApiResult<Vec<_>>>()
            .map(Value::Array),
        _ => Ok(value.clone()),
    }
}

/// Whether a field of this type holds a reference to resolve.
fn holds_references(ty: &Type) -> bool {
    match ty {
        Type::Catalog(_) | Type::Organization => true,
        Type::Object(fields) => fields.iter().any(|f| holds_references(&f.ty)),
        Type::Array(inner) => holds_references(inner),
        _ => false,
    }
}

fn field_names(fields: &[Field], prefix: &str) -> Vec<String> {
    fields
        .iter()
        .map(|f| validate::join(prefix, f.name))
        .collect()
}

fn normalize_object(
    fields: &'static [Field],
    map: &Map<String, Value>,
    prefix: &str,
    refs: &mut References<'_, '_>,
) -> ApiResult<Map<String, Value>> {
    let mut placed = Vec::with_capacity(map.len());
    for (key, value) in map {
        let path = validate::join(prefix, key);
        let Some(at) = fields.iter().position(|f| f.name == key) else {
            let names = field_names(fields, prefix);
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            return Err(unknown_field(&path, &names));
        };
        if value.is_null() {
            continue;
        }
        let normalized = normalize_value(&fields[at].ty, value, &path, refs)?;
        placed.push((at, key.clone(), normalized));
    }
    Ok(ordered(placed))
}

/// The same fields, in the order the kind's table lists them, whatever order
/// the client (or a default) put them in.
pub fn in_documented_order(fields: &[Field], map: Map<String, Value>) -> Map<String, Value> {
    // The body's few entries sorted by their field's place, rather than a
    // look-up in the body (a hash) for every field the kind has.
    ordered(
        map.into_iter()
            .filter_map(|(name, value)| {
                let at = fields.iter().position(|field| field.name == name)?;
                Some((at, name, value))
            })
            .collect(),
    )
}

/// A map of fields, each with its place in the kind's table (each place
/// once), in the table's order.
fn ordered(mut placed: Vec<(usize, String, Value)>) -> Map<String, Value> {
    placed.sort_unstable_by_key(|(at, _, _)| *at);
    placed
        .into_iter()
        .map(|(_, name, value)| (name, value))
        .collect()
}

/// Whether the map's keys are fields of the table in the table's order
/// (what [`in_documented_order`] makes), without building anything.
pub fn is_in_documented_order(fields: &[Field], map: &Map<String, Value>) -> bool {
    let mut rest = fields.iter();
    map.keys().all(|key| rest.any(|field| field.name == key))
}

fn type_error(path: &str, expected: &str, value: &Value) -> ApiError {
    ApiError::invalid(
        path,
        format!("`{path}` must be {expected}, not {}", kind_of(value)),
    )
}

fn text(value: &Value, path: &str, lines: Lines) -> ApiResult<Value> {
    match value {
        Value::String(_) => Ok(validate::optional_text(value, path, TEXT_MAX, lines)?
            .map_or(Value::Null, Value::String)),
        other => Err(type_error(path, "a string", other)),
    }
}

fn normalize_value(
    ty: &'static Type,
    value: &Value,
    path: &str,
    refs: &mut References<'_, '_>,
) -> ApiResult<Value> {
    match ty {
        Type::Text | Type::DocumentId => text(value, path, Lines::One),
        Type::Notes => text(value, path, Lines::Many),
        Type::Stringified => match value {
            Value::String(_) => normalize_value(&Type::Text, value, path, refs),
            Value::Number(n) => Ok(Value::String(n.to_string())),
            Value::Bool(b) => Ok(Value::String(b.to_string())),
            other => Err(type_error(path, "a string, number or boolean", other)),
        },
        Type::Int => {
            let n = validate::optional_integer(value, path, -(1 << 53), 1 << 53)?;
            Ok(n.map_or(Value::Null, Value::from))
        }
        Type::Float => match value.as_f64() {
            Some(f) if f.is_finite() => Ok(value.clone()),
            _ => Err(type_error(path, "a number", value)),
        },
        Type::Bool => match value {
            Value::Bool(_) => Ok(value.clone()),
            other => Err(type_error(path, "true or false", other)),
        },
        Type::DateTime => match value {
            Value::String(s) => clock::normalize_rfc3339(s).map(Value::String).ok_or_else(|| {
                ApiError::invalid(
                    path,
                    format!("`{path}` must be an RFC 3339 date-time such as 2026-11-21T09:30:00Z (got \"{s}\")"),
                )
            }),
            other => Err(type_error(path, "an RFC 3339 date-time string", other)),
        },
        Type::Enum(allowed) => Ok(optional_enum(value, path, allowed)?.map_or(Value::Null, Value::String)),
        Type::Catalog(catalog) => match refs {
            References::Check => Reference::parse(*catalog, value, path).map(|_| value.clone()),
            References::Resolve(refs) => refs.resolve(*catalog, value, path).map(Value::String),
        },
        Type::Organization => match (value, refs) {
            (Value::String(_), References::Check) => Ok(value.clone()),
            (Value::String(id), References::Resolve(refs)) => match organizations::store::get(refs.conn, id)? {
                Some(org) => Ok(Value::String(org.id)),
                None => Err(ApiError::invalid(path, format!("No organization with id \"{id}\""))),
            },
            (other, _) => Err(type_error(path, "an organization id", other)),
        },
        Type::Object(fields) => {
            let map = object(value, path)?;
            Ok(Value::Object(normalize_object(fields, map, path, refs)?))
        }
        Type::Array(inner) => {
            let Value::Array(items) = value else {
                return Err(type_error(path, "an array", value));
            };
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let item_path = format!("{path}[{i}]");
                    if item.is_null() {
                        return Err(ApiError::invalid(&item_path, format!("`{item_path}` must not be null")));
                    }
                    normalize_value(inner, item, &item_path, refs)
                })
                .collect::<ApiResult<Vec<_>>>()
                .map(Value::Array)
        }
    }
}

/// The value at a dotted path of a body.
pub fn value_at<'a>(body: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut current = body.get(parts.next()?)?;
    for part in parts {
        current = current.as_object()?.get(part)?;
    }
    Some(current).filter(|v| !v.is_null())
}

/// Checks the kind's required fields on a normalised body.
pub fn check_required(kind: &Kind, body: &Map<String, Value>) -> ApiResult<()> {
    match kind
        .required
        .iter()
        .find(|path| value_at(body, path).is_none())
    {
        Some(path) => Err(missing(path)),
        None => Ok(()),
    }
}

/// RFC 7396 JSON merge patch: objects merge, `null` removes, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let target_map = target.as_object_mut().expect("made an object above");
    for (key, value) in patch_map {
        if value.is_null() {
            target_map.remove(key);
        } else {
            merge_patch(target_map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// Every catalog record id a body refers to.
pub fn referenced_ids(fields: &'static [Field], body: &Map<String, Value>, out: &mut Vec<String>) {
    for (name, value) in body {
        if let Some(field) = field_of(fields, name, value) {
            collect(&field.ty, value, out);
        }
    }
}

/// The field `name` of `fields`, if `value` could hold a reference: walks
/// the body's few entries and compares names, rather than hashing every
/// field the kind has to look it up in the body.
fn field_of<'f>(fields: &'f [Field], name: &str, value: &Value) -> Option<&'f Field> {
    match value {
        Value::String(_) | Value::Object(_) | Value::Array(_) => {
            fields.iter().find(|field| field.name == name)
        }
        _ => None,
    }
}

fn collect(ty: &'static Type, value: &Value, out: &mut Vec<String>) {
    match (ty, value) {
        (Type::Catalog(_), Value::String(id)) => out.push(id.clone()),
        (Type::Object(fields), Value::Object(map)) => referenced_ids(fields, map, out),
        (Type::Array(inner), Value::Array(items)) => {
            items.iter().for_each(|v| collect(inner, v, out))
        }
        _ => {}
    }
}

/// Replaces record ids by `{id, xref, name}` (the quality result read shape),
/// as `items` renders the record of an id (`None`: left as it is).
pub fn expand_references(
    fields: &'static [Field],
    body: &mut Map<String, Value>,
    items: &impl Fn(&str) -> Option<Value>,
) {
    for (name, value) in body.iter_mut() {
        if let Some(field) = field_of(fields, name, value) {
            expand(&field.ty, value, items);
        }
    }
}

fn expand(ty: &'static Type, value: &mut Value, items: &impl Fn(&str) -> Option<Value>) {
    match (ty, value) {
        (Type::Catalog(_), value @ Value::String(_)) => {
            if let Some(reference) = value.as_str().and_then(items) {
                *value = reference;
            }
        }
        (Type::Object(fields), Value::Object(map)) => expand_references(fields, map, items),
        (Type::Array(inner), Value::Array(list)) => {
            list.iter_mut().for_each(|v| expand(inner, v, items))
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7396() {
        let mut doc = json!({"a": 1, "cargo": {"product": "p", "quantity": 2}, "list": [1, 2]});
        merge_patch(
            &mut doc,
            &json!({"a": null, "cargo": {"quantity": 5}, "list": [3]}),
        );
        assert_eq!(
            doc,
            json!({"cargo": {"product": "p", "quantity": 5}, "list": [3]})
        );
    }

    #[test]
    fn aliases_become_canonical_and_clash_when_doubled() {
        let kind = &super::super::kinds::QUALITY_RESULT;
        let out = apply_aliases(kind, json!({"testDate": "x", "comment": "c"})).unwrap();
        assert_eq!(out, json!({"date": "x", "notes": "c"}));
        assert!(apply_aliases(kind, json!({"testDate": "x", "date": "y"})).is_err());
    }

    #[test]
    fn documented_order_is_recognised_without_rebuilding() {
        let fields = super::super::kinds::TIMELOG.fields;
        let ordered = json!({"workspace": "w", "type": "t", "start": "s", "notes": "n"});
        let ordered = ordered.as_object().unwrap();
        assert!(is_in_documented_order(fields, ordered));
        let shuffled = json!({"type": "t", "workspace": "w"});
        let shuffled = shuffled.as_object().unwrap();
        assert!(!is_in_documented_order(fields, shuffled));
        let rebuilt = in_documented_order(fields, shuffled.clone());
        assert!(is_in_documented_order(fields, &rebuilt));
        let unknown = json!({"workspace": "w", "colour": "red"});
        assert!(!is_in_documented_order(
            fields,
            unknown.as_object().unwrap()
        ));
    }

    #[test]
    fn value_at_walks_dotted_paths() {
        let body = json!({"sample": {"location": "L1"}, "x": null});
        let map = body.as_object().unwrap();
        assert_eq!(value_at(map, "sample.location"), Some(&json!("L1")));
        assert_eq!(value_at(map, "sample.other"), None);
        assert_eq!(value_at(map, "x"), None);
    }
}
