//! The rules that belong to particular kinds: where a document sits (its
//! workspace, which must be active, and job), job defaults, a job's parties,
//! job status transitions and completion,
//! one quantity result per direction, a time log's end not before its start,
//! and what may be deleted.

use crate::db::Conn;
use serde_json::{Map, Value};

use super::kinds::{self, JOB, QUANTITY_RESULT, TIMELOG};
use super::{Document, schema::value_at, store};
use crate::error::{ApiError, ApiResult};
use crate::workspaces::{State, Workspace};

/// Where a document is written: its workspace, and for results its job.
pub struct Placement<'a> {
    pub workspace: &'a Workspace,
    pub job: Option<&'a Document>,
}

fn text<'a>(body: &'a Map<String, Value>, path: &str) -> Option<&'a str> {
    value_at(body, path).and_then(Value::as_str)
}

fn flag(body: &Map<String, Value>, path: &str) -> bool {
    value_at(body, path)
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The 409 reasons each kind's POST, PATCH and DELETE can give, as the
/// OpenAPI document states them: one per `ApiError::conflict` of the rules
/// below (a unit test of the document checks every code is named).
pub fn conflicts(kind: &kinds::Kind) -> [&'static [&'static str]; 3] {
    const INCOMPLETE: &str = "`job_incomplete`: moving to `complete` without what was requested";
    const DIRECTION: &str =
        "`duplicate_direction`: the job has a quantity result for this direction";
    const HAS_FILES: &str = "`document_has_attachments`: delete its attachments first";
    const PARENT: &str = "`document_in_use`: a job names it as its `parent`";
    if kind.is_job() {
        [
            &[INCOMPLETE, NOT_ACTIVE],
            &[
                "`invalid_status_transition`: not an allowed status change",
                INCOMPLETE,
            ],
            &[
                "`job_not_empty`: the job has results, time logs or files",
                PARENT,
            ],
        ]
    } else if kind.key == QUANTITY_RESULT.key {
        [&[DIRECTION, NOT_ACTIVE], &[DIRECTION], &[PARENT, HAS_FILES]]
    } else {
        [&[NOT_ACTIVE], &[], &[PARENT, HAS_FILES]]
    }
}

/// The 409 reason of a document created in a workspace that is not active.
const NOT_ACTIVE: &str =
    "`workspace_not_active`: the workspace's invitation is pending or was declined";

/// Documents are added only to an active workspace: not while the invited
/// party has not accepted, nor after it declined.
fn check_active(ws: &Workspace) -> ApiResult<()> {
    match ws.state {
        State::Active => Ok(()),
        state => Err(ApiError::conflict(
            "workspace_not_active",
            format!(
                "No documents can be added to this workspace: its invitation {}",
                if state == State::Pending {
                    "has not been accepted yet"
                } else {
                    "was declined"
                }
            ),
        )),
    }
}

/// A job's `client` and `vendor` name organizations of the workspace's own
/// parties. A value already stored is left alone (a job made before this
/// rule stays patchable).
fn check_job_parties(
    ws: &Workspace,
    body: &Map<String, Value>,
    old: Option<&Document>,
) -> ApiResult<()> {
    let parties = ws.party_ids();
    for field in ["client", "vendor"] {
        let Some(id) = text(body, field) else {
            continue;
        };
        let stored = old.and_then(|d| text(&d.body, field));
        if stored != Some(id) && !parties.contains(&id) {
            let named: Vec<String> = parties.iter().map(|p| format!("\"{p}\"")).collect();
            return Err(ApiError::invalid(
                field,
                format!(
                    "`{field}` must be one of this workspace's parties ({}), not \"{id}\"",
                    named.join(" or ")
                ),
            ));
        }
    }
    Ok(())
}

/// What a create must pass whatever its body holds: the workspace is active.
/// Checked once for an array of documents, before its items (each item then
/// passes it again in [`before_write`], as a single create does).
pub fn before_create(place: &Placement<'_>) -> ApiResult<()> {
    check_active(place.workspace)
}

/// Checks and completes a normalised body before it is stored. `old` is the
/// stored version on PATCH.
pub fn before_write(
    conn: &Conn,
    kind: &kinds::Kind,
    place: &Placement<'_>,
    doc_id: &str,
    body: &mut Map<String, Value>,
    old: Option<&Document>,
) -> ApiResult<()> {
    if old.is_none() {
        check_active(place.workspace)?;
    }
    pin(kind.fields, body, "workspace", &place.workspace.id)?;
    match place.job {
        Some(job) => pin(kind.fields, body, "parent", &job.id)?,
        None => check_parent(conn, place.workspace, doc_id, body)?,
    }
    if kind.key == JOB.key {
        job_defaults(kind.fields, place.workspace, body, old.is_none());
        check_job_parties(place.workspace, body, old)?;
        check_transition(conn, doc_id, body, old)?;
    } else if kind.key == QUANTITY_RESULT.key {
        if let (Some(job), Some(direction)) = (place.job, text(body, "direction")) {
            if store::quantity_with_direction(conn, &job.id, direction, doc_id)?.is_some() {
                return Err(ApiError::conflict(
                    "duplicate_direction",
                    format!(
                        "This job already has a {direction} quantity result; a job has one per direction"
                    ),
                ));
            }
        }
    } else if kind.key == TIMELOG.key {
        if let (Some(start), Some(end)) = (text(body, "start"), text(body, "end")) {
            // Both are normalised to the same UTC form, so text order is time order.
            if end < start {
                return Err(ApiError::invalid("end", "`end` must not be before `start`"));
            }
        }
    }
    Ok(())
}

/// `workspace` and `parent` come from the path; a body may repeat them, not contradict them.
fn pin(
    fields: &[kinds::Field],
    body: &mut Map<String, Value>,
    field: &str,
    id: &str,
) -> ApiResult<()> {
    match body.get(field).and_then(Value::as_str) {
        Some(given) if given != id => Err(ApiError::invalid(
            field,
            format!("`{field}` must be \"{id}\" (the one in the path) or be left out"),
        )),
        _ => {
            put_in_place(fields, body, field, Value::String(id.to_string()));
            Ok(())
        }
    }
}

/// Sets `field` of `body`: in place when it is there, else where the kind's
/// table puts it, so that a body in the documented order (as `schema::check`
/// leaves it) stays in it and `prepare` need not sort it again (a sort made
/// the whole map anew: 8,000-10,000 instructions of the writer per create).
fn put_in_place(fields: &[kinds::Field], body: &mut Map<String, Value>, field: &str, value: Value) {
    if let Some(slot) = body.get_mut(field) {
        *slot = value;
        return;
    }
    let place = |name: &str| fields.iter().position(|f| f.name == name);
    let index = match place(field) {
        Some(at) => body
            .keys()
            .take_while(|key| place(key).is_some_and(|p| p < at))
            .count(),
        None => body.len(),
    };
    body.shift_insert(index, field.to_string(), value);
}

/// A job's `parent`, when given, is another document of the same workspace.
fn check_parent(
    conn: &Conn,
    ws: &Workspace,
    doc_id: &str,
    body: &Map<String, Value>,
) -> ApiResult<()> {
    let Some(parent) = text(body, "parent").filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    if parent == doc_id || store::get_any(conn, &ws.id, parent)?.is_none() {
        return Err(ApiError::invalid(
            "parent",
            format!(
                "`parent` must be the id of another document in this workspace (got \"{parent}\")"
            ),
        ));
    }
    Ok(())
}

/// A job always has a status (`pending` unless told otherwise: a PATCH that
/// clears it asks for `pending`); a new job names the workspace's parties.
fn job_defaults(
    fields: &[kinds::Field],
    ws: &Workspace,
    body: &mut Map<String, Value>,
    creating: bool,
) {
    if !body.contains_key("status") {
        put_in_place(fields, body, "status", Value::String("pending".into()));
    }
    if !creating {
        return;
    }
    for (field, party) in [("vendor", &ws.vendor.id), ("client", &ws.client.id)] {
        if let Some(id) = party
            && !body.contains_key(field)
        {
            put_in_place(fields, body, field, Value::String(id.clone()));
        }
    }
}

const TRANSITIONS: &[(&str, &str)] = &[
    ("pending", "active"),
    ("pending", "cancelled"),
    ("active", "complete"),
    ("active", "cancelled"),
    ("complete", "active"),
    ("cancelled", "pending"),
];

fn check_transition(
    conn: &Conn,
    job_id: &str,
    body: &Map<String, Value>,
    old: Option<&Document>,
) -> ApiResult<()> {
    let new = text(body, "status").unwrap_or("pending");
    let previous = old.and_then(|d| text(&d.body, "status"));
    if let Some(previous) = previous {
        if previous != new && !TRANSITIONS.contains(&(previous, new)) {
            return Err(ApiError::conflict(
                "invalid_status_transition",
                format!(
                    "A job cannot go from {previous} to {new}; allowed: pending->active, \
                     pending->cancelled, active->complete, active->cancelled, complete->active, \
                     cancelled->pending"
                ),
            ));
        }
    }
    if new == "complete" && previous != Some("complete") {
        check_complete(conn, job_id, body)?;
    }
    Ok(())
}

/// A job completes only with what it requested.
fn check_complete(conn: &Conn, job_id: &str, body: &Map<String, Value>) -> ApiResult<()> {
    let counts = store::children(conn, job_id)?;
    let has = |kind: &str| counts.iter().any(|(k, n)| k == kind && *n > 0);
    let mut missing = Vec::new();
    if flag(body, "requested.quality") && !has("qualityResult") {
        missing.push("a quality result");
    }
    if flag(body, "requested.quantity") && !has("quantityResult") {
        missing.push("a quantity result");
    }
    if flag(body, "requested.timelog") && !has("timelog") {
        missing.push("a time log");
    }
    if text(body, "activity") == Some("discharge")
        && flag(body, "requested.quantity")
        && !has("loadPortInformation")
    {
        missing.push("load port information (a discharge job that requested quantity)");
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(ApiError::conflict(
            "job_incomplete",
            format!(
                "The job cannot be completed: it still needs {}",
                missing.join(", ")
            ),
        ))
    }
}

/// A job with results, time logs or files cannot be deleted; nor can a
/// document with attachments.
pub fn before_delete(conn: &Conn, doc: &Document) -> ApiResult<()> {
    let children = store::parent_of_count(conn, &doc.workspace_id, &doc.id)?;
    if children > 0 {
        return Err(ApiError::conflict(
            "document_in_use",
            format!(
                "{children} job(s) name this {} as their parent; change those first",
                doc.kind.noun
            ),
        ));
    }
    let attachments = store::attachment_count(conn, &doc.id)?;
    if doc.kind.is_job() {
        let children: i64 = store::children(conn, &doc.id)?.iter().map(|(_, n)| n).sum();
        if children > 0 || attachments > 0 {
            return Err(ApiError::conflict(
                "job_not_empty",
                format!(
                    "The job still has {children} result(s) or time log(s) and {attachments} file(s); delete those first"
                ),
            ));
        }
    } else if attachments > 0 {
        return Err(ApiError::conflict(
            "document_has_attachments",
            format!(
                "The {} still has {attachments} attachment(s); delete those first",
                doc.kind.noun
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::schema::is_in_documented_order;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    /// `routes::create_many` checks every item of a certificate before it
    /// stores any, which is right only while no rule of a kind that takes
    /// certificates reads the job's other documents: in `before_write`, the
    /// job's transitions and the quantity result's one per direction do.
    #[test]
    fn no_kind_that_takes_certificates_has_a_rule_reading_its_job_s_documents() {
        let reading = [JOB.key, QUANTITY_RESULT.key];
        let bulk: Vec<&str> = kinds::ALL
            .iter()
            .filter(|kind| kind.bulk)
            .map(|kind| kind.key)
            .collect();
        assert!(!bulk.is_empty());
        assert!(bulk.iter().all(|key| !reading.contains(key)), "{bulk:?}");
    }

    /// A field set by the rules lands where the kind's table puts it, so a
    /// body in documented order stays in it; a field already there keeps
    /// its place.
    #[test]
    fn fields_set_by_the_rules_keep_the_documented_order() {
        let fields = JOB.fields;
        let place = |name: &str| fields.iter().position(|f| f.name == name).unwrap();
        // Three fields the table lists apart, in its order.
        let mut names = ["xref", "status", "eta", "workspace", "client"];
        names.sort_by_key(|name| place(name));
        let mut body = Map::new();
        for name in [names[0], names[2], names[4]] {
            body.insert(name.to_string(), json!("x"));
        }
        assert!(is_in_documented_order(fields, &body));
        put_in_place(fields, &mut body, names[3], json!("set"));
        put_in_place(fields, &mut body, names[1], json!("set"));
        assert!(is_in_documented_order(fields, &body), "{body:?}");
        assert_eq!(body.keys().collect::<Vec<_>>(), names.to_vec());
        // One already there is replaced where it is.
        put_in_place(fields, &mut body, names[0], json!("again"));
        assert_eq!(body.keys().next().map(String::as_str), Some(names[0]));
        assert_eq!(body[names[0]], json!("again"));
        // A body out of order stays readable: the field is added, and
        // `prepare` sorts the whole body as before.
        let mut unordered = map(json!({"eta": "x", "xref": "y"}));
        put_in_place(fields, &mut unordered, "status", json!("pending"));
        assert_eq!(unordered["status"], json!("pending"));
        assert_eq!(unordered.len(), 3);
    }
}
