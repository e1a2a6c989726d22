//! The change log and its feeds.
//!
//! Every change of a covered record (`sources.rs`) is appended to the table
//! `changes` in the same transaction as the change itself: the writer thread
//! runs [`capture::record`] after every write, in the batch's transaction
//! right after the write's savepoint (`db::writer::Capture`; a failure to
//! record fails the batch). So there is no committed change without its entry
//! and no entry without its committed change. `seq` grows strictly in commit
//! order: one writer, and the file's write lock for the CLI; on PostgreSQL,
//! the `change_log` row lock every writing transaction takes first, with
//! `seq` = `change_log.head` + 1 under it (`capture::record`).
//!
//! Readers page through the log by `seq` ([`read`]), seeing exactly the
//! entries of records they may read: location records for everyone signed in,
//! organizations for everyone signed in, a workspace's records for the tenants
//! owning its client and vendor organizations as they were members when the
//! change was made (`Workspace::members`: not an invited party before it
//! accepted), and admins. Retention
//! ([`retention`]) removes old entries and remembers how far it went, so a
//! cursor from before that answers 410, never a silent gap.

pub mod capture;
pub mod retention;
pub mod routes;
pub mod sources;

use std::fmt::Write as _;

use crate::db::{Conn, OptionalExtension, params};

use crate::error::{ApiError, ApiResult};
use sources::FeedName;

/// Whose visibility a read applies.
#[derive(Clone, Debug)]
pub struct Viewer {
    pub tenant: String,
    pub is_admin: bool,
}

/// Which entries a read covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Feed {
    /// Everything the viewer may read: locations, organizations, workspaces.
    Everything,
    /// The location catalogs.
    Locations,
    /// One workspace's records (the caller checks it may see the workspace).
    Workspace(String),
}

/// Most entries one read answers.
pub const LIMIT_MAX: usize = 1000;
/// Entries one read answers when the client names no `limit`.
pub const LIMIT_DEFAULT: usize = 100;
/// Most entries one read looks at: entries the viewer may not read are
/// skipped, and `next` moves past them, so a reader far behind in a busy log
/// advances in bounded steps.
const SCAN_MAX: usize = 10 * LIMIT_MAX;

/// Every event type: `<entity>.<verb>`.
pub fn event_types() -> Vec<String> {
    let mut out = Vec::new();
    for (entity, has_status) in sources::entities() {
        for verb in ["created", "updated", "deleted"] {
            out.push(format!("{entity}.{verb}"));
        }
        if has_status {
            out.push(format!("{entity}.activated"));
            out.push(format!("{entity}.deactivated"));
        }
    }
    out
}

/// A set of event types: exact names, or `<entity>.*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeFilter {
    names: Vec<String>,
}

impl TypeFilter {
    /// Comma-separated names, as the query parameter `name` gives them.
    pub fn parse(text: &str, name: &str) -> ApiResult<TypeFilter> {
        let names: Vec<String> = text
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(String::from)
            .collect();
        TypeFilter::from_list(&names, name).map_err(|err| match err {
            ApiError::BadRequest { message, .. } => ApiError::invalid_query(name, message),
            other => other,
        })
    }

    /// A list of names; each must be a known type or `<entity>.*`.
    pub fn from_list(names: &[String], field: &str) -> ApiResult<TypeFilter> {
        if names.is_empty() {
            return Err(ApiError::invalid(
                field,
                "Name at least one event type, e.g. `job.created` or `qualityResult.*`",
            ));
        }
        let known = event_types();
        let entities = sources::entities();
        for name in names {
            let valid = known.contains(name)
                || name
                    .strip_suffix(".*")
                    .is_some_and(|entity| entities.iter().any(|(e, _)| *e == entity));
            if !valid {
                return Err(ApiError::BadRequest {
                    code: "invalid_field",
                    message: format!(
                        "Unknown event type \"{name}\"; types are `<entity>.<verb>` or \
                         `<entity>.*` with entities {} and verbs created, updated, deleted \
                         (and activated, deactivated for port and inlandFacility)",
                        entities
                            .iter()
                            .map(|(e, _)| *e)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    field: Some(field.to_string()),
                });
            }
        }
        Ok(TypeFilter {
            names: names.to_vec(),
        })
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn matches(&self, event_type: &str) -> bool {
        self.names.iter().any(|name| match name.strip_suffix('*') {
            Some(prefix) => event_type.starts_with(prefix),
            None => name == event_type,
        })
    }
}

/// One read of the log.
#[derive(Clone, Debug)]
pub struct Query {
    pub feed: Feed,
    /// The last sequence the reader has seen (0: from the start).
    pub since: u64,
    pub limit: usize,
    pub types: Option<TypeFilter>,
}

/// One change, rendered.
#[derive(Clone, Debug)]
pub struct Entry {
    pub seq: u64,
    pub event_id: String,
    pub event_type: String,
    pub workspace_id: Option<String>,
    /// The change as one JSON object: what the feeds list and a webhook POSTs.
    pub json: String,
}

/// What a read answers: the entries, and the cursor to continue from.
#[derive(Clone, Debug)]
pub struct Page {
    pub entries: Vec<Entry>,
    pub next: u64,
    /// The log's head when it was read: a `next` below it means more is
    /// there to read now (the page was full, or the read looked at as many
    /// entries as it may), not only after the next commit.
    pub head: u64,
}

impl Page {
    /// Whether the read reached the head: nothing past `next` until the
    /// next commit.
    pub fn caught_up(&self) -> bool {
        self.next >= self.head
    }

    /// `{"changes": [...], "next": N}`, written straight from the entries.
    pub fn to_json(&self) -> String {
        let size: usize = self.entries.iter().map(|e| e.json.len() + 1).sum();
        let mut out = String::with_capacity(size + 32);
        out.push_str("{\"changes\":[");
        for (i, entry) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&entry.json);
        }
        let _ = write!(out, "],\"next\":{}}}", self.next);
        out
    }
}

const ENTRY_COLUMNS: &str = "seq, event_id, type, entity_type, entity_id, workspace_id, actor, \
     occurred_at, record, feed, client_tenant, vendor_tenant";

/// A row's sequence, and whether `viewer` wants it: it may read the record
/// and its type passes the filter. Reads only the small columns.
fn wanted(
    row: &crate::db::Row<'_>,
    viewer: &Viewer,
    types: Option<&TypeFilter>,
) -> crate::db::Result<(u64, bool)> {
    let seq = row.get::<_, i64>(0)? as u64;
    let visible = viewer.is_admin
        || row.get_ref(9)?.as_str()? == FeedName::Locations.key()
        || match row.get_ref(5)?.as_str_or_null()? {
            // Organizations: readable by everyone signed in.
            None => true,
            // A workspace's records: its client's and vendor's tenants.
            Some(_) => {
                row.get_ref(10)?.as_str_or_null()? == Some(viewer.tenant.as_str())
                    || row.get_ref(11)?.as_str_or_null()? == Some(viewer.tenant.as_str())
            }
        };
    let passes = match types {
        None => true,
        Some(types) => types.matches(row.get_ref(2)?.as_str()?),
    };
    Ok((seq, visible && passes))
}

/// A row of `changes` as an [`Entry`], its JSON written straight from the
/// columns (the record is stored as JSON text and copied as it is).
fn from_row(row: &crate::db::Row<'_>) -> crate::db::Result<Entry> {
    let seq: i64 = row.get(0)?;
    let event_id: String = row.get(1)?;
    let event_type: String = row.get(2)?;
    let entity_type = row.get_ref(3)?.as_str()?;
    let entity_id = row.get_ref(4)?.as_str()?;
    let workspace_id: Option<String> = row.get(5)?;
    let actor = row.get_ref(6)?.as_str()?;
    let occurred_at: i64 = row.get(7)?;
    let record = row.get_ref(8)?.as_str()?;
    let mut json = String::with_capacity(record.len() + 256);
    let text = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let _ = write!(
        json,
        "{{\"seq\":{seq},\"event_id\":{},\"type\":{},\"entity_type\":{},\"entity_id\":{},\
         \"workspace_id\":{},\"actor\":{},\"occurred_at\":\"{}\",\"record\":{record}}}",
        text(&event_id),
        text(&event_type),
        text(entity_type),
        text(entity_id),
        workspace_id.as_deref().map_or("null".to_string(), text),
        text(actor),
        crate::clock::format_ms(occurred_at),
    );
    Ok(Entry {
        seq: seq as u64,
        event_id,
        event_type,
        workspace_id,
        json,
    })
}

/// The last sequence committed (0 for an empty log).
pub fn head(conn: &Conn) -> crate::db::Result<u64> {
    let seq: Option<i64> = conn
        .prepare_cached("SELECT max(seq) FROM changes")?
        .query_row([], |row| row.get(0))?;
    Ok(seq.unwrap_or(0) as u64)
}

/// The highest sequence retention has removed (0: none).
pub fn trimmed_through(conn: &Conn) -> crate::db::Result<u64> {
    let seq: i64 = conn
        .prepare_cached("SELECT trimmed_through FROM change_log WHERE id = 1")?
        .query_row([], |row| row.get(0))?;
    Ok(seq as u64)
}

/// One entry by its sequence, whoever may read it (webhook redelivery).
pub fn entry(conn: &Conn, seq: u64) -> crate::db::Result<Option<Entry>> {
    conn.prepare_cached(&format!(
        "SELECT {ENTRY_COLUMNS} FROM changes WHERE seq = ?1"
    ))?
    .query_row([seq as i64], from_row)
    .optional()
}

/// The entries after `query.since` that `viewer` may read, at most
/// `query.limit`, and the cursor to continue from. 410 when entries after
/// `since` were already removed by retention.
pub fn read(conn: &Conn, viewer: &Viewer, query: &Query) -> ApiResult<Page> {
    let trimmed = trimmed_through(conn)?;
    let head = head(conn)?;
    // A cursor below what retention removed has lost entries; one above the
    // head comes from another copy of the file (a restored backup): both
    // would be a silent gap.
    if query.since < trimmed || query.since > head {
        return Err(ApiError::CursorExpired {
            since: query.since,
            trimmed_through: trimmed,
            next: head,
        });
    }
    let limit = query.limit.clamp(1, LIMIT_MAX);
    let since = query.since;
    // Looked at: a range of sequences, or (one workspace, through its
    // index) a number of entries; bounded either way.
    let range_end = since.saturating_add(SCAN_MAX as u64).min(head);
    let mut statement = match &query.feed {
        Feed::Everything => conn.prepare_cached(&format!(
            "SELECT {ENTRY_COLUMNS} FROM changes WHERE seq > ?1 AND seq <= ?2 ORDER BY seq"
        ))?,
        Feed::Locations => conn.prepare_cached(&format!(
            "SELECT {ENTRY_COLUMNS} FROM changes WHERE seq > ?1 AND seq <= ?2 \
             AND feed = 'locations' ORDER BY seq"
        ))?,
        Feed::Workspace(_) => conn.prepare_cached(&format!(
            "SELECT {ENTRY_COLUMNS} FROM changes WHERE workspace_id = ?3 AND seq > ?1 \
             ORDER BY seq LIMIT ?2"
        ))?,
    };
    let mut rows = match &query.feed {
        Feed::Workspace(workspace) => {
            statement.query(params![since as i64, SCAN_MAX as i64, workspace])?
        }
        _ => statement.query(params![since as i64, range_end as i64])?,
    };
    let mut entries = Vec::new();
    let mut last_seen = since;
    let mut scanned = 0usize;
    let mut full = false;
    while let Some(row) = rows.next()? {
        scanned += 1;
        let (seq, wanted) = wanted(&row, viewer, query.types.as_ref())?;
        last_seen = seq;
        if wanted {
            entries.push(from_row(&row)?);
            if entries.len() == limit {
                full = true;
                break;
            }
        }
    }
    let next = if full {
        last_seen
    } else {
        match query.feed {
            // Every entry of the range was looked at.
            Feed::Everything | Feed::Locations => range_end,
            // Every entry of the workspace up to the head was looked at, in
            // this read's snapshot.
            Feed::Workspace(_) if scanned < SCAN_MAX => head,
            Feed::Workspace(_) => last_seen,
        }
    };
    Ok(Page {
        entries,
        next: next.max(since),
        head,
    })
}

/// Installs the change log's capture on the writer (see `db::writer::Capture`).
#[derive(Default)]
pub struct Capture {
    state: capture::State,
}

impl Capture {
    /// How many writes had their changes confirmed after they were
    /// deferred (PostgreSQL: `capture::defer`), since the capture was made.
    pub fn confirmed(&self) -> u64 {
        capture::confirmed(&self.state)
    }
}

impl crate::db::writer::Capture for Capture {
    fn install(&self, conn: &Conn) -> crate::db::Result<()> {
        capture::install(conn, &self.state)
    }

    fn record(&self, conn: &Conn, actor: &str) -> ApiResult<Option<u64>> {
        capture::record(conn, actor, &self.state)
    }

    fn hold(&self, conn: &Conn, actor: &str) -> ApiResult<Option<u64>> {
        capture::hold(conn, actor, &self.state)
    }

    fn defer(&self, conn: &Conn, actor: &str, wrote: bool) -> ApiResult<bool> {
        capture::defer(conn, actor, wrote, &self.state)
    }

    fn deferring(&self) -> bool {
        capture::deferring(&self.state)
    }

    fn settle(&self, conn: &Conn) -> ApiResult<()> {
        capture::settle(conn, &self.state)
    }

    fn append_held(&self, conn: &Conn) -> ApiResult<Option<u64>> {
        capture::append_held(conn, &self.state)
    }

    fn drop_held(&self) {
        capture::drop_held(&self.state)
    }

    fn discard(&self) {
        capture::discard(&self.state)
    }

    fn head(&self, conn: &Conn) -> crate::db::Result<u64> {
        capture::head(conn)
    }

    fn tidy(&self, conn: &Conn) -> crate::db::Result<()> {
        capture::tidy(conn, &self.state)
    }
}
