//! The location record (write and read shapes), its validation, and the
//! parsing of search parameters. One shape serves both catalogs.

use serde::ser::{Serialize, SerializeStruct, Serializer};
use serde_json::Value;

use super::countries;
use crate::clock;
use crate::error::{ApiError, ApiResult};
use crate::listing::{distinct_params, whole_number_param};
use crate::validate::{
    Lines, object, optional_enum, optional_integer, optional_number_below, optional_string,
    optional_text, required_string, unknown_field,
};

pub const STATUS_ACTIVE: &str = "ACTIVE";
pub const STATUS_INACTIVE: &str = "INACTIVE";
pub const STATUSES: &[&str] = &[STATUS_ACTIVE, STATUS_INACTIVE];

pub const NAME_MAX: usize = 256;
pub const CODE_FIELD_MAX: usize = 64;
/// A position's axes: the name prefix, the largest whole degrees, the
/// hemisphere letters and the hemisphere field's suffix.
pub const AXES: [(&str, i64, [&str; 2], &str); 2] = [
    ("latitude", LATITUDE_MAX, ["N", "S"], "Ns"),
    ("longitude", LONGITUDE_MAX, ["E", "W"], "We"),
];
pub const LATITUDE_MAX: i64 = 90;
pub const LONGITUDE_MAX: i64 = 180;
/// Largest whole minutes; seconds are below [`SECONDS_BELOW`].
pub const MINUTES_MAX: i64 = 59;
pub const SECONDS_BELOW: f64 = 60.0;
pub const TEXT_MAX: usize = 10_000;

/// Fields of the write shape, in the order they are documented and rendered.
pub const WRITE_FIELDS: &[&str] = &[
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

/// Read-shape fields set by the service. A client may send them back (a GET
/// body reused as a PUT body); they are ignored, except that `clientCode` must
/// match the path.
pub const SERVICE_FIELDS: &[&str] = &[
    "clientCode",
    "dateCreated",
    "creator",
    "dateModified",
    "modifier",
];

/// The write shape of a location, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct LocationFields {
    pub name: String,
    pub country_code: Option<String>,
    pub geo_region_code: Option<String>,
    pub latitude_deg: Option<i64>,
    pub latitude_min: Option<i64>,
    pub latitude_sec: Option<f64>,
    pub latitude_ns: Option<String>,
    pub longitude_deg: Option<i64>,
    pub longitude_min: Option<i64>,
    pub longitude_sec: Option<f64>,
    pub longitude_we: Option<String>,
    pub status_code: String,
    pub restrictions: Option<String>,
    pub general_comments: Option<String>,
}

/// The read shape: the write shape plus the fields the service sets.
#[derive(Clone, Debug)]
pub struct Location {
    pub client_code: String,
    pub fields: LocationFields,
    pub date_created: String,
    pub creator: String,
    pub date_modified: String,
    pub modifier: String,
}

/// The 14 write-shape fields over borrowed text, in their documented order:
/// the one list of them, used by both shapes and by search rows rendered
/// straight from SQLite (no per-field allocation).
pub struct FieldsRef<'a> {
    pub name: &'a str,
    pub country_code: Option<&'a str>,
    pub geo_region_code: Option<&'a str>,
    pub latitude_deg: Option<i64>,
    pub latitude_min: Option<i64>,
    pub latitude_sec: Option<f64>,
    pub latitude_ns: Option<&'a str>,
    pub longitude_deg: Option<i64>,
    pub longitude_min: Option<i64>,
    pub longitude_sec: Option<f64>,
    pub longitude_we: Option<&'a str>,
    pub status_code: &'a str,
    pub restrictions: Option<&'a str>,
    pub general_comments: Option<&'a str>,
}

impl FieldsRef<'_> {
    fn serialize_into<S: SerializeStruct>(&self, out: &mut S) -> Result<(), S::Error> {
        out.serialize_field("name", self.name)?;
        out.serialize_field("countryCode", &self.country_code)?;
        out.serialize_field("geoRegionCode", &self.geo_region_code)?;
        out.serialize_field("latitudeDeg", &self.latitude_deg)?;
        out.serialize_field("latitudeMin", &self.latitude_min)?;
        out.serialize_field("latitudeSec", &self.latitude_sec)?;
        out.serialize_field("latitudeNs", &self.latitude_ns)?;
        out.serialize_field("longitudeDeg", &self.longitude_deg)?;
        out.serialize_field("longitudeMin", &self.longitude_min)?;
        out.serialize_field("longitudeSec", &self.longitude_sec)?;
        out.serialize_field("longitudeWe", &self.longitude_we)?;
        out.serialize_field("statusCode", self.status_code)?;
        out.serialize_field("restrictions", &self.restrictions)?;
        out.serialize_field("generalComments", &self.general_comments)
    }
}

impl FieldsRef<'_> {
    /// One bit per field that differs from `other`, in declaration order
    /// (the store's `WRITE_COLUMNS`); 0 when equal.
    pub fn differences(&self, other: &FieldsRef<'_>) -> u16 {
        let same = [
            self.name == other.name,
            self.country_code == other.country_code,
            self.geo_region_code == other.geo_region_code,
            self.latitude_deg == other.latitude_deg,
            self.latitude_min == other.latitude_min,
            self.latitude_sec == other.latitude_sec,
            self.latitude_ns == other.latitude_ns,
            self.longitude_deg == other.longitude_deg,
            self.longitude_min == other.longitude_min,
            self.longitude_sec == other.longitude_sec,
            self.longitude_we == other.longitude_we,
            self.status_code == other.status_code,
            self.restrictions == other.restrictions,
            self.general_comments == other.general_comments,
        ];
        same.iter()
            .enumerate()
            .filter(|(_, same)| !**same)
            .fold(0, |mask, (bit, _)| mask | 1 << bit)
    }
}

impl From<FieldsRef<'_>> for LocationFields {
    fn from(f: FieldsRef<'_>) -> LocationFields {
        LocationFields {
            name: f.name.to_string(),
            country_code: f.country_code.map(str::to_string),
            geo_region_code: f.geo_region_code.map(str::to_string),
            latitude_deg: f.latitude_deg,
            latitude_min: f.latitude_min,
            latitude_sec: f.latitude_sec,
            latitude_ns: f.latitude_ns.map(str::to_string),
            longitude_deg: f.longitude_deg,
            longitude_min: f.longitude_min,
            longitude_sec: f.longitude_sec,
            longitude_we: f.longitude_we.map(str::to_string),
            status_code: f.status_code.to_string(),
            restrictions: f.restrictions.map(str::to_string),
            general_comments: f.general_comments.map(str::to_string),
        }
    }
}

impl<'a> From<&'a LocationFields> for FieldsRef<'a> {
    fn from(f: &'a LocationFields) -> FieldsRef<'a> {
        FieldsRef {
            name: &f.name,
            country_code: f.country_code.as_deref(),
            geo_region_code: f.geo_region_code.as_deref(),
            latitude_deg: f.latitude_deg,
            latitude_min: f.latitude_min,
            latitude_sec: f.latitude_sec,
            latitude_ns: f.latitude_ns.as_deref(),
            longitude_deg: f.longitude_deg,
            longitude_min: f.longitude_min,
            longitude_sec: f.longitude_sec,
            longitude_we: f.longitude_we.as_deref(),
            status_code: &f.status_code,
            restrictions: f.restrictions.as_deref(),
            general_comments: f.general_comments.as_deref(),
        }
    }
}

impl Serialize for LocationFields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("LocationFields", WRITE_FIELDS.len())?;
        FieldsRef::from(self).serialize_into(&mut out)?;
        out.end()
    }
}

/// The read shape over borrowed text: the write shape between the fields the
/// service sets.
pub struct LocationRef<'a> {
    pub client_code: &'a str,
    pub fields: FieldsRef<'a>,
    pub date_created: &'a str,
    pub creator: &'a str,
    pub date_modified: &'a str,
    pub modifier: &'a str,
}

impl Serialize for LocationRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("Location", WRITE_FIELDS.len() + 5)?;
        out.serialize_field("clientCode", self.client_code)?;
        self.fields.serialize_into(&mut out)?;
        out.serialize_field("dateCreated", self.date_created)?;
        out.serialize_field("creator", self.creator)?;
        out.serialize_field("dateModified", self.date_modified)?;
        out.serialize_field("modifier", self.modifier)?;
        out.end()
    }
}

impl Serialize for Location {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        LocationRef {
            client_code: &self.client_code,
            fields: (&self.fields).into(),
            date_created: &self.date_created,
            creator: &self.creator,
            date_modified: &self.date_modified,
            modifier: &self.modifier,
        }
        .serialize(serializer)
    }
}

/// Client codes: 1-64 characters of `A-Z a-z 0-9 . _ -`, case-sensitive, but
/// not `.` or `..`.
/// Longest clientCode.
pub const CLIENT_CODE_MAX: usize = 64;
/// What [`valid_client_code`] accepts, as a regular expression (OpenAPI).
pub const CLIENT_CODE_PATTERN: &str = r"^(?!\.\.?$)[A-Za-z0-9._-]{1,64}$";

pub fn valid_client_code(code: &str) -> bool {
    // `.` and `..` are path segments that browsers and curl resolve away.
    !matches!(code, "" | "." | "..")
        && code.len() <= CLIENT_CODE_MAX
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

pub fn check_client_code(code: &str, field: &str) -> ApiResult<()> {
    if valid_client_code(code) {
        Ok(())
    } else {
        Err(ApiError::invalid(
            field,
            "A clientCode is 1 to 64 characters of letters, digits, '.', '_' and '-', \
             and not `.` or `..`",
        ))
    }
}

fn check_country(code: Option<String>, field: &str) -> ApiResult<Option<String>> {
    match code {
        Some(c) if !countries::is_known(&c) => Err(ApiError::invalid(
            field,
            format!(
                "`{field}` must be an ISO 3166-1 alpha-2 country code in upper case, such as NL \
                 (got \"{c}\")"
            ),
        )),
        other => Ok(other),
    }
}

impl LocationFields {
    /// Validates a PUT body for the record at `client_code`.
    pub fn from_json(body: &Value, client_code: &str) -> ApiResult<LocationFields> {
        let map = object(body, "")?;
        let mut fields = LocationFields {
            name: String::new(),
            country_code: None,
            geo_region_code: None,
            latitude_deg: None,
            latitude_min: None,
            latitude_sec: None,
            latitude_ns: None,
            longitude_deg: None,
            longitude_min: None,
            longitude_sec: None,
            longitude_we: None,
            status_code: STATUS_ACTIVE.to_string(),
            restrictions: None,
            general_comments: None,
        };
        for (key, value) in map {
            let k = key.as_str();
            match k {
                "name" => {} // checked below, so that a missing name is caught too
                "countryCode" => {
                    fields.country_code = check_country(optional_string(value, k, 2)?, k)?;
                }
                "geoRegionCode" => {
                    fields.geo_region_code = optional_string(value, k, CODE_FIELD_MAX)?
                }
                "latitudeDeg" => fields.latitude_deg = optional_integer(value, k, 0, LATITUDE_MAX)?,
                "latitudeMin" => fields.latitude_min = optional_integer(value, k, 0, MINUTES_MAX)?,
                "latitudeSec" => {
                    fields.latitude_sec = optional_number_below(value, k, 0.0, SECONDS_BELOW)?
                }
                "latitudeNs" => fields.latitude_ns = optional_enum(value, k, &AXES[0].2)?,
                "longitudeDeg" => {
                    fields.longitude_deg = optional_integer(value, k, 0, LONGITUDE_MAX)?
                }
                "longitudeMin" => {
                    fields.longitude_min = optional_integer(value, k, 0, MINUTES_MAX)?
                }
                "longitudeSec" => {
                    fields.longitude_sec = optional_number_below(value, k, 0.0, SECONDS_BELOW)?;
                }
                "longitudeWe" => fields.longitude_we = optional_enum(value, k, &AXES[1].2)?,
                "statusCode" => {
                    if let Some(status) = optional_enum(value, k, STATUSES)? {
                        fields.status_code = status;
                    }
                }
                "restrictions" => {
                    fields.restrictions = optional_text(value, k, TEXT_MAX, Lines::Many)?
                }
                "generalComments" => {
                    fields.general_comments = optional_text(value, k, TEXT_MAX, Lines::Many)?
                }
                "clientCode" => {
                    if value.as_str() != Some(client_code) {
                        return Err(ApiError::invalid(
                            k,
                            format!(
                                "`clientCode` in the body must match the path (\"{client_code}\") \
                                 or be left out"
                            ),
                        ));
                    }
                }
                _ if SERVICE_FIELDS.contains(&k) => {}
                _ => return Err(unknown_field(k, WRITE_FIELDS)),
            }
        }
        fields.name = required_string(map.get("name"), "name", NAME_MAX)?;
        check_pole(
            fields.latitude_deg,
            LATITUDE_MAX,
            fields.latitude_min,
            fields.latitude_sec,
            "latitude",
        )?;
        check_pole(
            fields.longitude_deg,
            LONGITUDE_MAX,
            fields.longitude_min,
            fields.longitude_sec,
            "longitude",
        )?;
        Ok(fields)
    }
}

/// At the extreme degree (90° latitude, 180° longitude) there is no room for
/// minutes or seconds.
fn check_pole(
    deg: Option<i64>,
    limit: i64,
    min: Option<i64>,
    sec: Option<f64>,
    axis: &str,
) -> ApiResult<()> {
    if deg == Some(limit) && (min.unwrap_or(0) != 0 || sec.unwrap_or(0.0) != 0.0) {
        let field = if min.unwrap_or(0) != 0 { "Min" } else { "Sec" };
        return Err(ApiError::invalid(
            format!("{axis}{field}"),
            format!("A {axis} of {limit} degrees cannot have minutes or seconds"),
        ));
    }
    Ok(())
}

/// Search parameters, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchQuery {
    pub page: i64,
    pub results_per_page: i64,
    pub modified_from_ms: Option<i64>,
    pub modified_to_ms: Option<i64>,
    pub client_codes: Option<Vec<String>>,
    pub country_code: Option<String>,
    pub status_code: Option<String>,
    /// Lower-cased substring of the name.
    pub name_folded: Option<String>,
}

pub const DEFAULT_PAGE_SIZE: i64 = 25;
pub const MAX_PAGE_SIZE: i64 = 200;
pub const MAX_CLIENT_CODES: usize = 200;
const SEARCH_PARAMS: &[&str] = &[
    "page",
    "resultsPerPage",
    "dateModifiedFrom",
    "dateModifiedTo",
    "clientCodes",
    "countryCode",
    "statusCode",
    "name",
];

impl SearchQuery {
    pub fn offset(&self) -> i64 {
        (self.page - 1) * self.results_per_page
    }

    pub fn from_pairs(pairs: &[(String, String)]) -> ApiResult<SearchQuery> {
        let mut q = SearchQuery {
            page: 1,
            results_per_page: DEFAULT_PAGE_SIZE,
            modified_from_ms: None,
            modified_to_ms: None,
            client_codes: None,
            country_code: None,
            status_code: None,
            name_folded: None,
        };
        for (n, value) in distinct_params(pairs, &[])? {
            match n {
                "page" => q.page = whole_number_param(n, value, 1, i64::MAX)?,
                "resultsPerPage" => {
                    q.results_per_page = whole_number_param(n, value, 1, MAX_PAGE_SIZE)?
                }
                "dateModifiedFrom" => q.modified_from_ms = Some(parse_date(n, value)?),
                "dateModifiedTo" => q.modified_to_ms = Some(parse_date(n, value)?),
                "clientCodes" => q.client_codes = Some(parse_client_codes(value)?),
                "countryCode" => {
                    q.country_code = check_country(Some(value.clone()), n)
                        .map_err(|e| ApiError::invalid_query(n, e.message()))?;
                }
                "statusCode" => {
                    if !STATUSES.contains(&value.as_str()) {
                        return Err(ApiError::invalid_query(
                            n,
                            format!("`statusCode` must be ACTIVE or INACTIVE (got \"{value}\")"),
                        ));
                    }
                    q.status_code = Some(value.clone());
                }
                "name" => {
                    if value.is_empty() || value.chars().count() > NAME_MAX {
                        return Err(ApiError::invalid_query(
                            n,
                            format!("`name` must be 1 to {NAME_MAX} characters"),
                        ));
                    }
                    q.name_folded = Some(crate::validate::fold(value));
                }
                _ => {
                    return Err(ApiError::invalid_query(
                        n,
                        format!(
                            "Unknown query parameter `{n}`; this search accepts: {}",
                            SEARCH_PARAMS.join(", ")
                        ),
                    ));
                }
            }
        }
        if q.page
            .checked_sub(1)
            .and_then(|p| p.checked_mul(q.results_per_page))
            .is_none()
        {
            return Err(ApiError::invalid_query("page", "`page` is too large"));
        }
        Ok(q)
    }
}

fn parse_date(name: &str, value: &str) -> ApiResult<i64> {
    clock::parse_rfc3339_ms_ceil(value).ok_or_else(|| {
        ApiError::invalid_query(
            name,
            format!(
                "`{name}` must be an RFC 3339 date-time such as 2026-11-21T09:30:00Z (got \"{value}\")"
            ),
        )
    })
}

fn parse_client_codes(value: &str) -> ApiResult<Vec<String>> {
    let field = "clientCodes";
    let shape_error = || {
        ApiError::invalid_query(
            field,
            "`clientCodes` must be a JSON array of client code strings, such as [\"NLRTM\",\"BEANR\"]",
        )
    };
    let parsed: Value = serde_json::from_str(value).map_err(|_| shape_error())?;
    let items = parsed.as_array().ok_or_else(shape_error)?;
    if items.len() > MAX_CLIENT_CODES {
        return Err(ApiError::invalid_query(
            field,
            format!(
                "`clientCodes` holds {} codes; at most {MAX_CLIENT_CODES} are allowed",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let code = item.as_str().ok_or_else(shape_error)?;
            check_client_code(code, &format!("clientCodes[{i}]"))
                .map_err(|_| {
                    ApiError::invalid_query(
                        format!("clientCodes[{i}]"),
                        format!("\"{code}\" is not a valid client code"),
                    )
                })
                .map(|()| code.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn minimal_body_defaults_to_active() {
        let f = LocationFields::from_json(&json!({"name": "Rotterdam"}), "NLRTM").unwrap();
        assert_eq!(f.status_code, "ACTIVE");
        assert_eq!(f.country_code, None);
    }

    #[test]
    fn read_shape_round_trips_as_write_body() {
        let body = json!({"name": "X", "clientCode": "C1", "creator": "a", "dateCreated": "t"});
        assert!(LocationFields::from_json(&body, "C1").is_ok());
        let err = LocationFields::from_json(&body, "C2").unwrap_err();
        assert_eq!(err.field(), Some("clientCode"));
    }

    #[test]
    fn pole_has_no_minutes() {
        let err = LocationFields::from_json(
            &json!({"name": "N", "latitudeDeg": 90, "latitudeMin": 1}),
            "P",
        )
        .unwrap_err();
        assert_eq!(err.field(), Some("latitudeMin"));
    }

    #[test]
    fn search_defaults_and_limits() {
        let q = SearchQuery::from_pairs(&[]).unwrap();
        assert_eq!((q.page, q.results_per_page, q.offset()), (1, 25, 0));
        let q =
            SearchQuery::from_pairs(&pairs(&[("page", "3"), ("resultsPerPage", "200")])).unwrap();
        assert_eq!(q.offset(), 400);
        for bad in [
            ("resultsPerPage", "201"),
            ("resultsPerPage", "0"),
            ("page", "0"),
            ("page", "x"),
        ] {
            assert!(SearchQuery::from_pairs(&pairs(&[bad])).is_err(), "{bad:?}");
        }
        let many = serde_json::to_string(&vec!["A"; 201]).unwrap();
        assert!(SearchQuery::from_pairs(&pairs(&[("clientCodes", &many)])).is_err());
        assert!(SearchQuery::from_pairs(&pairs(&[("page", "1"), ("page", "2")])).is_err());
        assert!(
            SearchQuery::from_pairs(&pairs(&[("page", "922337203685477580")]))
                .unwrap_err()
                .message()
                .contains("too large")
        );
    }
}
