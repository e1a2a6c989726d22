//! The location catalog service (ports and inland facilities), over real HTTP
//! against the real binary: create, replace, read, delete, validation, search,
//! routing and survival across a restart. Every test that can runs against
//! both catalogs, which share one record shape but never share records.

mod body_limits;
mod records;
mod restart;
mod routing;
mod search;
mod validation;

use std::time::Duration;

use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::common::{PORTS, Reply, Server, urlencode};

const INLAND: &str = "/api/rest/1.0/inland_facilities";
const CATALOGS: [&str; 2] = [PORTS, INLAND];

/// The write shape, in documented order.
const WRITE_FIELDS: [&str; 14] = [
    "name",
    "countryCode",
    "geoRegionCode",
    "latitudeDeg",
    "latitudeMin",
    "latitudeSec",
    "latitudeNs",
    "longitudeDeg",
    "longitudeMin",
    "longitudeSec",
    "longitudeWe",
    "statusCode",
    "restrictions",
    "generalComments",
];

/// Read-shape fields the service sets.
const SERVICE_FIELDS: [&str; 5] = [
    "clientCode",
    "dateCreated",
    "creator",
    "dateModified",
    "modifier",
];

/// Fields that hold whole numbers and must be rendered as JSON integers.
const INTEGER_FIELDS: [&str; 4] = ["latitudeDeg", "latitudeMin", "longitudeDeg", "longitudeMin"];

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// One account's view of the catalog API.
struct Api<'s> {
    server: &'s Server,
    key: String,
    username: &'static str,
}

impl<'s> Api<'s> {
    fn admin(server: &'s Server) -> Api<'s> {
        Api {
            server,
            key: server.admin_key(),
            username: "admin",
        }
    }

    fn user(server: &'s Server, username: &'static str) -> Api<'s> {
        Api {
            server,
            key: server.add_user(username, &[]),
            username,
        }
    }

    fn put(&self, catalog: &str, code: &str, body: &Value) -> Reply {
        self.server
            .put(&format!("{catalog}/{code}"), &self.key, body)
    }

    /// PUT that must answer `status` with the stored write shape of `body`.
    fn put_expect(&self, catalog: &str, code: &str, body: &Value, status: u16) -> Value {
        let reply = self.put(catalog, code, body);
        assert_eq!(
            reply.status,
            status,
            "PUT {catalog}/{code} {body}: {}",
            reply.text()
        );
        let answer = reply.json();
        assert_write_shape(&answer);
        assert_eq!(
            numbers_as_f64(&answer),
            numbers_as_f64(&stored_write_shape(body)),
            "PUT {catalog}/{code} did not answer what was stored"
        );
        answer
    }

    fn create(&self, catalog: &str, code: &str, body: &Value) -> Value {
        self.put_expect(catalog, code, body, 201)
    }

    fn create_named(&self, catalog: &str, code: &str, name: &str) -> Value {
        self.create(catalog, code, &json!({ "name": name }))
    }

    fn get(&self, catalog: &str, code: &str) -> Reply {
        self.server.get(&format!("{catalog}/{code}"), &self.key)
    }

    /// GET that must answer 200 with a well-formed read shape for `code`.
    fn read(&self, catalog: &str, code: &str) -> Value {
        let reply = self.get(catalog, code);
        assert_eq!(reply.status, 200, "GET {catalog}/{code}: {}", reply.text());
        let record = reply.json();
        assert_read_shape(&record, code);
        record
    }

    fn delete(&self, catalog: &str, code: &str) -> Reply {
        self.server.delete(&format!("{catalog}/{code}"), &self.key)
    }

    /// DELETE that must answer 200 with this ResourceStatus.
    fn delete_expect(&self, catalog: &str, code: &str, status_code: &str) {
        let reply = self.delete(catalog, code);
        assert_eq!(
            reply.status,
            200,
            "DELETE {catalog}/{code}: {}",
            reply.text()
        );
        assert_eq!(
            reply.json(),
            json!({ "clientCode": code, "statusCode": status_code })
        );
    }

    fn search_reply(&self, catalog: &str, params: &[(&str, &str)]) -> Reply {
        self.server.get(&search_path(catalog, params), &self.key)
    }

    /// A search that must answer 200 with a well-formed envelope.
    fn search(&self, catalog: &str, params: &[(&str, &str)]) -> Value {
        let reply = self.search_reply(catalog, params);
        assert_eq!(
            reply.status,
            200,
            "search {catalog} {params:?}: {}",
            reply.text()
        );
        let page = reply.json();
        let keys: Vec<&str> = page
            .as_object()
            .expect("envelope is an object")
            .keys()
            .map(String::as_str)
            .collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            [
                "firstResultPosition",
                "results",
                "resultsPerPage",
                "totalResultsAvailable"
            ],
            "{page}"
        );
        for record in page["results"].as_array().expect("results array") {
            let code = record["clientCode"].as_str().expect("clientCode");
            assert_read_shape(record, code);
        }
        page
    }

    /// The client codes a search answers (one page), with the total checked.
    fn search_codes(&self, catalog: &str, params: &[(&str, &str)], total: usize) -> Vec<String> {
        let page = self.search(catalog, params);
        assert_eq!(
            page["totalResultsAvailable"], total,
            "search {catalog} {params:?}: {page}"
        );
        codes_of(&page)
    }

    /// A search that must be refused with 400 naming `field`.
    fn search_rejected(&self, catalog: &str, params: &[(&str, &str)], field: &str) {
        let reply = self.search_reply(catalog, params);
        assert_eq!(
            reply.status,
            400,
            "search {catalog} {params:?}: {}",
            reply.text()
        );
        // The code is checked separately (see search_parameter_errors_share_one_code).
        let code = reply.json()["error"]["code"]
            .as_str()
            .unwrap_or("")
            .to_string();
        reply.assert_error(400, &code);
        assert_eq!(
            reply.error_field().as_deref(),
            Some(field),
            "search {catalog} {params:?}: {}",
            reply.text()
        );
    }
}

/// A search table row: query parameters and the client codes it must answer.
type SearchCase<'a> = (Vec<(&'a str, &'a str)>, Vec<&'a str>);

fn search_path(catalog: &str, params: &[(&str, &str)]) -> String {
    if params.is_empty() {
        return catalog.to_string();
    }
    let query: Vec<String> = params
        .iter()
        .map(|(name, value)| format!("{}={}", urlencode(name), urlencode(value)))
        .collect();
    format!("{catalog}?{}", query.join("&"))
}

fn codes_of(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .expect("results array")
        .iter()
        .map(|r| r["clientCode"].as_str().expect("clientCode").to_string())
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Lets the millisecond clock move before a modifying request.
fn tick() {
    std::thread::sleep(Duration::from_millis(5));
}

/// Every write field set.
fn full_body(name: &str) -> Value {
    json!({
        "name": name,
        "countryCode": "NL",
        "geoRegionCode": "ZH",
        "latitudeDeg": 51,
        "latitudeMin": 55,
        "latitudeSec": 12.5,
        "latitudeNs": "N",
        "longitudeDeg": 4,
        "longitudeMin": 30,
        "longitudeSec": 59.99,
        "longitudeWe": "E",
        "statusCode": "ACTIVE",
        "restrictions": "Max draught 24 m",
        "generalComments": "Largest port in Europe",
    })
}

/// What the service should store for a valid PUT body: every write field,
/// null when not sent, `statusCode` defaulting to ACTIVE; service fields dropped.
fn stored_write_shape(body: &Value) -> Value {
    let mut out = Map::new();
    for field in WRITE_FIELDS {
        out.insert(
            field.to_string(),
            body.get(field).cloned().unwrap_or(Value::Null),
        );
    }
    if out["statusCode"].is_null() {
        out.insert("statusCode".into(), json!("ACTIVE"));
    }
    Value::Object(out)
}

/// The write-shape part of a read-shape record.
fn write_part(record: &Value) -> Value {
    let mut out = Map::new();
    for field in WRITE_FIELDS {
        out.insert(field.to_string(), record[field].clone());
    }
    Value::Object(out)
}

/// Numbers compared by value: `51`, `51.0` and `5.1e1` are the same number.
fn numbers_as_f64(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().expect("finite number")),
        Value::Array(items) => Value::Array(items.iter().map(numbers_as_f64).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), numbers_as_f64(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn sorted_keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

fn assert_integer_fields(value: &Value) {
    for field in INTEGER_FIELDS {
        let v = &value[field];
        assert!(
            v.is_null() || v.is_u64(),
            "{field} should be a JSON integer: {value}"
        );
    }
}

/// Exactly the 14 write fields.
fn assert_write_shape(value: &Value) {
    let mut expected = strings(&WRITE_FIELDS);
    expected.sort();
    assert_eq!(sorted_keys(value), expected, "{value}");
    assert_integer_fields(value);
}

/// Exactly the 14 write fields plus the 5 service fields, well-formed.
fn assert_read_shape(record: &Value, code: &str) {
    let mut expected = strings(&WRITE_FIELDS);
    expected.extend(strings(&SERVICE_FIELDS));
    expected.sort();
    assert_eq!(sorted_keys(record), expected, "{record}");
    assert_integer_fields(record);
    assert_eq!(record["clientCode"], code, "{record}");
    let created = assert_timestamp(&record["dateCreated"]);
    let modified = assert_timestamp(&record["dateModified"]);
    assert!(created <= modified, "{record}");
    for who in ["creator", "modifier"] {
        assert!(
            record[who].as_str().is_some_and(|s| !s.is_empty()),
            "{who}: {record}"
        );
    }
}

/// RFC 3339 in UTC with exactly three fraction digits and a `Z`
/// (`2026-11-21T09:30:00.000Z`), and close to the real time now (so it is
/// really UTC, not local time labelled `Z`). Returns the text.
fn assert_timestamp(value: &Value) -> String {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("date is not a string: {value}"));
    let shape_ok = text.len() == 24
        && text.bytes().enumerate().all(|(i, c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T',
            13 | 16 => c == b':',
            19 => c == b'.',
            23 => c == b'Z',
            _ => c.is_ascii_digit(),
        });
    assert!(shape_ok, "not YYYY-MM-DDTHH:MM:SS.mmmZ: {text:?}");
    let parsed = OffsetDateTime::parse(text, &Rfc3339)
        .unwrap_or_else(|e| panic!("not RFC 3339 ({e}): {text:?}"));
    let skew = (OffsetDateTime::now_utc() - parsed).abs();
    assert!(
        skew < time::Duration::minutes(10),
        "{text} is {skew} away from now (UTC)"
    );
    text.to_string()
}

/// The same instant written with a one-hour offset instead of `Z`.
fn with_offset(utc: &str) -> String {
    let hour: u32 = utc[11..13].parse().unwrap();
    let (shifted, offset) = if hour < 23 {
        (hour + 1, "+01:00")
    } else {
        (hour - 1, "-01:00")
    };
    format!(
        "{}{shifted:02}{}{offset}",
        &utc[..11],
        &utc[13..utc.len() - 1]
    )
}
