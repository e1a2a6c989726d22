//! `quayside import-unlocode FILE.csv`: loads the UN/LOCODE code list into the
//! two location catalogs (contract section 4).
//!
//! Rows whose Function has `1` become ports; rows with `2`, `6` or `8` and no
//! `1` become inland facilities; others are skipped and counted. A row marked
//! for deletion (Change `X`/`x`) is skipped; when a code repeats, the first row
//! wins; a malformed coordinate imports the row without coordinates. Every such
//! case is reported with its line number. Re-running updates in place: rows
//! that did not change leave their records (and `dateModified`) alone.

use std::io::{Read, Write};
use std::time::Instant;

use crate::db::Conn;

use crate::db::writer::Capture;

use super::Catalog;
use super::countries;
use super::model::{LocationFields, STATUS_ACTIVE, valid_client_code};
use super::store::{self, Upserted};
use crate::clock;

/// Rows per transaction: short enough that a running server's writer never
/// waits long on the import's lock.
const BATCH: usize = 2000;
/// Rows between two progress lines.
const PROGRESS_EVERY: usize = 20_000;

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub rows: usize,
    pub created: [usize; 2],
    pub updated: [usize; 2],
    pub unchanged: [usize; 2],
    pub skipped_function: usize,
    pub skipped_deleted: usize,
    pub duplicates: usize,
    pub bad_coordinates: usize,
    pub bad_rows: usize,
}

impl Summary {
    fn count(&mut self, catalog: Catalog, outcome: &Upserted) {
        let slot = match catalog {
            Catalog::Ports => 0,
            Catalog::InlandFacilities => 1,
        };
        match outcome {
            Upserted::Created => self.created[slot] += 1,
            Upserted::Updated => self.updated[slot] += 1,
            Upserted::Unchanged => self.unchanged[slot] += 1,
        }
    }
}

/// Which catalog a Function string puts a row in.
pub fn catalog_of(function: &str) -> Option<Catalog> {
    if function.contains('1') {
        Some(Catalog::Ports)
    } else if function.contains(['2', '6', '8']) {
        Some(Catalog::InlandFacilities)
    } else {
        None
    }
}

/// A UN/LOCODE coordinate, `DDMMH DDDMMH`: (deg, min, N|S), (deg, min, E|W).
pub type Position = ((i64, i64, char), (i64, i64, char));

pub fn parse_coordinates(text: &str) -> Option<Position> {
    let (lat, lon) = text.trim().split_once(' ')?;
    let part = |s: &str, deg_digits: usize, hemispheres: [char; 2], max_deg: i64| {
        let hemisphere = s.chars().last().filter(|c| hemispheres.contains(c))?;
        let digits = &s[..s.len() - 1];
        if digits.len() != deg_digits + 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let deg: i64 = digits[..deg_digits].parse().ok()?;
        let min: i64 = digits[deg_digits..].parse().ok()?;
        (deg <= max_deg && min <= 59 && !(deg == max_deg && min > 0))
            .then_some((deg, min, hemisphere))
    };
    Some((
        part(lat, 2, ['N', 'S'], 90)?,
        part(lon, 3, ['E', 'W'], 180)?,
    ))
}

/// Imports a code list from `input`. Reports go to `log` (stderr in the CLI).
/// `capture` records each transaction's changes before it commits (the
/// change log), as the server's writer does for its writes.
pub fn import(
    conn: &Conn,
    input: impl Read,
    username: &str,
    log: &mut dyn Write,
    capture: &dyn Capture,
) -> Result<Summary, String> {
    capture
        .install(conn)
        .map_err(|e| format!("cannot prepare the change log: {e}"))?;
    let record_changes = |tx: &Conn| {
        capture
            .record(tx, username)
            .map(|_| ())
            .map_err(|e| format!("cannot record the changes: {}", e.chain()))
    };
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(input);
    let headers = reader
        .headers()
        .map_err(|e| format!("cannot read the header row: {e}"))?
        .clone();
    let column = |name: &str| {
        headers.iter().position(|h| h == name).ok_or_else(|| {
            format!("the header row has no `{name}` column; is this a UN/LOCODE code list?")
        })
    };
    let (change, country, location, name, subdivision, function, coordinates, remarks) = (
        column("Change")?,
        column("Country")?,
        column("Location")?,
        column("Name")?,
        column("Subdivision")?,
        column("Function")?,
        column("Coordinates")?,
        column("Remarks")?,
    );
    let mut summary = Summary::default();
    let mut seen = std::collections::HashSet::new();
    let started = Instant::now();
    // IMMEDIATE: the write lock is taken (waiting on the busy timeout) when
    // the transaction begins; a read transaction upgraded to a write after a
    // running server committed would fail at once with SQLITE_BUSY_SNAPSHOT.
    let mut tx = conn.begin_write().map_err(|e| e.to_string())?;
    let mut in_batch = 0;
    let now = clock::now_ms();
    for record in reader.records() {
        summary.rows += 1;
        let record = match record {
            Ok(record) => record,
            Err(err) => {
                let line = err.position().map_or(0, |p| p.line());
                let _ = writeln!(log, "line {line}: skipped, unreadable row: {err}");
                summary.bad_rows += 1;
                continue;
            }
        };
        // The csv crate counts the line a record starts on from zero here; people count from one.
        let line = record.position().map_or(0, |p| p.line() + 1);
        let field = |i: usize| record.get(i).unwrap_or("").trim();
        if record.len() != headers.len() {
            let _ = writeln!(
                log,
                "line {line}: skipped, {} columns instead of {}",
                record.len(),
                headers.len()
            );
            summary.bad_rows += 1;
            continue;
        }
        let code = format!("{}{}", field(country), field(location));
        if field(change).eq_ignore_ascii_case("x") {
            let _ = writeln!(log, "line {line}: skipped {code}, marked for deletion");
            summary.skipped_deleted += 1;
            continue;
        }
        let Some(catalog) = catalog_of(field(function)) else {
            summary.skipped_function += 1;
            continue;
        };
        if !valid_client_code(&code)
            || !countries::is_known(field(country))
            || field(name).is_empty()
        {
            let _ = writeln!(
                log,
                "line {line}: skipped, invalid code \"{code}\" or empty name"
            );
            summary.bad_rows += 1;
            continue;
        }
        if !seen.insert(code.clone()) {
            let _ = writeln!(
                log,
                "line {line}: skipped {code}, repeats an earlier row (the first wins)"
            );
            summary.duplicates += 1;
            continue;
        }
        let position = match field(coordinates) {
            "" => None,
            text => match parse_coordinates(text) {
                Some(position) => Some(position),
                None => {
                    let _ = writeln!(
                        log,
                        "line {line}: {code} imported without coordinates, malformed \"{text}\""
                    );
                    summary.bad_coordinates += 1;
                    None
                }
            },
        };
        let fields = LocationFields {
            name: field(name).to_string(),
            country_code: Some(field(country).to_string()),
            geo_region_code: Some(field(subdivision))
                .filter(|s| !s.is_empty())
                .map(|s| format!("{}-{s}", field(country))),
            latitude_deg: position.map(|p| p.0.0),
            latitude_min: position.map(|p| p.0.1),
            latitude_sec: None,
            latitude_ns: position.map(|p| p.0.2.to_string()),
            longitude_deg: position.map(|p| p.1.0),
            longitude_min: position.map(|p| p.1.1),
            longitude_sec: None,
            longitude_we: position.map(|p| p.1.2.to_string()),
            status_code: STATUS_ACTIVE.to_string(),
            restrictions: None,
            general_comments: Some(field(remarks))
                .filter(|s| !s.is_empty())
                .map(String::from),
        };
        let outcome = store::upsert(tx.conn(), catalog, &code, &fields, username, now)
            .map_err(|e| format!("line {line}: {code}: {e}"))?;
        summary.count(catalog, &outcome);
        in_batch += 1;
        if in_batch == BATCH {
            record_changes(tx.conn())?;
            tx.commit().map_err(|e| e.to_string())?;
            capture
                .tidy(conn)
                .map_err(|e| format!("cannot tidy the change capture: {e}"))?;
            tx = conn.begin_write().map_err(|e| e.to_string())?;
            in_batch = 0;
        }
        if summary.rows % PROGRESS_EVERY == 0 {
            let rate = summary.rows as f64 / started.elapsed().as_secs_f64().max(0.001);
            let _ = writeln!(log, "{} rows done, {rate:.0} rows/s", summary.rows);
        }
    }
    record_changes(tx.conn())?;
    tx.commit().map_err(|e| e.to_string())?;
    // Fresh statistics, so searches over the new rows use their indexes.
    conn.execute_batch(conn.dialect().refresh_statistics())
        .map_err(|e| e.to_string())?;
    let rate = summary.rows as f64 / started.elapsed().as_secs_f64().max(0.001);
    let _ = writeln!(
        log,
        "imported {} rows in {:.1}s ({rate:.0} rows/s): ports {} created, {} updated, {} unchanged; \
         inland facilities {} created, {} updated, {} unchanged; skipped: {} by function, {} marked \
         for deletion, {} repeated codes, {} bad rows; {} without coordinates (malformed)",
        summary.rows,
        started.elapsed().as_secs_f64(),
        summary.created[0],
        summary.updated[0],
        summary.unchanged[0],
        summary.created[1],
        summary.updated[1],
        summary.unchanged[1],
        summary.skipped_function,
        summary.skipped_deleted,
        summary.duplicates,
        summary.bad_rows,
        summary.bad_coordinates,
    );
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_functions() {
        assert_eq!(catalog_of("12345---"), Some(Catalog::Ports));
        assert_eq!(catalog_of("-2------"), Some(Catalog::InlandFacilities));
        assert_eq!(catalog_of("-----6--"), Some(Catalog::InlandFacilities));
        assert_eq!(catalog_of("--3-----"), None);
        assert_eq!(catalog_of("0-------"), None);
    }

    #[test]
    fn parses_coordinates_and_rejects_malformed_ones() {
        assert_eq!(
            parse_coordinates("5155N 00430E"),
            Some(((51, 55, 'N'), (4, 30, 'E')))
        );
        assert_eq!(
            parse_coordinates("3352S 15112W"),
            Some(((33, 52, 'S'), (151, 12, 'W')))
        );
        assert_eq!(parse_coordinates("2444N 05045"), None);
        assert_eq!(parse_coordinates("9160N 00000E"), None);
        assert_eq!(parse_coordinates(""), None);
    }

    #[test]
    fn imports_and_reimports_in_place() {
        let conn = Conn::memory().unwrap();
        let csv = "Change,Country,Location,Name,NameWoDiacritics,Subdivision,Status,Function,Date,IATA,Coordinates,Remarks\r\n\
                   ,NL,RTM,Rotterdam,Rotterdam,ZH,AI,12345---,0207,,5155N 00430E,\r\n\
                   ,DE,DUI,Duisburg,Duisburg,NW,AI,123-----,0207,,5126N 00645E,\r\n\
                   ,DE,XXX,Bad,Bad,,AI,-2------,0207,,9999N 00000E,\r\n\
                   x,AO,KOT,Old,Old,,XX,1-------,0207,,,\r\n\
                   ,BE,BRU,Brussel,Brussel,,AI,-2------,0207,,,\r\n\
                   ,BE,BRU,Bruxelles,Bruxelles,,AI,-2------,0207,,,\r\n\
                   ,AD,CAN,Canillo,Canillo,,RL,--3-----,0307,,4234N 00135E,\r\n";
        let mut out = Vec::new();
        let first = import(
            &conn,
            csv.as_bytes(),
            "importer",
            &mut out,
            &crate::changes::Capture::default(),
        )
        .unwrap();
        assert_eq!(first.created, [2, 2]);
        assert_eq!(
            (
                first.skipped_deleted,
                first.duplicates,
                first.bad_coordinates,
                first.skipped_function
            ),
            (1, 1, 1, 1)
        );
        let report = String::from_utf8(out).unwrap();
        assert!(
            report.contains("line 5: skipped AOKOT, marked for deletion"),
            "{report}"
        );
        assert!(
            report.contains("line 7: skipped BEBRU, repeats"),
            "{report}"
        );
        assert!(
            report.contains("line 4: DEXXX imported without coordinates"),
            "{report}"
        );
        let rtm = store::get(&conn, Catalog::Ports, "NLRTM").unwrap().unwrap();
        assert_eq!(rtm.fields.latitude_deg, Some(51));
        assert_eq!(rtm.fields.longitude_we.as_deref(), Some("E"));
        assert_eq!(rtm.fields.geo_region_code.as_deref(), Some("NL-ZH"));
        assert_eq!(
            store::get(&conn, Catalog::InlandFacilities, "BEBRU")
                .unwrap()
                .unwrap()
                .fields
                .name,
            "Brussel"
        );
        let again = import(
            &conn,
            csv.as_bytes(),
            "importer",
            &mut Vec::new(),
            &crate::changes::Capture::default(),
        )
        .unwrap();
        assert_eq!(again.created, [0, 0]);
        assert_eq!(again.unchanged, [2, 2]);
    }
}
