//! The engine-neutral value: what a parameter binds and a column reads as, on
//! SQLite and on PostgreSQL alike (docs/design/postgresql.md, 3.1). Its five
//! variants are SQLite's storage classes, so it converts to and from
//! `rusqlite::types::Value` without loss; the PostgreSQL layer
//! ([`super::pg`]) maps it to and from that server's types.
//!
//! Flags are integers 0/1, as they are stored (`bool` converts to 0/1), and
//! `None` is `Null`.

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Integer(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Real(r) => Some(*r),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Blob(b) => Some(b),
            _ => None,
        }
    }

    /// The name of the variant, for messages ("cannot bind real to integer").
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Integer(_) => "integer",
            Value::Real(_) => "real",
            Value::Text(_) => "text",
            Value::Blob(_) => "blob",
        }
    }
}

impl From<rusqlite::types::Value> for Value {
    fn from(value: rusqlite::types::Value) -> Value {
        use rusqlite::types::Value as Sql;
        match value {
            Sql::Null => Value::Null,
            Sql::Integer(i) => Value::Integer(i),
            Sql::Real(r) => Value::Real(r),
            Sql::Text(s) => Value::Text(s),
            Sql::Blob(b) => Value::Blob(b),
        }
    }
}

impl From<Value> for rusqlite::types::Value {
    fn from(value: Value) -> rusqlite::types::Value {
        use rusqlite::types::Value as Sql;
        match value {
            Value::Null => Sql::Null,
            Value::Integer(i) => Sql::Integer(i),
            Value::Real(r) => Sql::Real(r),
            Value::Text(s) => Sql::Text(s),
            Value::Blob(b) => Sql::Blob(b),
        }
    }
}

/// Binds as the SQLite value it converts to, so a `Value` can be passed to
/// rusqlite directly.
impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Integer(i) => ValueRef::Integer(*i),
            Value::Real(r) => ValueRef::Real(*r),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

impl rusqlite::types::FromSql for Value {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        use rusqlite::types::{FromSqlError, ValueRef};
        Ok(match value {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Real(r) => Value::Real(r),
            ValueRef::Text(t) => Value::Text(
                std::str::from_utf8(t)
                    .map_err(|e| FromSqlError::Other(Box::new(e)))?
                    .to_owned(),
            ),
            ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        })
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Integer(i)
    }
}

impl From<i32> for Value {
    fn from(i: i32) -> Value {
        Value::Integer(i.into())
    }
}

impl From<u32> for Value {
    fn from(i: u32) -> Value {
        Value::Integer(i.into())
    }
}

impl From<f64> for Value {
    fn from(r: f64) -> Value {
        Value::Real(r)
    }
}

/// A flag is stored as 0 or 1.
impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Integer(i64::from(b))
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Text(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Text(s)
    }
}

impl From<&String> for Value {
    fn from(s: &String) -> Value {
        Value::Text(s.clone())
    }
}

impl From<Vec<u8>> for Value {
    fn from(b: Vec<u8>) -> Value {
        Value::Blob(b)
    }
}

impl From<&[u8]> for Value {
    fn from(b: &[u8]) -> Value {
        Value::Blob(b.to_vec())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::types::Value as Sql;

    #[test]
    fn every_variant_goes_to_sqlite_and_back_unchanged() {
        let values = [
            Value::Null,
            Value::Integer(i64::MIN),
            Value::Integer(i64::MAX),
            Value::Real(-0.5),
            Value::Text("it's ✓".into()),
            Value::Blob(vec![0, 255, 1]),
        ];
        for value in values {
            let sql: Sql = value.clone().into();
            assert_eq!(Value::from(sql), value);
        }
    }

    #[test]
    fn rust_types_convert_to_their_storage_class() {
        assert_eq!(Value::from(7i64), Value::Integer(7));
        assert_eq!(Value::from(-7i32), Value::Integer(-7));
        assert_eq!(Value::from(2.5f64), Value::Real(2.5));
        assert_eq!(Value::from(true), Value::Integer(1));
        assert_eq!(Value::from(false), Value::Integer(0));
        assert_eq!(Value::from("a"), Value::Text("a".into()));
        assert_eq!(Value::from(String::from("b")), Value::Text("b".into()));
        assert_eq!(Value::from(vec![1u8, 2]), Value::Blob(vec![1, 2]));
        assert_eq!(Value::from(None::<i64>), Value::Null);
        assert_eq!(Value::from(Some("c")), Value::Text("c".into()));
        assert_eq!(Value::from(Some(true)), Value::Integer(1));
    }

    #[test]
    fn a_value_binds_and_reads_back_through_sqlite() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let values = [
            Value::Null,
            Value::Integer(42),
            Value::Real(1.25),
            Value::Text("x".into()),
            Value::Blob(vec![9, 8]),
        ];
        for value in values {
            let back: Value = conn
                .query_row("SELECT ?1", [&value], |row| row.get(0))
                .unwrap();
            assert_eq!(back, value);
        }
    }
}
