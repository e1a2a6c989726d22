//! SQL for the location catalogs.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::LazyLock;

use crate::db::ToSql;
use crate::db::{Conn, OptionalExtension, params};

use super::Catalog;
use super::model::{
    FieldsRef, Location, LocationFields, LocationRef, STATUS_ACTIVE, STATUS_INACTIVE, SearchQuery,
};
use crate::clock::{self, MS_TEXT_LEN};
use crate::error::{ApiError, ApiResult};

/// The write-shape fields' columns, in [`FieldsRef`] order: bit `i` of a
/// change mask ([`FieldsRef::differences`]) stands for `WRITE_COLUMNS[i]`.
const WRITE_COLUMNS: [&str; 14] = [
    "name",
    "country_code",
    "geo_region_code",
    "latitude_deg",
    "latitude_min",
    "latitude_sec",
    "latitude_ns",
    "longitude_deg",
    "longitude_min",
    "longitude_sec",
    "longitude_we",
    "status_code",
    "restrictions",
    "general_comments",
];

/// Every column a record is read with: the code, the write-shape fields and
/// the four the service sets.
static COLUMNS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "client_code, {}, created_at, creator, modified_at, modifier",
        WRITE_COLUMNS.join(", ")
    )
});

/// Where [`COLUMNS`] puts each part of a record: the code, the write-shape
/// fields from [`FIELDS_AT`] on, then the four the service sets.
const FIELDS_AT: usize = 1;
const CREATED_AT: usize = FIELDS_AT + WRITE_COLUMNS.len();
const CREATOR: usize = CREATED_AT + 1;
const MODIFIED_AT: usize = CREATED_AT + 2;
const MODIFIER: usize = CREATED_AT + 3;

/// One whole record by its key.
static SELECT_ONE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM locations WHERE catalog = ?1 AND client_code = ?2",
        *COLUMNS
    )
});

/// The write-shape fields from column `first` on, borrowed from the row (no
/// per-field allocation).
fn fields_ref_at<'r>(
    row: &'r crate::db::Row<'_>,
    first: usize,
) -> crate::db::Result<FieldsRef<'r>> {
    let text = |i: usize| -> crate::db::Result<Option<&'r str>> {
        row.get_ref(i)?
            .as_str_or_null()
            .map_err(|e| crate::db::Error::conversion(i, e))
    };
    let required = |i: usize| -> crate::db::Result<&'r str> {
        text(i)?.ok_or_else(|| crate::db::Error::conversion(i, "a required text is NULL"))
    };
    Ok(FieldsRef {
        name: required(first)?,
        country_code: text(first + 1)?,
        geo_region_code: text(first + 2)?,
        latitude_deg: row.get(first + 3)?,
        latitude_min: row.get(first + 4)?,
        latitude_sec: row.get(first + 5)?,
        latitude_ns: text(first + 6)?,
        longitude_deg: row.get(first + 7)?,
        longitude_min: row.get(first + 8)?,
        longitude_sec: row.get(first + 9)?,
        longitude_we: text(first + 10)?,
        status_code: required(first + 11)?,
        restrictions: text(first + 12)?,
        general_comments: text(first + 13)?,
    })
}

/// The fields as SQL values, in [`WRITE_COLUMNS`] order.
fn sql_values<'f>(fields: &'f FieldsRef<'_>) -> [&'f dyn ToSql; 14] {
    [
        &fields.name,
        &fields.country_code,
        &fields.geo_region_code,
        &fields.latitude_deg,
        &fields.latitude_min,
        &fields.latitude_sec,
        &fields.latitude_ns,
        &fields.longitude_deg,
        &fields.longitude_min,
        &fields.longitude_sec,
        &fields.longitude_we,
        &fields.status_code,
        &fields.restrictions,
        &fields.general_comments,
    ]
}

fn from_row(row: &crate::db::Row<'_>) -> crate::db::Result<Location> {
    Ok(Location {
        client_code: row.get(0)?,
        fields: fields_ref_at(row, FIELDS_AT)?.into(),
        date_created: clock::format_ms(row.get(CREATED_AT)?),
        creator: row.get(CREATOR)?,
        date_modified: clock::format_ms(row.get(MODIFIED_AT)?),
        modifier: row.get(MODIFIER)?,
    })
}

pub fn get(conn: &Conn, catalog: Catalog, code: &str) -> crate::db::Result<Option<Location>> {
    conn.prepare_cached(&SELECT_ONE)?
        .query_row(params![catalog.key(), code], from_row)
        .optional()
}

/// A record row of `table`: `locations`, or the change log's copy of a
/// deleted row (see `changes::capture`).
pub fn get_from(
    conn: &Conn,
    table: &str,
    catalog: &str,
    code: &str,
) -> crate::db::Result<Option<Location>> {
    conn.prepare_cached(&format!(
        "SELECT {} FROM {table} WHERE catalog = ?1 AND client_code = ?2",
        *COLUMNS
    ))?
    .query_row(params![catalog, code], from_row)
    .optional()
}

/// What a PUT did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upserted {
    Created,
    Updated,
    Unchanged,
}

/// What [`put`] did: known at once, or, when its one statement went ahead
/// (PostgreSQL's writer), once its answer has been read, which the write's
/// batch does before it commits: ask [`Put::outcome`] after the write.
pub enum Put {
    Now(Upserted),
    Later(crate::db::Later<Returned>),
}

/// What the one-statement upsert returns of a row it wrote: whether it
/// inserted it, its creation time and creator. No row: nothing changed.
type Returned = (bool, i64, String);

impl Put {
    pub fn outcome(&self) -> ApiResult<Upserted> {
        match self {
            Put::Now(done) => Ok(*done),
            Put::Later(later) => match later.read(|rows| match rows {
                Ok(rows) => Ok(match rows.first() {
                    None => Upserted::Unchanged,
                    Some((true, _, _)) => Upserted::Created,
                    Some((false, _, _)) => Upserted::Updated,
                }),
                Err(err) => Err(ApiError::internal(format!("a port's upsert: {err}"))),
            }) {
                Some(outcome) => outcome,
                None => Err(ApiError::internal("a port's upsert was never answered")),
            },
        }
    }
}

/// A record as the one-statement upsert leaves it, for the change log: its
/// creation time and creator come with the statement's answer
/// (`db::offered::offer_later`).
pub struct LaterLocation {
    pub catalog: Catalog,
    code: String,
    fields: LocationFields,
    now: i64,
    username: String,
    returned: crate::db::Later<Returned>,
}

impl LaterLocation {
    /// The record, once the statement's answer has been read.
    pub fn location(&self) -> ApiResult<Location> {
        let created = self.returned.read(|rows| match rows {
            Ok(rows) => rows.first().map(|(_, at, by)| (*at, by.clone())),
            Err(_) => None,
        });
        let Some(Some((created_at, creator))) = created else {
            return Err(ApiError::internal("a port's upsert has no row to show"));
        };
        Ok(Location {
            client_code: self.code.clone(),
            fields: self.fields.clone(),
            date_created: clock::format_ms(created_at),
            creator,
            date_modified: clock::format_ms(self.now),
            modifier: self.username.clone(),
        })
    }
}

/// The one statement that creates or replaces a record, where the writer
/// sends it ahead (`Dialect::upsert_inserted`, `inserted`): a replacement
/// equal to what is stored updates nothing and returns no row.
fn upsert_text(inserted: &str) -> String {
    let fields: Vec<&str> = WRITE_COLUMNS.to_vec();
    let set: Vec<String> = std::iter::once("name_folded")
        .chain(fields.iter().copied())
        .chain(["modified_at", "modifier"])
        .map(|c| format!("{c} = excluded.{c}"))
        .collect();
    let stored: Vec<String> = fields.iter().map(|c| format!("locations.{c}")).collect();
    let given: Vec<String> = fields.iter().map(|c| format!("excluded.{c}")).collect();
    format!(
        "{} ON CONFLICT (catalog, client_code) DO UPDATE SET {} \
         WHERE ({}) IS DISTINCT FROM ({}) RETURNING {inserted}, created_at, creator",
        INSERT,
        set.join(", "),
        stored.join(", "),
        given.join(", ")
    )
}

/// A PUT's write: [`upsert`], or on PostgreSQL one statement, which the
/// writer sends ahead, so that the write waits for nothing (its outcome and
/// what the change log shows of the record are read from the statement's
/// answer; anywhere else it runs at once).
pub fn put(
    conn: &Conn,
    catalog: Catalog,
    code: &str,
    fields: &LocationFields,
    username: &str,
    now: i64,
) -> ApiResult<Put> {
    let Some(inserted) = conn.dialect().upsert_inserted() else {
        return Ok(Put::Now(upsert(
            conn, catalog, code, fields, username, now,
        )?));
    };
    // Made once: the one engine that sends it ahead has one way to tell.
    static SQL: std::sync::OnceLock<(&str, String)> = std::sync::OnceLock::new();
    let (made_for, sql) = SQL.get_or_init(|| (inserted, upsert_text(inserted)));
    debug_assert_eq!(*made_for, inserted);
    let returned = with_insert_params(catalog, code, fields, username, now, |values| {
        conn.prepare_cached(sql)?
            .query_ahead(values, |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
    })?;
    crate::db::offered::wrote(conn, TABLE, &[catalog.key(), code]);
    crate::db::offered::offer_later(
        conn,
        TABLE,
        &[catalog.key(), code],
        LaterLocation {
            catalog,
            code: code.to_string(),
            fields: fields.clone(),
            now,
            username: username.to_string(),
            returned: returned.clone(),
        },
    );
    Ok(Put::Later(returned))
}

/// Creates or replaces a record. A replacement equal to what is stored changes
/// nothing, so `dateModified` does not move.
pub fn upsert(
    conn: &Conn,
    catalog: Catalog,
    code: &str,
    fields: &LocationFields,
    username: &str,
    now: i64,
) -> crate::db::Result<Upserted> {
    let new = FieldsRef::from(fields);
    // Compared while the row is current; the statement is done before the
    // UPDATE. The whole row is read: what the change log shows of the record
    // is offered from it (`offer`).
    let changed = {
        let mut statement = conn.prepare_cached(&SELECT_ONE)?;
        let mut rows = statement.query(params![catalog.key(), code])?;
        match rows.next()? {
            Some(row) => match fields_ref_at(&row, FIELDS_AT)?.differences(&new) {
                0 => Some(None),
                changed => Some(Some((changed, row.get(CREATED_AT)?, row.get(CREATOR)?))),
            },
            None => None,
        }
    };
    match changed {
        None => {
            insert(conn, catalog, code, fields, username, now)?;
            offer(
                conn,
                catalog,
                code,
                fields,
                (now, username.to_string()),
                now,
                username,
            );
            Ok(Upserted::Created)
        }
        Some(None) => Ok(Upserted::Unchanged),
        Some(Some((changed, created_at, creator))) => {
            update_changed(conn, catalog, code, changed, &new, username, now)?;
            offer(
                conn,
                catalog,
                code,
                fields,
                (created_at, creator),
                now,
                username,
            );
            Ok(Upserted::Updated)
        }
    }
}

/// Offers the record just written, as it reads, to the change log
/// (`db::offered`): `created` is when and by whom it was created.
fn offer(
    conn: &Conn,
    catalog: Catalog,
    code: &str,
    fields: &LocationFields,
    created: (i64, String),
    now: i64,
    username: &str,
) {
    crate::db::offered::offer(conn, TABLE, &[catalog.key(), code], [], || {
        (
            catalog,
            Location {
                client_code: code.to_string(),
                fields: fields.clone(),
                date_created: clock::format_ms(created.0),
                creator: created.1,
                date_modified: clock::format_ms(now),
                modifier: username.to_string(),
            },
        )
    });
}

/// The records' table.
pub const TABLE: &str = "locations";

/// A record's `INSERT`, its parameters those of [`with_insert_params`].
const INSERT: &str = "INSERT INTO locations (catalog, client_code, name, name_folded, country_code, \
     geo_region_code, latitude_deg, latitude_min, latitude_sec, latitude_ns, longitude_deg, \
     longitude_min, longitude_sec, longitude_we, status_code, restrictions, general_comments, \
     created_at, creator, modified_at, modifier) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?18, ?19)";

/// Calls `f` with [`INSERT`]'s parameters for a record.
fn with_insert_params<R>(
    catalog: Catalog,
    code: &str,
    fields: &LocationFields,
    username: &str,
    now: i64,
    f: impl FnOnce(&[&dyn ToSql]) -> R,
) -> R {
    let key = catalog.key();
    let folded = crate::validate::fold(&fields.name);
    let new = FieldsRef::from(fields);
    let values = sql_values(&new);
    // In the INSERT's column order: the name's folded form follows it.
    let mut all: Vec<&dyn ToSql> = Vec::with_capacity(19);
    all.extend([&key as &dyn ToSql, &code, values[0], &folded]);
    all.extend_from_slice(&values[1..]);
    all.extend([&now as &dyn ToSql, &username]);
    f(&all)
}

fn insert(
    conn: &Conn,
    catalog: Catalog,
    code: &str,
    fields: &LocationFields,
    username: &str,
    now: i64,
) -> crate::db::Result<()> {
    with_insert_params(catalog, code, fields, username, now, |values| {
        conn.prepare_cached(INSERT)?.execute(values)
    })?;
    crate::db::offered::wrote(conn, TABLE, &[catalog.key(), code]);
    Ok(())
}

/// Sets only the columns whose value changed (plus who and when): SQLite then
/// rewrites only the indexes over those columns, so a typical edit (a comment,
/// a restriction) dirties two or three pages instead of five or six, and the
/// WAL, the fsync behind every commit, carries that much less.
fn update_changed(
    conn: &Conn,
    catalog: Catalog,
    code: &str,
    changed: u16,
    new: &FieldsRef<'_>,
    username: &str,
    now: i64,
) -> crate::db::Result<()> {
    let key = catalog.key();
    let folded = crate::validate::fold(new.name);
    // In the order of `update_sql`'s placeholders: the key, each changed
    // column, the folded name with the name, then who and when.
    let mut values: Vec<&dyn ToSql> = Vec::with_capacity(19);
    values.extend([&key as &dyn ToSql, &code]);
    for (bit, value) in sql_values(new).into_iter().enumerate() {
        if changed & (1 << bit) != 0 {
            values.push(value);
        }
    }
    if changed & NAME_BIT != 0 {
        values.push(&folded);
    }
    values.extend([&now as &dyn ToSql, &username]);
    // Its count is not needed (the row was just read in this transaction):
    // on PostgreSQL it goes ahead with the capture's notes.
    conn.prepare_cached(&update_sql(changed))?
        .execute_ahead(values.as_slice())?;
    crate::db::offered::wrote(conn, TABLE, &[key, code]);
    Ok(())
}

/// Bit of the `name` column in a change mask (`name_folded` follows it).
const NAME_BIT: u16 = 1;

/// The `UPDATE` for one set of changed columns, built once per set: a PUT then
/// costs no SQL text of its own.
fn update_sql(changed: u16) -> Rc<str> {
    thread_local! {
        static TEXT: RefCell<HashMap<u16, Rc<str>>> = RefCell::new(HashMap::new());
    }
    TEXT.with(|text| {
        text.borrow_mut()
            .entry(changed)
            .or_insert_with(|| {
                let mut columns: Vec<&str> = WRITE_COLUMNS
                    .iter()
                    .enumerate()
                    .filter(|(bit, _)| changed & (1 << bit) != 0)
                    .map(|(_, column)| *column)
                    .collect();
                if changed & NAME_BIT != 0 {
                    columns.push("name_folded");
                }
                columns.extend(["modified_at", "modifier"]);
                // ?1 and ?2 are the key; each column takes the next number.
                let assignments: Vec<String> = columns
                    .iter()
                    .enumerate()
                    .map(|(i, column)| format!("{column} = ?{}", i + 3))
                    .collect();
                format!(
                    "UPDATE locations SET {} WHERE catalog = ?1 AND client_code = ?2",
                    assignments.join(", ")
                )
                .into()
            })
            .clone()
    })
}

/// DELETE: an active record becomes inactive; an inactive one is removed.
/// Returns the resulting status (`INACTIVE` or `DELETED`), or `None` if unknown.
pub fn delete_or_deactivate(
    conn: &Conn,
    catalog: Catalog,
    code: &str,
    username: &str,
    now: i64,
) -> crate::db::Result<Option<&'static str>> {
    let status: Option<String> = conn
        .prepare_cached(
            "SELECT status_code FROM locations WHERE catalog = ?1 AND client_code = ?2",
        )?
        .query_row(params![catalog.key(), code], |row| row.get(0))
        .optional()?;
    match status.as_deref() {
        None => Ok(None),
        Some(STATUS_ACTIVE) => {
            conn.prepare_cached(
                "UPDATE locations SET status_code = ?3, modified_at = ?4, modifier = ?5 \
                 WHERE catalog = ?1 AND client_code = ?2",
            )?
            .execute(params![catalog.key(), code, STATUS_INACTIVE, now, username])?;
            Ok(Some(STATUS_INACTIVE))
        }
        Some(_) => {
            conn.prepare_cached("DELETE FROM locations WHERE catalog = ?1 AND client_code = ?2")?
                .execute(params![catalog.key(), code])?;
            Ok(Some("DELETED"))
        }
    }
}

/// The number of all matches, and one page of them, ordered by client code,
/// rendered as a JSON array into `out` straight from the result rows.
pub fn search(
    conn: &Conn,
    catalog: Catalog,
    query: &SearchQuery,
    out: &mut Vec<u8>,
) -> ApiResult<i64> {
    let mut conditions = vec!["catalog = ?".to_string()];
    let mut values: Vec<Box<dyn ToSql>> = vec![Box::new(catalog.key())];
    if let Some(from) = query.modified_from_ms {
        conditions.push("modified_at >= ?".into());
        values.push(Box::new(from));
    }
    if let Some(to) = query.modified_to_ms {
        conditions.push("modified_at < ?".into());
        values.push(Box::new(to));
    }
    if let Some(codes) = &query.client_codes {
        conditions.push(format!(
            "client_code IN ({})",
            conn.dialect().in_json_list("?")
        ));
        values.push(Box::new(serde_json::to_string(codes).unwrap_or_default()));
    }
    if let Some(country) = &query.country_code {
        conditions.push("country_code = ?".into());
        values.push(Box::new(country.clone()));
    }
    if let Some(status) = &query.status_code {
        conditions.push("status_code = ?".into());
        values.push(Box::new(status.clone()));
    }
    if let Some(name) = &query.name_folded {
        conditions.push(conn.dialect().contains("name_folded", "?"));
        values.push(Box::new(name.clone()));
    }
    let filter = conditions.join(" AND ");
    let params: Vec<&dyn ToSql> = values.iter().map(|v| v.as_ref()).collect();
    let total: i64 = conn
        .prepare_cached(&format!("SELECT count(*) FROM locations WHERE {filter}"))?
        .query_row(params.as_slice(), |row| row.get(0))?;
    let mut page_params = params.clone();
    let (limit, offset) = (query.results_per_page, query.offset());
    page_params.push(&limit);
    page_params.push(&offset);
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {} FROM locations WHERE {filter} ORDER BY client_code LIMIT ? OFFSET ?",
        *COLUMNS
    ))?;
    let mut rows = statement.query(page_params.as_slice())?;
    out.reserve(limit.clamp(0, 1000) as usize * 480);
    out.push(b'[');
    let (mut created, mut modified) = ([0u8; MS_TEXT_LEN], [0u8; MS_TEXT_LEN]);
    let mut first = true;
    while let Some(row) = rows.next()? {
        if !first {
            out.push(b',');
        }
        first = false;
        let required = |i: usize| -> crate::db::Result<&str> {
            row.get_ref(i)?
                .as_str()
                .map_err(|e| crate::db::Error::conversion(i, e))
        };
        let record = LocationRef {
            client_code: required(0)?,
            fields: fields_ref_at(&row, FIELDS_AT)?,
            date_created: clock::format_ms_into(row.get(CREATED_AT)?, &mut created),
            creator: required(CREATOR)?,
            date_modified: clock::format_ms_into(row.get(MODIFIED_AT)?, &mut modified),
            modifier: required(MODIFIER)?,
        };
        serde_json::to_writer(&mut *out, &record).map_err(ApiError::internal)?;
    }
    out.push(b']');
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_sql_sets_the_changed_columns_then_the_folded_name_then_who_and_when() {
        let name_and_comments = NAME_BIT | 1 << 13;
        assert_eq!(
            &*update_sql(name_and_comments),
            "UPDATE locations SET name = ?3, general_comments = ?4, name_folded = ?5, \
             modified_at = ?6, modifier = ?7 WHERE catalog = ?1 AND client_code = ?2"
        );
        assert_eq!(
            &*update_sql(1 << 11),
            "UPDATE locations SET status_code = ?3, modified_at = ?4, modifier = ?5 \
             WHERE catalog = ?1 AND client_code = ?2"
        );
    }

    #[test]
    fn each_field_changed_alone_sets_its_own_bit_and_column() {
        let base = LocationFields {
            name: "Rotterdam".into(),
            country_code: Some("NL".into()),
            geo_region_code: None,
            latitude_deg: Some(51),
            latitude_min: Some(55),
            latitude_sec: None,
            latitude_ns: Some("N".into()),
            longitude_deg: Some(4),
            longitude_min: Some(29),
            longitude_sec: None,
            longitude_we: Some("E".into()),
            status_code: "ACTIVE".into(),
            restrictions: None,
            general_comments: None,
        };
        // Each field changed alone, in declaration order, with its column.
        type Edit = (&'static str, fn(&mut LocationFields));
        let edits: [Edit; 14] = [
            ("name", |f| f.name = "Rotterdam Europoort".into()),
            ("country_code", |f| f.country_code = None),
            ("geo_region_code", |f| f.geo_region_code = Some("ZH".into())),
            ("latitude_deg", |f| f.latitude_deg = Some(52)),
            ("latitude_min", |f| f.latitude_min = None),
            ("latitude_sec", |f| f.latitude_sec = Some(1.5)),
            ("latitude_ns", |f| f.latitude_ns = Some("S".into())),
            ("longitude_deg", |f| f.longitude_deg = Some(5)),
            ("longitude_min", |f| f.longitude_min = Some(30)),
            ("longitude_sec", |f| f.longitude_sec = Some(2.25)),
            ("longitude_we", |f| f.longitude_we = Some("W".into())),
            ("status_code", |f| f.status_code = "INACTIVE".into()),
            ("restrictions", |f| {
                f.restrictions = Some("draft 12 m".into())
            }),
            ("general_comments", |f| {
                f.general_comments = Some("pilot".into())
            }),
        ];
        let variants: Vec<(LocationFields, &str)> = edits
            .iter()
            .map(|(column, edit)| {
                let mut changed = base.clone();
                edit(&mut changed);
                (changed, *column)
            })
            .collect();
        let before = FieldsRef::from(&base);
        assert_eq!(before.differences(&FieldsRef::from(&base)), 0);
        for (bit, (changed, column)) in variants.iter().enumerate() {
            let mask = before.differences(&FieldsRef::from(changed));
            assert_eq!(mask, 1 << bit, "{column}");
            assert_eq!(WRITE_COLUMNS[bit], *column);
        }
    }
}
