//! The common list parameters of the workspace service: `limit`, `offset`,
//! `sort` and exact-match filters, turned into SQL over a resource's fields.
//!
//! Each resource says which fields exist and how each maps to SQL (a column,
//! or a path inside the JSON body). Field names reach SQL only through that
//! mapping or as bound parameters, never as raw text from the request.

use rusqlite::types::Value as SqlValue;

use crate::error::{ApiError, ApiResult};

/// Largest `limit` on any list.
pub const MAX_LIMIT: i64 = 1000;
/// The v2 default page size.
pub const V2_DEFAULT_LIMIT: i64 = 25;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// `/workspaces/...`: no default limit, no default sort beyond creation order.
    Older,
    /// `/v2/...`: limit 25, sort `created_at:desc, id:asc`, filters as `filter[body.x]`.
    V2,
}

/// The type a filter value is compared as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    Text,
    Number,
    Bool,
}

/// Where a field lives in SQL.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldSql {
    /// A column of the resource's table (a fixed, trusted name).
    Column(&'static str),
    /// A JSON path inside the `body` column, e.g. `$.cargo.quantity`.
    BodyPath(String),
}

/// Answers which fields a resource has: `None` for an unknown field.
pub trait Fields {
    fn field(&self, name: &str) -> Option<(FieldSql, FieldType)>;
    /// The names accepted as filters, for error messages.
    fn describe(&self) -> String;
}

#[derive(Clone, Debug)]
pub struct ListQuery {
    pub limit: Option<i64>,
    pub offset: i64,
    /// ORDER BY terms: SQL and direction.
    pub sort: Vec<(FieldSql, bool)>,
    /// Exact matches, ANDed.
    pub filters: Vec<(FieldSql, SqlValue)>,
}

/// Parses the query string of a list. `extra` names parameters the caller
/// handles itself (they are skipped here).
pub fn parse(
    pairs: &[(String, String)],
    generation: Generation,
    fields: &dyn Fields,
    extra: &[&str],
) -> ApiResult<ListQuery> {
    let mut query = ListQuery {
        limit: (generation == Generation::V2).then_some(V2_DEFAULT_LIMIT),
        offset: 0,
        sort: Vec::new(),
        filters: Vec::new(),
    };
    let mut sort_given = false;
    for (n, value) in distinct_params(pairs, extra)? {
        match n {
            "limit" => query.limit = Some(whole_number_param(n, value, 0, MAX_LIMIT)?),
            "offset" => query.offset = whole_number_param(n, value, 0, i64::MAX)?,
            "sort" => {
                sort_given = true;
                query.sort = parse_sort(value, fields)?;
            }
            _ => {
                let field_name = match generation {
                    Generation::V2 => n
                        .strip_prefix("filter[")
                        .and_then(|f| f.strip_suffix(']'))
                        .map(|f| f.strip_prefix("body.").unwrap_or(f))
                        .ok_or_else(|| unknown_parameter(n, fields))?,
                    Generation::Older => n,
                };
                let (sql, kind) = fields
                    .field(field_name)
                    .ok_or_else(|| unknown_parameter(n, fields))?;
                query.filters.push((sql, typed_value(n, value, kind)?));
            }
        }
    }
    if !sort_given {
        query.sort = match generation {
            Generation::V2 => vec![
                (FieldSql::Column("created_at"), false),
                (FieldSql::Column("id"), true),
            ],
            Generation::Older => vec![
                (FieldSql::Column("created_at"), true),
                (FieldSql::Column("id"), true),
            ],
        };
    }
    Ok(query)
}

/// The query parameters of a request once each, in order: `api_key` (the
/// session key) and the names in `skip` (which the caller reads itself) left
/// out; a name given twice is a 400. Every list and the location search read
/// their parameters through this.
pub fn distinct_params<'a>(
    pairs: &'a [(String, String)],
    skip: &[&str],
) -> ApiResult<Vec<(&'a str, &'a String)>> {
    let mut out: Vec<(&str, &String)> = Vec::with_capacity(pairs.len());
    for (name, value) in pairs {
        let n = name.as_str();
        if n == "api_key" || skip.contains(&n) {
            continue;
        }
        if out.iter().any(|(seen, _)| *seen == n) {
            return Err(ApiError::invalid_query(
                n,
                format!("`{n}` is given more than once"),
            ));
        }
        out.push((n, value));
    }
    Ok(out)
}

fn unknown_parameter(name: &str, fields: &dyn Fields) -> ApiError {
    ApiError::invalid_query(
        name,
        format!(
            "Unknown query parameter `{name}`; lists take limit, offset, sort and filters on: {}",
            fields.describe()
        ),
    )
}

/// A query parameter that must be a whole number in `min..=max` (shared with
/// the location search's `page` and `resultsPerPage`).
pub fn whole_number_param(name: &str, value: &str, min: i64, max: i64) -> ApiResult<i64> {
    match value.trim().parse::<i64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ if max == i64::MAX => Err(ApiError::invalid_query(
            name,
            format!("`{name}` must be a whole number of at least {min} (got \"{value}\")"),
        )),
        _ => Err(ApiError::invalid_query(
            name,
            format!("`{name}` must be a whole number from {min} to {max} (got \"{value}\")"),
        )),
    }
}

/// `field:asc|desc`, comma-separated; the direction defaults to `asc`.
fn parse_sort(value: &str, fields: &dyn Fields) -> ApiResult<Vec<(FieldSql, bool)>> {
    let mut terms = Vec::new();
    for term in value.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (name, direction) = term.split_once(':').unwrap_or((term, "asc"));
        let name = name.trim();
        let ascending = match direction.trim().to_ascii_lowercase().as_str() {
            "asc" => true,
            "desc" => false,
            other => {
                return Err(ApiError::invalid_query(
                    "sort",
                    format!("Sort direction must be asc or desc (got \"{other}\" in \"{term}\")"),
                ));
            }
        };
        let field = name.strip_prefix("body.").unwrap_or(name);
        let sql = match field {
            "created_at" | "updated_at" | "id" if name == field => FieldSql::Column(match field {
                "created_at" => "created_at",
                "updated_at" => "updated_at",
                _ => "id",
            }),
            _ => {
                fields
                    .field(field)
                    .ok_or_else(|| {
                        ApiError::invalid_query(
                            "sort",
                            format!(
                                "Cannot sort by `{name}`: no such field. Sortable: created_at, \
                                 updated_at, id, {}",
                                fields.describe()
                            ),
                        )
                    })?
                    .0
            }
        };
        terms.push((sql, ascending));
    }
    if terms.is_empty() {
        return Err(ApiError::invalid_query(
            "sort",
            "`sort` is empty; use field:asc or field:desc",
        ));
    }
    // A stable order for equal keys.
    if !terms.iter().any(|(sql, _)| *sql == FieldSql::Column("id")) {
        terms.push((FieldSql::Column("id"), true));
    }
    Ok(terms)
}

fn typed_value(name: &str, value: &str, kind: FieldType) -> ApiResult<SqlValue> {
    match kind {
        FieldType::Text => Ok(SqlValue::Text(value.to_string())),
        FieldType::Bool => match value {
            "true" => Ok(SqlValue::Integer(1)),
            "false" => Ok(SqlValue::Integer(0)),
            _ => Err(ApiError::invalid_query(
                name,
                format!("`{name}` must be true or false (got \"{value}\")"),
            )),
        },
        FieldType::Number => value
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(SqlValue::Real)
            .ok_or_else(|| {
                ApiError::invalid_query(
                    name,
                    format!("`{name}` must be a number (got \"{value}\")"),
                )
            }),
    }
}

/// SQL built from a [`ListQuery`]: a WHERE fragment (after the caller's own
/// conditions) and an ORDER BY / LIMIT / OFFSET tail, with their parameters.
pub struct ListSql {
    pub filter: String,
    pub filter_params: Vec<SqlValue>,
    pub tail: String,
    pub tail_params: Vec<SqlValue>,
}

fn expression(sql: &FieldSql, params: &mut Vec<SqlValue>) -> String {
    match sql {
        FieldSql::Column(column) => (*column).to_string(),
        FieldSql::BodyPath(path) => {
            params.push(SqlValue::Text(path.clone()));
            "json_extract(body, ?)".to_string()
        }
    }
}

impl ListQuery {
    pub fn to_sql(&self) -> ListSql {
        let mut filter = String::new();
        let mut filter_params = Vec::new();
        for (sql, value) in &self.filters {
            let expr = expression(sql, &mut filter_params);
            filter.push_str(&format!(" AND {expr} = ?"));
            filter_params.push(value.clone());
        }
        let mut tail_params = Vec::new();
        let order: Vec<String> = self
            .sort
            .iter()
            .map(|(sql, ascending)| {
                let expr = expression(sql, &mut tail_params);
                format!("{expr} {}", if *ascending { "ASC" } else { "DESC" })
            })
            .collect();
        let mut tail = format!(" ORDER BY {}", order.join(", "));
        tail.push_str(" LIMIT ? OFFSET ?");
        tail_params.push(SqlValue::Integer(self.limit.unwrap_or(-1)));
        tail_params.push(SqlValue::Integer(self.offset));
        ListSql {
            filter,
            filter_params,
            tail,
            tail_params,
        }
    }
}

/// Runs a list: the count of every match (for `X-Total-Count`) and the page
/// the query asks for, both under the same conditions. `select` is the
/// statement up to and including its FROM clause; `from` is that FROM clause
/// alone; `condition` and `params` are the resource's own conditions.
pub fn fetch_page<T>(
    conn: &rusqlite::Connection,
    select: &str,
    from: &str,
    condition: &str,
    mut params: Vec<SqlValue>,
    query: &ListQuery,
    map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<(i64, Vec<T>)> {
    let sql = query.to_sql();
    let condition = format!("{condition}{}", sql.filter);
    params.extend(sql.filter_params);
    let total: i64 = conn
        .prepare_cached(&format!("SELECT count(*) {from} WHERE {condition}"))?
        .query_row(rusqlite::params_from_iter(params.iter()), |row| row.get(0))?;
    params.extend(sql.tail_params);
    let rows = conn
        .prepare_cached(&format!("{select} WHERE {condition}{}", sql.tail))?
        .query_map(rusqlite::params_from_iter(params.iter()), map)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((total, rows))
}

/// A fixed set of column-backed fields, for resources that are not JSON bodies.
pub struct ColumnFields(pub &'static [(&'static str, &'static str, FieldType)]);

impl Fields for ColumnFields {
    fn field(&self, name: &str) -> Option<(FieldSql, FieldType)> {
        self.0
            .iter()
            .find(|(field, _, _)| *field == name)
            .map(|(_, column, kind)| (FieldSql::Column(column), *kind))
    }

    fn describe(&self) -> String {
        self.0
            .iter()
            .map(|(field, _, _)| *field)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: ColumnFields = ColumnFields(&[("description", "description", FieldType::Text)]);

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn v2_defaults() {
        let q = parse(&[], Generation::V2, &FIELDS, &[]).unwrap();
        assert_eq!(q.limit, Some(25));
        assert_eq!(q.offset, 0);
        assert_eq!(
            q.sort,
            vec![
                (FieldSql::Column("created_at"), false),
                (FieldSql::Column("id"), true)
            ]
        );
        let older = parse(&[], Generation::Older, &FIELDS, &[]).unwrap();
        assert_eq!(older.limit, None);
    }

    #[test]
    fn rejects_bad_limits_sorts_and_filters() {
        for bad in [
            ("limit", "1001"),
            ("limit", "-1"),
            ("offset", "x"),
            ("sort", "nope:asc"),
            ("sort", "description:sideways"),
            ("colour", "red"),
        ] {
            assert!(
                parse(&pairs(&[bad]), Generation::Older, &FIELDS, &[]).is_err(),
                "{bad:?}"
            );
        }
        assert!(
            parse(
                &pairs(&[("description", "x")]),
                Generation::V2,
                &FIELDS,
                &[]
            )
            .is_err()
        );
        let v2 = parse(
            &pairs(&[("filter[body.description]", "x")]),
            Generation::V2,
            &FIELDS,
            &[],
        )
        .unwrap();
        assert_eq!(v2.filters.len(), 1);
    }

    #[test]
    fn sort_terms_become_sql_with_a_stable_tiebreak() {
        let q = parse(
            &pairs(&[("sort", "description:desc,created_at")]),
            Generation::Older,
            &FIELDS,
            &[],
        )
        .unwrap();
        let sql = q.to_sql();
        assert_eq!(
            sql.tail,
            " ORDER BY description DESC, created_at ASC, id ASC LIMIT ? OFFSET ?"
        );
    }
}
