//! The SQL that differs between the storage engines, in one place.
//!
//! Stores, lists and the change log write SQL both engines take; where the
//! engines differ (a JSON path, a list parameter, a substring test, planner
//! hints, where NULLs sort), they ask the connection's [`Dialect`]
//! (`conn.dialect()`) for the fragment.
//!
//! Each fragment is the same text every time for the same arguments: the
//! statement caches of both engines key on the SQL text, and PostgreSQL
//! matches an expression index only to an equivalent expression, so
//! [`Dialect::body_path`] is spelled exactly as `pg/schema.sql` spells its
//! indexes (SQLite's, as `schema.sql` spells its own).
//!
//! The SQLite fragments are the texts the stores wrote before there was a
//! second engine, byte for byte (a test below holds them): the plans the
//! plan tests check are those of these texts.

use super::Value;

/// Which engine a connection speaks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// The type a value inside a JSON body is compared as (a list's filter, a
/// cursor's key): what [`Dialect::body_param`] turns a parameter into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    Text,
    Number,
    Bool,
}

/// The most rows [`Dialect::rows_per_insert`] answers for any engine.
pub const MOST_ROWS_PER_INSERT: usize = 16;

/// The SQL fragments of one engine.
#[derive(Debug)]
pub struct Dialect {
    pub engine: Engine,
}

/// SQLite's.
pub static SQLITE: Dialect = Dialect {
    engine: Engine::Sqlite,
};

/// PostgreSQL's.
pub static POSTGRES: Dialect = Dialect {
    engine: Engine::Postgres,
};

impl Dialect {
    /// Whether the writer records a write's changes before releasing its
    /// savepoint rather than after. SQLite: after, so that the change log's
    /// pages are not copied to a savepoint journal by every write (a local
    /// call each way). PostgreSQL: before, so that the `RELEASE` is held back
    /// and goes with the next write's `SAVEPOINT` in one round trip
    /// (`Conn::execute_soon`); each round trip the writer waits on costs
    /// about 8% of a PUT's throughput there (docs/design/postgresql.md 10).
    /// Either way a write whose changes cannot be recorded fails its batch.
    pub fn records_before_release(&self) -> bool {
        self.engine == Engine::Postgres
    }

    /// In an upsert's `RETURNING` (`INSERT … ON CONFLICT … DO UPDATE`), the
    /// expression that is true for a row the statement inserted and false
    /// for one it updated, where the writer would rather send one such
    /// statement ahead than read the row before writing it (each statement
    /// waited for is a round trip): PostgreSQL's `xmax = 0` (an updated
    /// row's version carries the updating transaction). `None` on SQLite,
    /// whose read is a local call.
    pub fn upsert_inserted(&self) -> Option<&'static str> {
        match self.engine {
            Engine::Sqlite => None,
            Engine::Postgres => Some("(xmax = 0)"),
        }
    }

    /// The most rows one `INSERT ... VALUES` should carry when a write adds
    /// several rows to one table. SQLite: one. A statement that may write
    /// several rows and may fail midway (a constraint, a function) runs with
    /// a statement journal, a copy of every page it touches, which cost a
    /// document's three reference rows more than three statements did;
    /// and a statement is a local call. PostgreSQL: 16, since each statement
    /// is a message to the server and an execution of its own there (sent
    /// ahead by the writer, `Statement::execute_ahead`, but still parsed,
    /// bound and run one by one).
    pub fn rows_per_insert(&self) -> usize {
        match self.engine {
            Engine::Sqlite => 1,
            Engine::Postgres => MOST_ROWS_PER_INSERT,
        }
    }

    /// The value at `path` (`$.a.b`: keys separated by dots, no array
    /// indexes) of the `body` column, NULL where the key is missing or holds
    /// JSON null. The path is written literally, as the expression indexes
    /// are:
    /// - SQLite: `json_extract(body, '$.a.b')`, an SQL value (text, integer,
    ///   real; a boolean as 1 or 0);
    /// - PostgreSQL: `NULLIF((body::jsonb) #> '{a,b}', 'null'::jsonb)`, a
    ///   jsonb value: compare it with [`Dialect::body_param`], read it with
    ///   [`Dialect::body_value`].
    pub fn body_path(&self, path: &str) -> String {
        match self.engine {
            Engine::Sqlite => format!("json_extract(body, '{}')", path.replace('\'', "''")),
            Engine::Postgres => {
                let keys: Vec<String> = path
                    .strip_prefix("$.")
                    .unwrap_or(path)
                    .split('.')
                    .map(array_element)
                    .collect();
                format!(
                    "NULLIF((body::jsonb) #> '{{{}}}', 'null'::jsonb)",
                    keys.join(",").replace('\'', "''")
                )
            }
        }
    }

    /// The parameter `placeholder` (`?`, `?2`) as a value a
    /// [`Dialect::body_path`] compares with (`=`, `<`, `>`), bound as `ty`
    /// holds it (text; a real or an integer; a flag 1 or 0). SQLite: the
    /// placeholder. PostgreSQL: `to_jsonb(?::text)`, `to_jsonb(?::float8)`,
    /// `to_jsonb(?::boolean)`, jsonb as the path is.
    pub fn body_param(&self, ty: FieldType, placeholder: &str) -> String {
        match self.engine {
            Engine::Sqlite => placeholder.to_string(),
            Engine::Postgres => format!(
                "to_jsonb({placeholder}::{})",
                match ty {
                    FieldType::Text => "text",
                    FieldType::Number => "float8",
                    FieldType::Bool => "boolean",
                }
            ),
        }
    }

    /// The parameter `placeholder` bound as a real (a number filter) and
    /// compared with a column, which may hold integers. SQLite compares an
    /// integer with a real by value: the placeholder. PostgreSQL would refuse
    /// a real bound for a bigint: `?::float8`.
    pub fn real_param(&self, placeholder: &str) -> String {
        match self.engine {
            Engine::Sqlite => placeholder.to_string(),
            Engine::Postgres => format!("{placeholder}::float8"),
        }
    }

    /// A value read from a [`Dialect::body_path`] column as SQLite's
    /// `json_extract` gives it: text, an integer, a real, 1 or 0 for a
    /// boolean, NULL, or the JSON text of an object or array. SQLite: as
    /// read. PostgreSQL reads jsonb as its text: parsed here.
    pub fn body_value(&self, value: Value) -> Value {
        match (self.engine, value) {
            (Engine::Postgres, Value::Text(text)) => match serde_json::from_str(&text) {
                Ok(serde_json::Value::Null) => Value::Null,
                Ok(serde_json::Value::Bool(b)) => Value::Integer(i64::from(b)),
                Ok(serde_json::Value::Number(n)) => match n.as_i64() {
                    Some(i) => Value::Integer(i),
                    None => Value::Real(n.as_f64().unwrap_or(f64::NAN)),
                },
                Ok(serde_json::Value::String(s)) => Value::Text(s),
                _ => Value::Text(text),
            },
            (_, value) => value,
        }
    }

    /// An ORDER BY term: `expr ASC` or `expr DESC`. NULLs sort first
    /// ascending and last descending, as SQLite sorts them (the cursors of
    /// `listing` rely on it): PostgreSQL, which sorts them the other way,
    /// adds `NULLS FIRST`/`NULLS LAST` to a `nullable` term (and only to
    /// one: its indexes are built `NULLS FIRST` on exactly those columns, and
    /// an index serves an ORDER BY only when they agree).
    pub fn order(&self, expr: &str, ascending: bool, nullable: bool) -> String {
        let direction = if ascending { "ASC" } else { "DESC" };
        match (self.engine, nullable) {
            (Engine::Postgres, true) => format!(
                "{expr} {direction} {}",
                if ascending {
                    "NULLS FIRST"
                } else {
                    "NULLS LAST"
                }
            ),
            _ => format!("{expr} {direction}"),
        }
    }

    /// A subquery giving the texts of the JSON array of strings bound at
    /// `placeholder`, for `x IN (...)`: SQLite
    /// `SELECT value FROM json_each(?)`, PostgreSQL
    /// `SELECT jsonb_array_elements_text(?::jsonb)`.
    pub fn in_json_list(&self, placeholder: &str) -> String {
        match self.engine {
            Engine::Sqlite => format!("SELECT value FROM json_each({placeholder})"),
            Engine::Postgres => format!("SELECT jsonb_array_elements_text({placeholder}::jsonb)"),
        }
    }

    /// Whether the text `haystack` holds the text bound at `placeholder`:
    /// SQLite `instr(x, ?) > 0`, PostgreSQL `strpos(x, ?) > 0` (both by
    /// bytes; an empty needle is held by everything).
    pub fn contains(&self, haystack: &str, placeholder: &str) -> String {
        match self.engine {
            Engine::Sqlite => format!("instr({haystack}, {placeholder}) > 0"),
            Engine::Postgres => format!("strpos({haystack}, {placeholder}) > 0"),
        }
    }

    /// The alias after a subquery in FROM: SQLite none (its plans name the
    /// subquery `(subquery-N)`, as the plan tests read them); PostgreSQL
    /// (before 16) requires one: ` AS name`.
    pub fn subquery_alias(&self, name: &str) -> String {
        match self.engine {
            Engine::Sqlite => String::new(),
            Engine::Postgres => format!(" AS {name}"),
        }
    }

    /// A planner hint after a table in FROM: SQLite ` INDEXED BY index`
    /// (the plan then never depends on the statistics); PostgreSQL has none,
    /// and its plan tests are the guard.
    pub fn indexed_by(&self, index: &str) -> String {
        match self.engine {
            Engine::Sqlite => format!(" INDEXED BY {index}"),
            Engine::Postgres => String::new(),
        }
    }
    /// Refreshes the planner's statistics after a bulk load, outside any
    /// transaction. PostgreSQL also vacuums, which marks the new rows' pages
    /// all-visible: counts (a search's total) then read the index alone
    /// rather than every matching row's page (0.39 ms instead of 0.83 ms for
    /// the 1,761 US ports, right after an import).
    pub fn refresh_statistics(&self) -> &'static str {
        match self.engine {
            Engine::Sqlite => "ANALYZE",
            Engine::Postgres => "VACUUM (ANALYZE)",
        }
    }
}

/// One key of a path as an element of a PostgreSQL array literal: quoted
/// when it holds what the literal's syntax would read otherwise.
fn array_element(key: &str) -> String {
    let plain = !key.is_empty()
        && !key.eq_ignore_ascii_case("null")
        && !key
            .chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
    if plain {
        key.to_string()
    } else {
        format!("\"{}\"", key.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite's fragments are the texts the stores and lists wrote before
    /// the dialect existed (their plans are what `documents::plans` and the
    /// listing's tests check).
    #[test]
    fn sqlite_fragments_are_the_texts_written_before() {
        let d = &SQLITE;
        assert_eq!(
            d.body_path("$.cargo.quantity"),
            "json_extract(body, '$.cargo.quantity')"
        );
        assert_eq!(d.body_path("$.client"), "json_extract(body, '$.client')");
        assert_eq!(d.body_path("$.it's"), "json_extract(body, '$.it''s')");
        for ty in [FieldType::Text, FieldType::Number, FieldType::Bool] {
            assert_eq!(d.body_param(ty, "?"), "?");
            assert_eq!(d.body_param(ty, "?1"), "?1");
        }
        assert_eq!(d.real_param("?"), "?");
        assert_eq!(d.order("created_at", true, false), "created_at ASC");
        assert_eq!(d.order("id", false, false), "id DESC");
        assert_eq!(
            d.order("json_extract(body, '$.eta')", true, true),
            "json_extract(body, '$.eta') ASC"
        );
        assert_eq!(d.order("name_folded", false, true), "name_folded DESC");
        assert_eq!(d.in_json_list("?2"), "SELECT value FROM json_each(?2)");
        assert_eq!(d.in_json_list("?"), "SELECT value FROM json_each(?)");
        assert_eq!(d.contains("name_folded", "?"), "instr(name_folded, ?) > 0");
        assert_eq!(
            d.indexed_by("workspaces_created"),
            " INDEXED BY workspaces_created"
        );
        assert_eq!(d.subquery_alias("matching"), "");
        for value in [
            Value::Null,
            Value::Integer(1),
            Value::Real(1.5),
            Value::Text("\"a\"".into()),
        ] {
            assert_eq!(d.body_value(value.clone()), value);
        }
    }

    /// The stores' statements built of body paths, on SQLite: as they were
    /// written before the dialect.
    #[test]
    fn sqlite_store_statements_are_the_texts_written_before() {
        assert_eq!(
            crate::documents::store::parent_of_count_sql(&SQLITE),
            "SELECT count(*) FROM documents WHERE workspace_id = ?1 AND kind = 'job' \
             AND json_extract(body, '$.parent') = ?2"
        );
        assert_eq!(
            crate::documents::store::quantity_with_direction_sql(&SQLITE),
            "SELECT id FROM documents WHERE job_id = ?1 AND kind = 'quantityResult' \
             AND json_extract(body, '$.direction') = ?2 AND id <> ?3"
        );
        assert_eq!(
            crate::organizations::store::jobs_naming_sql(&SQLITE),
            "SELECT count(*) FROM documents WHERE kind = 'job' \
             AND (json_extract(body, '$.client') = ?1 OR json_extract(body, '$.vendor') = ?1)"
        );
    }

    #[test]
    fn postgres_fragments() {
        let d = &POSTGRES;
        assert_eq!(
            d.body_path("$.status"),
            "NULLIF((body::jsonb) #> '{status}', 'null'::jsonb)"
        );
        assert_eq!(
            d.body_path("$.cargo.quantity"),
            "NULLIF((body::jsonb) #> '{cargo,quantity}', 'null'::jsonb)"
        );
        assert_eq!(
            d.body_path("$.a b.it's.x,y.null"),
            "NULLIF((body::jsonb) #> '{\"a b\",it''s,\"x,y\",\"null\"}', 'null'::jsonb)"
        );
        assert_eq!(d.body_param(FieldType::Text, "?1"), "to_jsonb(?1::text)");
        assert_eq!(d.body_param(FieldType::Number, "?"), "to_jsonb(?::float8)");
        assert_eq!(d.body_param(FieldType::Bool, "?"), "to_jsonb(?::boolean)");
        assert_eq!(d.real_param("?"), "?::float8");
        assert_eq!(d.order("created_at", true, false), "created_at ASC");
        assert_eq!(d.order("x", true, true), "x ASC NULLS FIRST");
        assert_eq!(d.order("x", false, true), "x DESC NULLS LAST");
        assert_eq!(
            d.in_json_list("?2"),
            "SELECT jsonb_array_elements_text(?2::jsonb)"
        );
        assert_eq!(d.contains("name_folded", "?"), "strpos(name_folded, ?) > 0");
        assert_eq!(d.indexed_by("workspaces_created"), "");
        assert_eq!(d.subquery_alias("matching"), " AS matching");
        for (text, value) in [
            ("\"a\"", Value::Text("a".into())),
            ("12", Value::Integer(12)),
            ("1.5", Value::Real(1.5)),
            ("true", Value::Integer(1)),
            ("false", Value::Integer(0)),
            ("null", Value::Null),
            ("{\"a\": 1}", Value::Text("{\"a\": 1}".into())),
        ] {
            assert_eq!(d.body_value(Value::Text(text.into())), value, "{text}");
        }
        assert_eq!(d.body_value(Value::Null), Value::Null);
    }
}
