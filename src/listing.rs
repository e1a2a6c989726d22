//! The common list parameters of the workspace service: `limit`, `offset`,
//! `after`, `sort` and exact-match filters, turned into SQL over a resource's
//! fields; and the one query every list runs ([`fetch_page`]), answered by
//! [`Page::respond`] with `X-Total-Count`, `Link: <...>; rel="next"` and
//! `X-Next-Cursor`.
//!
//! Each resource says which fields exist and how each maps to SQL (a column,
//! or a path inside the JSON body). Field names reach SQL only through that
//! mapping, never as raw text from the request; a body path is written into
//! the SQL literally (`json_extract(body, '$.status')` on SQLite: the
//! connection's [`Dialect`] writes every fragment that differs between the
//! engines), so that the expression indexes of the schema serve it.
//!
//! Paging is by key: a page's last row gives the cursor (`after`) of the
//! next, the values of its sort terms. The rows after a cursor are read as a
//! few index ranges in order ([`after_segments`]): equal on a prefix of the
//! sort terms, past the cursor on the next one. So a next page costs the same
//! at the start of a list and deep inside it. `offset` still works, and reads
//! and drops the rows it skips.

use crate::db::Dialect;
use crate::db::Value as SqlValue;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::http::Response;

/// Largest `limit` on any list.
pub const MAX_LIMIT: i64 = 1000;
/// The v2 default page size.
pub const V2_DEFAULT_LIMIT: i64 = 25;
/// The older paths' default page size (the service document says none; a
/// page of everything grows without bound: decision 33 in docs/api.md).
pub const OLDER_DEFAULT_LIMIT: i64 = 100;
/// `X-Total-Count` is exact up to this; past it, it answers this number and
/// `X-Total-Count-Capped: true`, so counting never walks more rows than this.
pub const COUNT_BOUND: i64 = 1_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// `/workspaces/...`: 100 per page, creation order.
    Older,
    /// `/v2/...`: limit 25, sort `created_at:desc, id:asc`, filters as `filter[body.x]`.
    V2,
}

/// The type a filter value is compared as.
pub use crate::db::dialect::FieldType;

/// Where a field lives in SQL.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldSql {
    /// A column of the resource's table (a fixed, trusted name).
    Column(&'static str),
    /// A JSON path inside the `body` column, e.g. `$.cargo.quantity`, from a
    /// resource's own field table (never the request's text), and the type
    /// its values are compared as.
    BodyPath(String, FieldType),
}

impl FieldSql {
    /// The SQL expression: the column, or the dialect's
    /// [`body_path`](Dialect::body_path) (`json_extract(body, '$.path')` on
    /// SQLite) with the path literal (an expression index matches only
    /// literal text).
    pub fn expression(&self, dialect: &Dialect) -> String {
        match self {
            FieldSql::Column(column) => (*column).to_string(),
            FieldSql::BodyPath(path, _) => dialect.body_path(path),
        }
    }

    /// A parameter `?` compared with [`FieldSql::expression`] (`=`, `<`,
    /// `>`), bound as `value`: a body path's value as the dialect compares
    /// it ([`Dialect::body_param`]); a real compared with a column as a real.
    fn param(&self, dialect: &Dialect, value: &SqlValue) -> String {
        match (self, value) {
            (FieldSql::BodyPath(_, ty), _) => dialect.body_param(*ty, "?"),
            (FieldSql::Column(_), SqlValue::Real(_)) => dialect.real_param("?"),
            (FieldSql::Column(_), _) => String::from("?"),
        }
    }

    /// Whether a row can hold NULL here: every body path and column but the
    /// three every record has.
    fn nullable(&self) -> bool {
        match self {
            FieldSql::Column(column) => !matches!(
                column.rsplit('.').next(),
                Some("id" | "created_at" | "updated_at" | "workspace_id")
            ),
            FieldSql::BodyPath(..) => true,
        }
    }
}

/// Answers which fields a resource has: `None` for an unknown field.
pub trait Fields {
    fn field(&self, name: &str) -> Option<(FieldSql, FieldType)>;
    /// The names accepted as filters, for error messages.
    fn describe(&self) -> String;
}

#[derive(Clone, Debug)]
pub struct ListQuery {
    pub limit: i64,
    pub offset: i64,
    /// ORDER BY terms: SQL and direction (true: ascending). Always ends with
    /// `id`, so that the order is total and a cursor names one place.
    pub sort: Vec<(FieldSql, bool)>,
    /// Exact matches, ANDed.
    pub filters: Vec<(FieldSql, SqlValue)>,
    /// `after`: the sort values of the last row already seen.
    pub after: Option<Vec<SqlValue>>,
    /// The sort as the client sees it (`eta:desc,created_at:desc,id:desc`),
    /// written into a cursor and checked when it comes back: a list may
    /// rewrite `sort`'s SQL (to read its terms from another table) without
    /// changing what its cursors mean.
    pub signature: String,
    /// The request's own parameters a next page repeats (all but `after`,
    /// `offset` and `api_key`), in order.
    pub carry: Vec<(String, String)>,
    /// The list's total as its store keeps it, set by that store (never read
    /// from the request) when the query's matches are exactly what it counts
    /// (no filter): answered, exact at any size, instead of counting.
    pub kept_total: Option<i64>,
}

/// Parses the query string of a list. `extra` names parameters the caller
/// handles itself (they are skipped here, and carried into the next page's
/// link).
pub fn parse(
    pairs: &[(String, String)],
    generation: Generation,
    fields: &dyn Fields,
    extra: &[&str],
) -> ApiResult<ListQuery> {
    parse_with_order(pairs, generation, fields, extra, None)
}

/// [`parse`] for a list whose order without `sort` is its own, not its
/// generation's (the terms must end in `id`).
pub fn parse_with_order(
    pairs: &[(String, String)],
    generation: Generation,
    fields: &dyn Fields,
    extra: &[&str],
    default_order: Option<&[(FieldSql, bool)]>,
) -> ApiResult<ListQuery> {
    let mut query = ListQuery {
        limit: match generation {
            Generation::V2 => V2_DEFAULT_LIMIT,
            Generation::Older => OLDER_DEFAULT_LIMIT,
        },
        offset: 0,
        sort: Vec::new(),
        filters: Vec::new(),
        after: None,
        carry: Vec::new(),
        signature: String::new(),
        kept_total: None,
    };
    let mut sort_given = false;
    let mut after = None;
    for (n, value) in distinct_params(pairs, &[])? {
        if !matches!(n, "after" | "offset") {
            query.carry.push((n.to_string(), value.clone()));
        }
        if extra.contains(&n) {
            continue;
        }
        match n {
            "limit" => query.limit = whole_number_param(n, value, 0, MAX_LIMIT)?,
            "offset" => query.offset = whole_number_param(n, value, 0, i64::MAX)?,
            "after" => after = Some(value.as_str()),
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
    if let (false, Some(order)) = (sort_given, default_order) {
        query.sort = order.to_vec();
    } else if !sort_given {
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
    query.signature = sort_signature(&query.sort);
    if let Some(cursor) = after {
        if query.offset > 0 {
            return Err(ApiError::invalid_query(
                "after",
                "`after` and `offset` cannot be combined: a cursor already says where the page starts",
            ));
        }
        query.after = Some(decode_cursor(cursor, &query.signature, query.sort.len())?);
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
    // A total order: equal keys in creation order, then by id, in the
    // direction of the last term given (so that one index, scanned one way,
    // gives the whole order of a one-field sort).
    let direction = terms[terms.len() - 1].1;
    for column in ["created_at", "id"] {
        let seen = terms.iter().any(|(sql, _)| *sql == FieldSql::Column("id"));
        if !seen
            && !terms
                .iter()
                .any(|(sql, _)| *sql == FieldSql::Column(column))
        {
            terms.push((FieldSql::Column(column), direction));
        }
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

/// The sort values of a row, as a cursor: unpadded base64url of
/// `{"s": SORT, "k": [VALUES]}`, where `SORT` names the sort terms, so that a
/// cursor of another order is refused instead of misread.
fn encode_cursor(signature: &str, values: &[SqlValue]) -> String {
    let keys: Vec<Value> = values
        .iter()
        .map(|v| match v {
            SqlValue::Null | SqlValue::Blob(_) => Value::Null,
            SqlValue::Integer(i) => Value::from(*i),
            SqlValue::Real(f) => Value::from(*f),
            SqlValue::Text(t) => Value::from(t.as_str()),
        })
        .collect();
    let cursor = serde_json::json!({"s": signature, "k": keys});
    crate::base64url::encode(cursor.to_string().as_bytes())
}

fn sort_signature(sort: &[(FieldSql, bool)]) -> String {
    sort.iter()
        .map(|(sql, ascending)| {
            let name = match sql {
                FieldSql::Column(c) => (*c).to_string(),
                FieldSql::BodyPath(p, _) => p.trim_start_matches("$.").to_string(),
            };
            format!("{name}:{}", if *ascending { "asc" } else { "desc" })
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn decode_cursor(text: &str, signature: &str, terms: usize) -> ApiResult<Vec<SqlValue>> {
    let bad = |why: &str| {
        ApiError::invalid_query(
            "after",
            format!(
                "`after` {why}; pass back the `after` of a `Link: rel=\"next\"` (or \
                 `X-Next-Cursor`) this list answered, with the same `sort`"
            ),
        )
    };
    let cursor: Value = crate::base64url::decode(text)
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| bad("is not a cursor of this server"))?;
    match cursor["s"].as_str() {
        None => return Err(bad("is not a cursor of this server")),
        Some(s) if s != signature => return Err(bad("belongs to another sort order")),
        Some(_) => {}
    }
    let keys = cursor["k"]
        .as_array()
        .filter(|keys| keys.len() == terms)
        .ok_or_else(|| bad("is not a cursor of this server"))?;
    keys.iter()
        .map(|key| match key {
            Value::Null => Ok(SqlValue::Null),
            Value::String(t) => Ok(SqlValue::Text(t.clone())),
            Value::Number(n) => Ok(n
                .as_i64()
                .map(SqlValue::Integer)
                .unwrap_or_else(|| SqlValue::Real(n.as_f64().unwrap_or(0.0)))),
            _ => Err(bad("is not a cursor of this server")),
        })
        .collect()
}

/// The rows past `values` in the order `sort`, as conditions to be read one
/// after the other, each an index range: first the rows equal to the cursor
/// on every term but the last and past it on that one, then equal on one term
/// fewer, and so on, up to the rows past it on the first term (and, where the
/// order puts NULLs there, the rows with none). SQLite sorts NULL first in
/// ascending order and last in descending order.
pub fn after_segments(
    dialect: &Dialect,
    sort: &[(FieldSql, bool)],
    values: &[SqlValue],
) -> Vec<Segment> {
    let Some(((term, ascending), rest)) = sort.split_first() else {
        return Vec::new();
    };
    let value = &values[0];
    let expr = term.expression(dialect);
    let param = term.param(dialect, value);
    let mut out = Vec::new();
    if !rest.is_empty() {
        let (equal, equal_params) = match value {
            SqlValue::Null => (format!("{expr} IS NULL"), vec![]),
            v => (format!("{expr} = {param}"), vec![v.clone()]),
        };
        for inner in after_segments(dialect, rest, &values[1..]) {
            let mut params = equal_params.clone();
            params.extend(inner.params);
            out.push(Segment {
                condition: format!("{equal} AND {}", inner.condition),
                params,
                fixed: inner.fixed + 1,
            });
        }
    }
    let past = |condition: String, params: Vec<SqlValue>| Segment {
        condition,
        params,
        fixed: 0,
    };
    match (ascending, value) {
        (true, SqlValue::Null) => out.push(past(format!("{expr} IS NOT NULL"), vec![])),
        (true, v) => out.push(past(format!("{expr} > {param}"), vec![v.clone()])),
        (false, SqlValue::Null) => {}
        (false, v) => {
            out.push(past(format!("{expr} < {param}"), vec![v.clone()]));
            if term.nullable() {
                out.push(Segment {
                    condition: format!("{expr} IS NULL"),
                    params: vec![],
                    fixed: 1,
                });
            }
        }
    }
    out
}

/// One range of the rows past a cursor: its condition and parameters, and
/// how many leading sort terms it holds equal (they are left out of its
/// ORDER BY: SQLite sees a column held equal as ordered, not an expression).
pub struct Segment {
    pub condition: String,
    pub params: Vec<SqlValue>,
    pub fixed: usize,
}

impl ListQuery {
    /// ` ORDER BY ...` of the query's sort.
    pub fn order_by(&self, dialect: &Dialect) -> String {
        self.order_by_from(dialect, 0)
    }

    /// ` ORDER BY ...` of the sort terms after the first `fixed`, NULLs
    /// first ascending and last descending ([`Dialect::order`]).
    fn order_by_from(&self, dialect: &Dialect, fixed: usize) -> String {
        let terms: Vec<String> = self.sort[fixed..]
            .iter()
            .map(|(sql, ascending)| {
                dialect.order(&sql.expression(dialect), *ascending, sql.nullable())
            })
            .collect();
        format!(" ORDER BY {}", terms.join(", "))
    }

    /// ` AND expr = ?` for each filter, with its parameters.
    pub fn filter_sql(&self, dialect: &Dialect) -> (String, Vec<SqlValue>) {
        let mut sql = String::new();
        let mut params = Vec::new();
        for (field, value) in &self.filters {
            sql.push_str(&format!(
                " AND {} = {}",
                field.expression(dialect),
                field.param(dialect, value)
            ));
            params.push(value.clone());
        }
        (sql, params)
    }
}

/// How many rows a list matches: exact, or [`COUNT_BOUND`] and more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Total {
    pub count: i64,
    pub capped: bool,
}

/// One page of a list: its rows, the total, and the cursor of the next page
/// when there is one.
pub struct Page<T> {
    pub total: Total,
    pub rows: Vec<T>,
    pub next: Option<String>,
}

impl<T> Page<T> {
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            total: self.total,
            rows: self.rows.into_iter().map(f).collect(),
            next: self.next,
        }
    }

    pub fn try_map<U, E>(self, f: impl FnMut(T) -> Result<U, E>) -> Result<Page<U>, E> {
        Ok(Page {
            total: self.total,
            rows: self.rows.into_iter().map(f).collect::<Result<_, _>>()?,
            next: self.next,
        })
    }
}

impl<T: serde::Serialize> Page<T> {
    /// The page as a JSON array with its headers: `X-Total-Count` (and
    /// `X-Total-Count-Capped: true` at the bound), and for a page with rows
    /// after it `Link: <PATH?...&after=CURSOR>; rel="next"` (RFC 8288; the
    /// request's parameters but `offset`, `after` and `api_key`, relative to
    /// the server) and `X-Next-Cursor`.
    pub fn respond(&self, path: &str, carry: &[(String, String)]) -> Response {
        let mut response =
            Response::json(200, &self.rows).header("x-total-count", &self.total.count.to_string());
        if self.total.capped {
            response = response.header("x-total-count-capped", "true");
        }
        if let Some(cursor) = &self.next {
            let mut link = format!("<{path}?");
            for (name, value) in carry {
                link.push_str(&crate::http::urlencoded::encode_component(name));
                link.push('=');
                link.push_str(&crate::http::urlencoded::encode_component(value));
                link.push('&');
            }
            link.push_str(&format!("after={cursor}>; rel=\"next\""));
            response = response
                .header("link", &link)
                .header("x-next-cursor", cursor);
        }
        response
    }
}

/// The SQL a list runs: the bounded count, and the page's statements in
/// the order they are read (one without a cursor; the ranges past it with
/// one), each with its own parameters after the list's, then `LIMIT ?
/// OFFSET ?`. Built in one place for [`fetch_page`] and for the tests that
/// check each list's plan.
pub struct Statements {
    pub count: String,
    pub pages: Vec<(String, Vec<SqlValue>)>,
    /// The list's own parameters and its filters', for every statement.
    pub params: Vec<SqlValue>,
}

/// See [`fetch_page`] for the arguments; `dialect` is the connection's.
pub fn statements(
    dialect: &Dialect,
    columns: &str,
    from: &str,
    condition: &str,
    params: Vec<SqlValue>,
    query: &ListQuery,
) -> Statements {
    let (filter, filter_params) = query.filter_sql(dialect);
    let condition = format!("{condition}{filter}");
    let mut params = params;
    params.extend(filter_params);
    let count = format!(
        "SELECT count(*) FROM (SELECT 1 {from} WHERE {condition} LIMIT {}){}",
        COUNT_BOUND + 1,
        dialect.subquery_alias("matching")
    );
    let keys: Vec<String> = query
        .sort
        .iter()
        .map(|(sql, _)| sql.expression(dialect))
        .collect();
    let segments = match &query.after {
        Some(values) => after_segments(dialect, &query.sort, values),
        None => vec![Segment {
            condition: String::from("1 = 1"),
            params: Vec::new(),
            fixed: 0,
        }],
    };
    let pages = segments
        .into_iter()
        .map(|segment| {
            (
                format!(
                    "SELECT {columns}, {} {from} WHERE {condition} AND {}{} LIMIT ? OFFSET ?",
                    keys.join(", "),
                    segment.condition,
                    query.order_by_from(dialect, segment.fixed)
                ),
                segment.params,
            )
        })
        .collect();
    Statements {
        count,
        pages,
        params,
    }
}

/// Runs a list: the total (exact up to [`COUNT_BOUND`]) and the page the
/// query asks for, under the same conditions. `columns` are what `map`
/// reads (from index 0); `from` is the FROM clause; `condition` and `params`
/// are the resource's own conditions. The sort values of the rows are read
/// as extra columns after `columns`, for the next page's cursor.
pub fn fetch_page<T>(
    conn: &crate::db::Conn,
    columns: &str,
    from: &str,
    condition: &str,
    params: Vec<SqlValue>,
    query: &ListQuery,
    mut map: impl FnMut(&crate::db::Row<'_>) -> crate::db::Result<T>,
) -> crate::db::Result<Page<T>> {
    let dialect = conn.dialect();
    let statements = statements(dialect, columns, from, condition, params, query);
    let params = statements.params;
    let keys = query.sort.len();
    // One row more than the page: whether a next page exists.
    let wanted = query.limit as usize + 1;
    let mut rows: Vec<(T, Vec<SqlValue>)> = Vec::new();
    for (sql, segment_params) in statements.pages {
        if rows.len() >= wanted {
            break;
        }
        let mut all = params.clone();
        all.extend(segment_params);
        all.push(SqlValue::Integer((wanted - rows.len()) as i64));
        all.push(SqlValue::Integer(query.offset));
        observed::note(&sql, &all);
        let mut statement = conn.prepare_cached(&sql)?;
        let first_key = statement.column_count()? - keys;
        let mut found = statement.query(crate::db::params_from_iter(all.iter()))?;
        while let Some(row) = found.next()? {
            let values = query
                .sort
                .iter()
                .enumerate()
                .map(|(i, (term, _))| {
                    let value = row.get::<_, SqlValue>(first_key + i)?;
                    Ok(match term {
                        FieldSql::BodyPath(..) => dialect.body_value(value),
                        FieldSql::Column(_) => value,
                    })
                })
                .collect::<crate::db::Result<Vec<_>>>()?;
            rows.push((map(&row)?, values));
        }
    }
    // A first page with room to spare holds every match: its count is the
    // total. Otherwise they are counted, up to the bound.
    let total = if let Some(count) = query.kept_total {
        Total {
            count,
            capped: false,
        }
    } else {
        let count =
            if query.after.is_none() && query.offset == 0 && rows.len() <= query.limit as usize {
                rows.len() as i64
            } else {
                observed::note(&statements.count, &params);
                conn.prepare_cached(&statements.count)?
                    .query_row(crate::db::params_from_iter(params.iter()), |row| row.get(0))?
            };
        Total {
            count: count.min(COUNT_BOUND),
            capped: count > COUNT_BOUND,
        }
    };
    let next = if rows.len() > query.limit as usize {
        rows.truncate(query.limit as usize);
        rows.last()
            .map(|(_, values)| encode_cursor(&query.signature, values))
    } else {
        None
    };
    Ok(Page {
        total,
        rows: rows.into_iter().map(|(row, _)| row).collect(),
        next,
    })
}

/// The statements [`fetch_page`] runs, as the tests of the lists' plans see
/// them on either engine (`src/documents/plans.rs` on SQLite,
/// `tests/it/pg/plans.rs` on PostgreSQL): the lists' own SQL, not a copy.
/// Outside [`statements`] nothing is kept.
#[doc(hidden)]
pub mod observed {
    use super::SqlValue;
    use std::cell::RefCell;

    /// A statement and its parameters.
    pub type Ran = (String, Vec<SqlValue>);

    thread_local! {
        static RAN: RefCell<Option<Vec<Ran>>> = const { RefCell::new(None) };
    }

    /// Runs `list` and answers every statement `fetch_page` ran on this
    /// thread meanwhile, with its parameters, in order.
    pub fn statements(list: impl FnOnce()) -> Vec<Ran> {
        RAN.with_borrow_mut(|ran| *ran = Some(Vec::new()));
        list();
        RAN.with_borrow_mut(Option::take).unwrap_or_default()
    }

    pub(super) fn note(sql: &str, params: &[SqlValue]) {
        RAN.with_borrow_mut(|ran| {
            if let Some(ran) = ran {
                ran.push((sql.to_string(), params.to_vec()));
            }
        });
    }
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
pub(crate) mod tests {
    use super::*;
    use crate::db::dialect::SQLITE;

    /// Runs `list` and answers the plan of every statement it ran through
    /// `fetch_page`: `(sql, plan lines)`.
    pub(crate) fn plans_of(
        conn: &crate::db::Conn,
        list: impl FnOnce(),
    ) -> Vec<(String, Vec<String>)> {
        observed::statements(list)
            .into_iter()
            .map(|(sql, params)| {
                let plan = conn
                    .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                    .unwrap()
                    .query_map(crate::db::params_from_iter(params), |row| {
                        row.get::<_, String>(3)
                    })
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                (sql, plan)
            })
            .collect()
    }

    const FIELDS: ColumnFields = ColumnFields(&[("description", "description", FieldType::Text)]);

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn defaults_of_each_generation() {
        let q = parse(&[], Generation::V2, &FIELDS, &[]).unwrap();
        assert_eq!(q.limit, 25);
        assert_eq!(q.offset, 0);
        assert_eq!(
            q.sort,
            vec![
                (FieldSql::Column("created_at"), false),
                (FieldSql::Column("id"), true)
            ]
        );
        let older = parse(&[], Generation::Older, &FIELDS, &[]).unwrap();
        assert_eq!(older.limit, OLDER_DEFAULT_LIMIT);
        assert_eq!(older.order_by(&SQLITE), " ORDER BY created_at ASC, id ASC");
    }

    #[test]
    fn rejects_bad_limits_sorts_filters_and_cursors() {
        for bad in [
            ("limit", "1001"),
            ("limit", "-1"),
            ("offset", "x"),
            ("sort", "nope:asc"),
            ("sort", "description:sideways"),
            ("colour", "red"),
            ("after", "not a cursor"),
            ("after", "e30"), // {}
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
        // A cursor of one order is refused by another, and beside an offset.
        let q = parse(&[], Generation::Older, &FIELDS, &[]).unwrap();
        let cursor = encode_cursor(
            &q.signature,
            &[SqlValue::Integer(1), SqlValue::Text("a".into())],
        );
        assert!(
            parse(
                &pairs(&[("after", &cursor)]),
                Generation::Older,
                &FIELDS,
                &[]
            )
            .is_ok()
        );
        let err = parse(
            &pairs(&[("after", &cursor), ("sort", "description")]),
            Generation::Older,
            &FIELDS,
            &[],
        )
        .unwrap_err();
        assert!(err.to_string().contains("another sort order"), "{err}");
        assert!(
            parse(
                &pairs(&[("after", &cursor), ("offset", "5")]),
                Generation::Older,
                &FIELDS,
                &[]
            )
            .is_err()
        );
    }

    #[test]
    fn sort_terms_end_in_creation_order_and_id_in_the_last_term_s_direction() {
        let order = |sort: &str| {
            parse(&pairs(&[("sort", sort)]), Generation::Older, &FIELDS, &[])
                .unwrap()
                .order_by(&SQLITE)
        };
        assert_eq!(
            order("description:desc"),
            " ORDER BY description DESC, created_at DESC, id DESC"
        );
        assert_eq!(
            order("description:desc,created_at"),
            " ORDER BY description DESC, created_at ASC, id ASC"
        );
        assert_eq!(order("id:desc"), " ORDER BY id DESC");
        let body = FieldSql::BodyPath("$.cargo.quantity".into(), FieldType::Number);
        assert_eq!(
            body.expression(&SQLITE),
            "json_extract(body, '$.cargo.quantity')"
        );
    }

    /// The statements of a list filtered and sorted on body paths, past a
    /// cursor: on SQLite, the texts the listing wrote before the dialect
    /// (the plan tests explain these); on PostgreSQL, the same shapes with
    /// its body paths, jsonb parameters, NULL order and the count's alias.
    #[test]
    fn statement_texts_of_each_dialect() {
        let eta = FieldSql::BodyPath("$.eta".into(), FieldType::Text);
        let query = ListQuery {
            limit: 25,
            offset: 0,
            sort: vec![
                (eta.clone(), false),
                (FieldSql::Column("created_at"), false),
                (FieldSql::Column("id"), false),
            ],
            filters: vec![(
                FieldSql::BodyPath("$.status".into(), FieldType::Text),
                SqlValue::Text("active".into()),
            )],
            after: Some(vec![
                SqlValue::Text("2026".into()),
                SqlValue::Integer(5),
                SqlValue::Text("j".into()),
            ]),
            signature: String::new(),
            carry: Vec::new(),
            kept_total: None,
        };
        let texts = |dialect| {
            let statements = statements(
                dialect,
                "id",
                "FROM documents",
                "workspace_id = ? AND kind = 'job'",
                vec![SqlValue::Text("w".into())],
                &query,
            );
            let pages: Vec<String> = statements.pages.into_iter().map(|(sql, _)| sql).collect();
            (statements.count, pages)
        };
        let page = |key: &str, status: &str, segment: &str, order: &str| {
            format!(
                "SELECT id, {key}, created_at, id FROM documents WHERE workspace_id = ? AND \
                 kind = 'job' AND {status} AND {segment} ORDER BY {order} LIMIT ? OFFSET ?"
            )
        };

        let (count, pages) = texts(&SQLITE);
        let e = "json_extract(body, '$.eta')";
        let st = "json_extract(body, '$.status') = ?";
        assert_eq!(
            count,
            format!(
                "SELECT count(*) FROM (SELECT 1 FROM documents WHERE workspace_id = ? AND \
                 kind = 'job' AND {st} LIMIT 1001)"
            )
        );
        assert_eq!(
            pages,
            [
                page(
                    e,
                    st,
                    &format!("{e} = ? AND created_at = ? AND id < ?"),
                    "id DESC"
                ),
                page(
                    e,
                    st,
                    &format!("{e} = ? AND created_at < ?"),
                    "created_at DESC, id DESC"
                ),
                page(
                    e,
                    st,
                    &format!("{e} < ?"),
                    &format!("{e} DESC, created_at DESC, id DESC")
                ),
                page(e, st, &format!("{e} IS NULL"), "created_at DESC, id DESC"),
            ]
        );

        let (count, pages) = texts(&crate::db::dialect::POSTGRES);
        let e = "NULLIF((body::jsonb) #> '{eta}', 'null'::jsonb)";
        let st = "NULLIF((body::jsonb) #> '{status}', 'null'::jsonb) = to_jsonb(?::text)";
        let p = "to_jsonb(?::text)";
        assert_eq!(
            count,
            format!(
                "SELECT count(*) FROM (SELECT 1 FROM documents WHERE workspace_id = ? AND \
                 kind = 'job' AND {st} LIMIT 1001) AS matching"
            )
        );
        assert_eq!(
            pages,
            [
                page(
                    e,
                    st,
                    &format!("{e} = {p} AND created_at = ? AND id < ?"),
                    "id DESC"
                ),
                page(
                    e,
                    st,
                    &format!("{e} = {p} AND created_at < ?"),
                    "created_at DESC, id DESC"
                ),
                page(
                    e,
                    st,
                    &format!("{e} < {p}"),
                    &format!("{e} DESC NULLS LAST, created_at DESC, id DESC")
                ),
                page(e, st, &format!("{e} IS NULL"), "created_at DESC, id DESC"),
            ]
        );
    }

    /// Pages through a table by cursor in many orders, NULLs and ties
    /// included, and finds every row exactly once, in the order of one
    /// ORDER BY over the whole table.
    #[test]
    fn cursor_pages_give_every_row_once_in_order() {
        let conn = crate::db::Conn::empty_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, \
             updated_at INTEGER NOT NULL, a TEXT, b INTEGER);",
        )
        .unwrap();
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as i64
        };
        for i in 0..157 {
            let a = match next() % 4 {
                0 => None,
                n => Some(format!("v{n}")),
            };
            let b = (next() % 3 != 0).then(|| next() % 5);
            conn.execute(
                "INSERT INTO t VALUES (?1, ?2, ?2, ?3, ?4)",
                crate::db::params![format!("id{:03}", (i * 37) % 157), next() % 20, a, b],
            )
            .unwrap();
        }
        const T: ColumnFields =
            ColumnFields(&[("a", "a", FieldType::Text), ("b", "b", FieldType::Number)]);
        for sort in [
            None,
            Some("a"),
            Some("a:desc"),
            Some("b:desc,a"),
            Some("a,b:desc"),
            Some("created_at:desc,id:asc"),
            Some("b"),
        ] {
            for limit in ["1", "7", "50"] {
                let mut params = vec![("limit", limit)];
                if let Some(sort) = sort {
                    params.push(("sort", sort));
                }
                let first = parse(&pairs(&params), Generation::Older, &T, &[]).unwrap();
                let all: Vec<String> = conn
                    .prepare(&format!("SELECT id FROM t{}", first.order_by(&SQLITE)))
                    .unwrap()
                    .query_map([], |row| row.get(0))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                let mut seen = Vec::new();
                let mut cursor: Option<String> = None;
                loop {
                    let mut with = params.clone();
                    if let Some(c) = &cursor {
                        with.push(("after", c));
                    }
                    let q = parse(&pairs(&with), Generation::Older, &T, &[]).unwrap();
                    let page = fetch_page(&conn, "id", "FROM t", "1 = 1", vec![], &q, |row| {
                        row.get::<_, String>(0)
                    })
                    .unwrap();
                    assert_eq!(page.total.count, 157);
                    seen.extend(page.rows);
                    match page.next {
                        Some(c) => cursor = Some(c),
                        None => break,
                    }
                }
                assert_eq!(seen, all, "sort {sort:?}, limit {limit}");
            }
        }
    }
}
