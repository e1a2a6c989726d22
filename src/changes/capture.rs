//! Recording changes in the transaction that makes them.
//!
//! [`install`] puts TEMP triggers on every covered table (`sources.rs`) of one
//! connection: each insert, update and delete hands the row's key to a
//! function of this process (`quayside_change_note`), which keeps it in
//! memory, and a delete also keeps a copy of the row in the in-memory table
//! `temp.gone_<table>`. [`record`] then turns what one write noted into change
//! entries, in the same transaction, right after the write's own savepoint:
//! the writer thread calls it after every write (`db::writer::Capture`), so no
//! handler can forget it, and fails the whole batch if it cannot record. A write
//! that fails is rolled back with its copies, and its notes are dropped
//! ([`discard`]).
//!
//! Temp tables live in memory and never reach the WAL. Only connections that
//! installed the triggers record changes: the writer thread's and the CLI's
//! import. Another program writing the file (the sqlite3 shell) is not seen.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::db::{Conn, params};

use super::sources::{Items, Kept, SHADOWED, SOURCES, Source, Tables};
use crate::error::ApiResult;

/// The tenants owning a workspace's client and vendor organizations, as far
/// as they are its members (an invited party that has not accepted is not):
/// who may read its records. Organizations never change their owner; a
/// workspace's members change only with its row, which forgets what is kept.
type Parties = (Option<String>, Option<String>);

/// What the capture keeps between writes of one connection.
#[derive(Default)]
pub struct State {
    /// Each workspace's [`Parties`].
    tenants: Kept<Parties>,
    items: Items,
    /// What the triggers noted since the last [`record`] or [`discard`].
    notes: Arc<Mutex<Vec<Pending>>>,
}

/// Drops what a write that failed had noted (its rows were rolled back), and
/// what was kept of rows it may have read.
pub fn discard(state: &State) {
    state
        .notes
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clear();
    state.items.clear();
    state.tenants.clear();
}

/// The SQL function the triggers call: `(table, key1, key2, op, old status,
/// new status)`.
const NOTE: &str = "quayside_change_note";

/// What one change did to its row, net over one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Net {
    Created,
    Updated,
    Deleted,
}

/// The copy of `table`'s deleted rows.
fn gone(table: &str) -> String {
    format!("temp.gone_{table}")
}

/// Creates the note function, the temp tables and the triggers on `conn`
/// (once per connection).
pub fn install(conn: &Conn, state: &State) -> crate::db::Result<()> {
    let notes = state.notes.clone();
    conn.create_procedure(NOTE, 6, move |args| {
        // Keys are text, but a rowid (a shadowed table's key) is an integer.
        let text = |i: usize| -> crate::db::Result<Option<String>> {
            use crate::db::ValueRef;
            Ok(match args[i] {
                ValueRef::Null => None,
                ValueRef::Integer(n) => Some(n.to_string()),
                ValueRef::Real(x) => Some(x.to_string()),
                ValueRef::Text(t) | ValueRef::Blob(t) => {
                    Some(String::from_utf8_lossy(t).into_owned())
                }
            })
        };
        let mut key = vec![text(1)?.unwrap_or_default()];
        if let Some(k2) = text(2)? {
            key.push(k2);
        }
        let note = Pending {
            table: text(0)?.unwrap_or_default(),
            key,
            op: text(3)?.unwrap_or_default(),
            old_status: text(4)?,
            new_status: text(5)?,
        };
        notes.lock().unwrap_or_else(|p| p.into_inner()).push(note);
        Ok(())
    })?;
    let mut sql = String::new();
    for table in SHADOWED {
        // Noted too, so that `record` clears the copies after the write.
        let note = format!("SELECT {NOTE}('{table}', OLD.rowid, NULL, 's', NULL, NULL);");
        sql.push_str(&copy_on_delete(conn, table, Some(note))?);
    }
    for source in &SOURCES {
        let key = |row: &str| {
            let k1 = format!("{row}.{}", source.key[0]);
            let k2 = source
                .key
                .get(1)
                .map_or("NULL".to_string(), |k| format!("{row}.{k}"));
            (k1, k2)
        };
        let status = |row: &str| {
            source
                .status
                .map_or("NULL".to_string(), |(column, _)| format!("{row}.{column}"))
        };
        let note = |op: &str, row: &str, old: String, new: String| {
            let (k1, k2) = key(row);
            format!(
                "SELECT {NOTE}('{table}', {k1}, {k2}, '{op}', {old}, {new});",
                table = source.table
            )
        };
        let t = source.table;
        sql.push_str(&format!(
            "CREATE TEMP TRIGGER IF NOT EXISTS change_{t}_insert AFTER INSERT ON main.{t} \
             BEGIN {} END;\n",
            note("c", "NEW", "NULL".into(), status("NEW"))
        ));
        sql.push_str(&format!(
            "CREATE TEMP TRIGGER IF NOT EXISTS change_{t}_update AFTER UPDATE ON main.{t} \
             BEGIN {} END;\n",
            note("u", "NEW", status("OLD"), status("NEW"))
        ));
        sql.push_str(&copy_on_delete(
            conn,
            t,
            Some(note("d", "OLD", status("OLD"), "NULL".into())),
        )?);
    }
    conn.execute_batch(&sql)
}

/// The copy table of `table` and its delete trigger, which also runs `then`.
fn copy_on_delete(conn: &Conn, table: &str, then: Option<String>) -> crate::db::Result<String> {
    let columns: Vec<String> = conn
        .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    let old: Vec<String> = columns.iter().map(|c| format!("OLD.{c}")).collect();
    Ok(format!(
        "CREATE TEMP TABLE IF NOT EXISTS gone_{table} AS SELECT * FROM main.{table} WHERE 0;
         CREATE TEMP TRIGGER IF NOT EXISTS change_{table}_delete AFTER DELETE ON main.{table}
         BEGIN
             INSERT INTO temp.gone_{table} ({}) VALUES ({});
             {}
         END;\n",
        columns.join(", "),
        old.join(", "),
        then.unwrap_or_default()
    ))
}

/// A covered table and a row's key in it.
type RowKey = (String, Vec<String>);
/// The net effect on one row so far (`None`: none at all), with its status
/// before the write and after it.
type Effect = (Option<Net>, Option<String>, Option<String>);

/// One noted change.
struct Pending {
    table: String,
    key: Vec<String>,
    op: String,
    old_status: Option<String>,
    new_status: Option<String>,
}

/// Turns what the current write noted into change entries by `actor`; returns
/// the last sequence appended, if any. Runs in the write's transaction.
pub fn record(conn: &Conn, actor: &str, state: &State) -> ApiResult<Option<u64>> {
    let pending = std::mem::take(&mut *state.notes.lock().unwrap_or_else(|p| p.into_inner()));
    if pending.is_empty() {
        return Ok(None);
    }
    // One entry per record, in the order the write first touched them, with
    // the net effect of all it did to the record.
    let mut order: Vec<(String, Vec<String>)> = Vec::new();
    let mut net: HashMap<RowKey, Effect> = HashMap::new();
    let mut deletes = false;
    for p in pending {
        let id = (p.table, p.key);
        let op = match p.op.as_str() {
            "c" => Net::Created,
            "u" => Net::Updated,
            "d" => Net::Deleted,
            // A shadowed table's delete: no entry, but its copy is cleared below.
            _ => {
                deletes = true;
                continue;
            }
        };
        deletes |= op == Net::Deleted;
        if id.0 == "catalog_items" {
            state.items.forget(&id.1[0]);
        }
        match net.get_mut(&id) {
            None => {
                order.push(id.clone());
                net.insert(id, (Some(op), p.old_status, p.new_status));
            }
            Some((state, _, new_status)) => {
                *state = match (*state, op) {
                    // Made and removed within one write: nothing happened.
                    (Some(Net::Created) | None, Net::Deleted) => None,
                    (Some(Net::Created), _) => Some(Net::Created),
                    (None, _) => Some(Net::Created),
                    (_, Net::Deleted) => Some(Net::Deleted),
                    _ => Some(Net::Updated),
                };
                *new_status = p.new_status;
            }
        }
    }
    let now = crate::clock::now_ms();
    let blobs = if deletes {
        format!(
            "(SELECT id, size, sha256 FROM main.blobs UNION ALL \
             SELECT id, size, sha256 FROM {})",
            gone("blobs")
        )
    } else {
        "main.blobs".to_string()
    };
    let tenants = &state.tenants;
    let items = &state.items;
    let mut last = None;
    for id in order {
        let Some((Some(state), old_status, new_status)) = net.remove(&id) else {
            continue;
        };
        let (table, key) = id;
        let Some(source) = SOURCES.iter().find(|s| s.table == table) else {
            continue;
        };
        let from = Tables {
            table: match state {
                Net::Deleted => format!("(SELECT * FROM {} ORDER BY rowid DESC)", gone(&table)),
                _ => format!("main.{table}"),
            },
            blobs: blobs.clone(),
            items,
        };
        let Some(rendered) = (source.render)(conn, &from, &key)? else {
            log::warn!("change log: {table} {key:?} changed but cannot be read back");
            continue;
        };
        let verb = verb(source, state, old_status.as_deref(), new_status.as_deref());
        if table == "workspaces" {
            // The workspace itself changed: its parties may have too.
            tenants.forget(&key[0]);
        }
        let (client, vendor) = match &rendered.workspace_id {
            Some(workspace) => tenants.get_or(workspace, || workspace_tenants(conn, workspace))?,
            None => (None, None),
        };
        if state == Net::Deleted && table == "workspaces" {
            tenants.forget(&key[0]);
        }
        conn.prepare_cached(
            "INSERT INTO changes (event_id, type, entity_type, entity_id, feed, workspace_id, \
             client_tenant, vendor_tenant, actor, occurred_at, record) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?
        .execute(params![
            uuid::Uuid::now_v7().to_string(),
            format!("{}.{verb}", rendered.entity),
            rendered.entity_type,
            rendered.entity_id,
            rendered.feed.key(),
            rendered.workspace_id,
            client,
            vendor,
            actor,
            now,
            rendered.record,
        ])?;
        last = Some(conn.last_insert_rowid() as u64);
    }
    if deletes {
        for table in SOURCES.iter().map(|s| s.table).chain(SHADOWED) {
            conn.execute(&format!("DELETE FROM {}", gone(table)), [])?;
        }
    }
    Ok(last)
}

/// The event verb of a net change.
fn verb(source: &Source, state: Net, old: Option<&str>, new: Option<&str>) -> &'static str {
    match state {
        Net::Created => "created",
        Net::Deleted => "deleted",
        Net::Updated => match source.status {
            Some((_, inactive)) if old != new && new == Some(inactive) => "deactivated",
            Some((_, inactive)) if old != new && old == Some(inactive) => "activated",
            _ => "updated",
        },
    }
}

/// The tenants of a workspace's member parties (`Workspace::members`): who
/// may read its records. A workspace deleted in this write is read from its
/// copy.
fn workspace_tenants(conn: &Conn, workspace: &str) -> crate::db::Result<Parties> {
    use crate::workspaces::store::get_from;
    let found = match get_from(conn, "main.workspaces", workspace)? {
        Some(found) => Some(found),
        None => get_from(conn, &gone("workspaces"), workspace)?,
    };
    Ok(found.map_or((None, None), |ws| {
        let (client, vendor) = ws.members();
        (client.map(String::from), vendor.map(String::from))
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::db::Conn;

    use crate::db::Db;
    use crate::error::ApiError;

    fn open() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(
            &dir.path().join("capture.db"),
            2,
            None,
            Arc::new(crate::changes::Capture::default()),
        )
        .unwrap();
        (dir, db)
    }

    fn org(conn: &Conn, id: &str, name: &str) -> crate::db::Result<usize> {
        conn.execute(
            "INSERT INTO organizations (id, name, name_folded, audience, created_at, updated_at) \
             VALUES (?1, ?2, lower(?2), 't', 1, 1)",
            [id, name],
        )
    }

    async fn log(db: &Db) -> Vec<(String, String, String, String)> {
        db.read(|conn, _| {
            Ok(conn
                .prepare("SELECT type, entity_id, actor, record FROM changes ORDER BY seq")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<Result<_, _>>()?)
        })
        .await
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_entry_per_record_with_the_net_effect_of_the_write() {
        let (_dir, db) = open();
        let actor: Arc<str> = Arc::from("alice");
        // Created and renamed in one write: one `created`, as it ended.
        db.write_as(actor.clone(), |conn| {
            org(conn, "a", "First")?;
            conn.execute(
                "UPDATE organizations SET name = 'Renamed' WHERE id = 'a'",
                [],
            )?;
            // Created and removed in the same write: nothing happened.
            org(conn, "b", "Fleeting")?;
            conn.execute("DELETE FROM organizations WHERE id = 'b'", [])?;
            Ok(())
        })
        .await
        .unwrap();
        // A write that fails leaves no entry.
        let failed = db
            .write_as(actor.clone(), |conn| {
                org(conn, "c", "Refused")?;
                Err::<(), _>(ApiError::conflict("test", "refused"))
            })
            .await;
        assert!(failed.is_err());
        // A delete carries the record as it last was.
        db.write_as(actor.clone(), |conn| {
            conn.execute("DELETE FROM organizations WHERE id = 'a'", [])?;
            Ok(())
        })
        .await
        .unwrap();
        let entries = log(&db).await;
        let summary: Vec<(&str, &str, &str)> = entries
            .iter()
            .map(|(t, id, actor, _)| (t.as_str(), id.as_str(), actor.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                ("organization.created", "a", "alice"),
                ("organization.deleted", "a", "alice")
            ]
        );
        for (_, _, _, record) in &entries {
            let record: serde_json::Value = serde_json::from_str(record).unwrap();
            assert_eq!(record["body"]["name"], "Renamed");
            assert_eq!(record["type"], "svc.hub.organization");
        }
        assert_eq!(*db.changes_head().borrow(), 2);
        db.close().unwrap();
    }
}
