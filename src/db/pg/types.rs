//! [`Value`] to and from PostgreSQL's types, in the driver's binary format.
//!
//! | PostgreSQL | reads as | binds from |
//! |---|---|---|
//! | bigint, integer, smallint, oid | `Integer` | `Integer` (range-checked) |
//! | double precision, real | `Real` | `Real`, `Integer` |
//! | text, varchar, char(n), name, "char" | `Text` | `Text` |
//! | json, jsonb | `Text` (the JSON text) | `Text` |
//! | bytea | `Blob` | `Blob` |
//! | boolean | `Integer` 0/1 | `Integer` 0/1 |
//! | void | `Null` | — |
//! | NULL of any type | `Null` | `Null` |
//!
//! Anything else (numeric, timestamps, arrays…) is an error naming the type:
//! the service's SQL casts such results (`sum(length(data))::bigint`).

use std::error::Error as StdError;

use bytes::{BufMut, BytesMut};
use tokio_postgres::types::{FromSql, IsNull, Kind, ToSql, Type, to_sql_checked};

use crate::db::value::Value;

type BoxError = Box<dyn StdError + Sync + Send>;

/// jsonb's binary format: a version byte, then the JSON text.
const JSONB_VERSION: u8 = 1;

fn mismatch(value: &Value, ty: &Type) -> BoxError {
    format!("cannot bind {} to a parameter of type {ty}", value.kind()).into()
}

/// The type a value of `ty` is sent and read as: a domain's base type (its
/// constraint is checked by the server), any other type itself.
fn base(ty: &Type) -> &Type {
    match ty.kind() {
        Kind::Domain(inner) => base(inner),
        _ => ty,
    }
}

impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let ty = base(ty);
        match (self, ty) {
            (Value::Null, _) => return Ok(IsNull::Yes),
            (Value::Integer(i), &Type::INT8) => out.put_i64(*i),
            (Value::Integer(i), &Type::INT4) => out.put_i32(
                i32::try_from(*i).map_err(|_| format!("{i} is out of range for integer"))?,
            ),
            (Value::Integer(i), &Type::INT2) => out.put_i16(
                i16::try_from(*i).map_err(|_| format!("{i} is out of range for smallint"))?,
            ),
            (Value::Integer(i), &Type::OID) => {
                out.put_u32(u32::try_from(*i).map_err(|_| format!("{i} is out of range for oid"))?)
            }
            (Value::Integer(i), &Type::BOOL) => out.put_u8(match i {
                0 => 0,
                1 => 1,
                _ => return Err(format!("{i} is not a flag (0 or 1)").into()),
            }),
            // As SQLite stores an integer in a REAL column: converted.
            (Value::Integer(i), &Type::FLOAT8) => out.put_f64(*i as f64),
            (Value::Integer(i), &Type::FLOAT4) => out.put_f32(*i as f32),
            (Value::Real(r), &Type::FLOAT8) => out.put_f64(*r),
            (Value::Real(r), &Type::FLOAT4) => out.put_f32(*r as f32),
            (Value::Text(s), &Type::JSON) => out.put_slice(s.as_bytes()),
            (Value::Text(s), &Type::JSONB) => {
                out.put_u8(JSONB_VERSION);
                out.put_slice(s.as_bytes());
            }
            (Value::Text(s), _) if <&str as ToSql>::accepts(ty) => {
                return s.as_str().to_sql(ty, out);
            }
            (Value::Blob(b), &Type::BYTEA) => out.put_slice(b),
            (value, _) => return Err(mismatch(value, ty)),
        }
        Ok(IsNull::No)
    }

    /// Every type is offered to [`Value::to_sql`], which refuses the pairs it
    /// cannot convert with a message naming both.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// A column's bytes as the server sent them, borrowed from the row, with its
/// type: read into a [`rusqlite::types::ValueRef`] without copying
/// ([`value_ref`]), as [`Value`]'s reading would convert it.
struct Raw<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Raw<'a>, BoxError> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Raw<'a>, BoxError> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// Column `column` of `row`, borrowed where it is text or bytes: the same
/// conversions as reading a [`Value`], without an allocation per column (a
/// page of 200 locations is thousands of columns).
pub fn value_ref(
    row: &tokio_postgres::Row,
    column: usize,
) -> Result<rusqlite::types::ValueRef<'_>, BoxError> {
    use rusqlite::types::ValueRef;
    let ty = row
        .columns()
        .get(column)
        .ok_or("no such column in the row")?
        .type_();
    let ty = base(ty);
    let Raw(raw) = row.try_get::<_, Raw<'_>>(column)?;
    let Some(raw) = raw else {
        return Ok(ValueRef::Null);
    };
    Ok(match *ty {
        Type::INT8 => ValueRef::Integer(i64::from_sql(ty, raw)?),
        Type::INT4 => ValueRef::Integer(i32::from_sql(ty, raw)?.into()),
        Type::INT2 => ValueRef::Integer(i16::from_sql(ty, raw)?.into()),
        Type::OID => ValueRef::Integer(u32::from_sql(ty, raw)?.into()),
        Type::FLOAT8 => ValueRef::Real(f64::from_sql(ty, raw)?),
        Type::FLOAT4 => ValueRef::Real(f32::from_sql(ty, raw)?.into()),
        Type::BOOL => ValueRef::Integer(bool::from_sql(ty, raw)?.into()),
        Type::BYTEA => ValueRef::Blob(raw),
        Type::VOID => ValueRef::Null,
        Type::JSONB => match raw.split_first() {
            Some((&JSONB_VERSION, text)) => ValueRef::Text(std::str::from_utf8(text)?.as_bytes()),
            _ => return Err("jsonb in an unknown binary format version".into()),
        },
        Type::CHAR if raw.is_ascii() => ValueRef::Text(raw),
        Type::JSON => ValueRef::Text(std::str::from_utf8(raw)?.as_bytes()),
        _ if <&str as FromSql>::accepts(ty) => {
            ValueRef::Text(<&str as FromSql>::from_sql(ty, raw)?.as_bytes())
        }
        _ => {
            // The owned reading names the type in its error.
            Value::from_sql(ty, raw)?;
            return Err(format!("columns of type {ty} are not mapped").into());
        }
    })
}

impl<'a> FromSql<'a> for Value {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Value, BoxError> {
        let ty = base(ty);
        Ok(match *ty {
            Type::INT8 => Value::Integer(i64::from_sql(ty, raw)?),
            Type::INT4 => Value::Integer(i32::from_sql(ty, raw)?.into()),
            Type::INT2 => Value::Integer(i16::from_sql(ty, raw)?.into()),
            Type::OID => Value::Integer(u32::from_sql(ty, raw)?.into()),
            Type::CHAR => Value::Text(char::from(i8::from_sql(ty, raw)? as u8).to_string()),
            Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Real(f32::from_sql(ty, raw)?.into()),
            Type::BOOL => Value::Integer(bool::from_sql(ty, raw)?.into()),
            Type::BYTEA => Value::Blob(raw.to_vec()),
            Type::JSON => Value::Text(String::from_utf8(raw.to_vec())?),
            Type::JSONB => match raw.split_first() {
                Some((&JSONB_VERSION, text)) => Value::Text(String::from_utf8(text.to_vec())?),
                _ => return Err("jsonb in an unknown binary format version".into()),
            },
            Type::VOID => Value::Null,
            _ if <String as FromSql>::accepts(ty) => Value::Text(String::from_sql(ty, raw)?),
            _ => {
                let hint = match ty.kind() {
                    Kind::Array(_) => " (arrays are not mapped)",
                    _ => " (cast it to bigint, double precision or text in the query)",
                };
                return Err(format!("columns of type {ty} are not mapped{hint}").into());
            }
        })
    }

    fn from_sql_null(_: &Type) -> Result<Value, BoxError> {
        Ok(Value::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}
