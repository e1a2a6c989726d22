//! SQL for the location catalogs.

use rusqlite::types::{ToSql, Type};
use rusqlite::{Connection, OptionalExtension, params};

use super::Catalog;
use super::model::{
    FieldsRef, Location, LocationFields, LocationRef, STATUS_ACTIVE, STATUS_INACTIVE, SearchQuery,
};
use crate::clock::{self, MS_TEXT_LEN};
use crate::error::{ApiError, ApiResult};

const COLUMNS: &str = "client_code, name, country_code, geo_region_code, latitude_deg, \
    latitude_min, latitude_sec, latitude_ns, longitude_deg, longitude_min, longitude_sec, \
    longitude_we, status_code, restrictions, general_comments, created_at, creator, \
    modified_at, modifier";

/// The 14 write-shape fields, from column `first` on (in [`COLUMNS`] order).
fn fields_at(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<LocationFields> {
    Ok(LocationFields {
        name: row.get(first)?,
        country_code: row.get(first + 1)?,
        geo_region_code: row.get(first + 2)?,
        latitude_deg: row.get(first + 3)?,
        latitude_min: row.get(first + 4)?,
        latitude_sec: row.get(first + 5)?,
        latitude_ns: row.get(first + 6)?,
        longitude_deg: row.get(first + 7)?,
        longitude_min: row.get(first + 8)?,
        longitude_sec: row.get(first + 9)?,
        longitude_we: row.get(first + 10)?,
        status_code: row.get(first + 11)?,
        restrictions: row.get(first + 12)?,
        general_comments: row.get(first + 13)?,
    })
}

fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Location> {
    Ok(Location {
        client_code: row.get(0)?,
        fields: fields_at(row, 1)?,
        date_created: clock::format_ms(row.get(15)?),
        creator: row.get(16)?,
        date_modified: clock::format_ms(row.get(17)?),
        modifier: row.get(18)?,
    })
}

/// Only the write-shape fields of a record: what a PUT compares against.
fn get_fields(
    conn: &Connection,
    catalog: Catalog,
    code: &str,
) -> rusqlite::Result<Option<LocationFields>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM locations WHERE catalog = ?1 AND client_code = ?2"
    ))?
    .query_row(params![catalog.key(), code], |row| fields_at(row, 1))
    .optional()
}

pub fn get(conn: &Connection, catalog: Catalog, code: &str) -> rusqlite::Result<Option<Location>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM locations WHERE catalog = ?1 AND client_code = ?2"
    ))?
    .query_row(params![catalog.key(), code], from_row)
    .optional()
}

/// What a PUT did.
#[derive(Debug, PartialEq, Eq)]
pub enum Upserted {
    Created,
    Updated,
    Unchanged,
}

/// Creates or replaces a record. A replacement equal to what is stored changes
/// nothing, so `dateModified` does not move.
pub fn upsert(
    conn: &Connection,
    catalog: Catalog,
    code: &str,
    fields: &LocationFields,
    username: &str,
    now: i64,
) -> rusqlite::Result<Upserted> {
    let Some(existing) = get_fields(conn, catalog, code)? else {
        insert(conn, catalog, code, fields, username, now)?;
        return Ok(Upserted::Created);
    };
    if &existing == fields {
        return Ok(Upserted::Unchanged);
    }
    update_changed(conn, catalog, code, &existing, fields, username, now)?;
    Ok(Upserted::Updated)
}

fn insert(
    conn: &Connection,
    catalog: Catalog,
    code: &str,
    fields: &LocationFields,
    username: &str,
    now: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO locations (catalog, client_code, name, name_folded, country_code, \
         geo_region_code, latitude_deg, latitude_min, latitude_sec, latitude_ns, longitude_deg, \
         longitude_min, longitude_sec, longitude_we, status_code, restrictions, general_comments, \
         created_at, creator, modified_at, modifier) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?18, ?19)",
    )?
    .execute(params![
        catalog.key(),
        code,
        fields.name,
        crate::validate::fold(&fields.name),
        fields.country_code,
        fields.geo_region_code,
        fields.latitude_deg,
        fields.latitude_min,
        fields.latitude_sec,
        fields.latitude_ns,
        fields.longitude_deg,
        fields.longitude_min,
        fields.longitude_sec,
        fields.longitude_we,
        fields.status_code,
        fields.restrictions,
        fields.general_comments,
        now,
        username,
    ])?;
    Ok(())
}

/// Sets only the columns whose value changed (plus who and when): SQLite then
/// rewrites only the indexes over those columns, so a typical edit (a comment,
/// a restriction) dirties two or three pages instead of five or six, and the
/// WAL, the fsync behind every commit, carries that much less.
fn update_changed(
    conn: &Connection,
    catalog: Catalog,
    code: &str,
    old: &LocationFields,
    new: &LocationFields,
    username: &str,
    now: i64,
) -> rusqlite::Result<()> {
    let folded = crate::validate::fold(&new.name);
    let key = catalog.key();
    // ?1 and ?2 are the key; each changed column takes the next number.
    let mut columns: Vec<&str> = Vec::with_capacity(18);
    let mut values: Vec<&dyn ToSql> = vec![&key, &code];
    macro_rules! changed {
        ($field:ident, $column:literal) => {
            if old.$field != new.$field {
                columns.push($column);
                values.push(&new.$field);
            }
        };
    }
    if old.name != new.name {
        columns.push("name");
        values.push(&new.name);
        columns.push("name_folded");
        values.push(&folded);
    }
    changed!(country_code, "country_code");
    changed!(geo_region_code, "geo_region_code");
    changed!(latitude_deg, "latitude_deg");
    changed!(latitude_min, "latitude_min");
    changed!(latitude_sec, "latitude_sec");
    changed!(latitude_ns, "latitude_ns");
    changed!(longitude_deg, "longitude_deg");
    changed!(longitude_min, "longitude_min");
    changed!(longitude_sec, "longitude_sec");
    changed!(longitude_we, "longitude_we");
    changed!(status_code, "status_code");
    changed!(restrictions, "restrictions");
    changed!(general_comments, "general_comments");
    columns.push("modified_at");
    values.push(&now);
    columns.push("modifier");
    values.push(&username);
    let assignments: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, column)| format!("{column} = ?{}", i + 3))
        .collect();
    conn.prepare_cached(&format!(
        "UPDATE locations SET {} WHERE catalog = ?1 AND client_code = ?2",
        assignments.join(", ")
    ))?
    .execute(values.as_slice())?;
    Ok(())
}

/// DELETE: an active record becomes inactive; an inactive one is removed.
/// Returns the resulting status (`INACTIVE` or `DELETED`), or `None` if unknown.
pub fn delete_or_deactivate(
    conn: &Connection,
    catalog: Catalog,
    code: &str,
    username: &str,
    now: i64,
) -> rusqlite::Result<Option<&'static str>> {
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
    conn: &Connection,
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
        conditions.push("client_code IN (SELECT value FROM json_each(?))".into());
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
        conditions.push("instr(name_folded, ?) > 0".into());
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
        "SELECT {COLUMNS} FROM locations WHERE {filter} ORDER BY client_code LIMIT ? OFFSET ?"
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
        let text = |i: usize| -> rusqlite::Result<Option<&str>> {
            row.get_ref(i)?
                .as_str_or_null()
                .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, Box::new(e)))
        };
        let required = |i: usize| -> rusqlite::Result<&str> {
            text(i)?.ok_or(rusqlite::Error::InvalidColumnType(
                i,
                String::new(),
                Type::Null,
            ))
        };
        let record = LocationRef {
            client_code: required(0)?,
            fields: FieldsRef {
                name: required(1)?,
                country_code: text(2)?,
                geo_region_code: text(3)?,
                latitude_deg: row.get(4)?,
                latitude_min: row.get(5)?,
                latitude_sec: row.get(6)?,
                latitude_ns: text(7)?,
                longitude_deg: row.get(8)?,
                longitude_min: row.get(9)?,
                longitude_sec: row.get(10)?,
                longitude_we: text(11)?,
                status_code: required(12)?,
                restrictions: text(13)?,
                general_comments: text(14)?,
            },
            date_created: clock::format_ms_into(row.get(15)?, &mut created),
            creator: required(16)?,
            date_modified: clock::format_ms_into(row.get(17)?, &mut modified),
            modifier: required(18)?,
        };
        serde_json::to_writer(&mut *out, &record).map_err(ApiError::internal)?;
    }
    out.push(b']');
    Ok(total)
}
