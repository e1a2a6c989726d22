//! Rows the writer keeps between its writes: the few a write reads before it
//! changes anything, and that most writes read again (the path's workspace,
//! the job a result goes under, a catalog record found by its xref). Each is
//! a statement less per write (a round trip less on PostgreSQL).
//!
//! Only the writer thread keeps rows (`writer::current_transaction`); on any
//! other thread [`row`] and [`row_by`] just read. What is kept stays true
//! because every change of them is seen:
//! - the change log's capture sees every change of a covered table's row,
//!   and [`forget`]s that row when it records the write that changed it
//!   (`changes::capture::record`), before the batch's next write runs;
//! - everything is forgotten ([`clear`]) whenever the writer rolls anything
//!   back (a write that failed, a batch that did not commit), and when
//!   another process or the CLI wrote since this writer's last transaction
//!   (`Conn::begin_writing`: PostgreSQL's `change_log.commits`, SQLite's
//!   `data_version`), exactly when the capture forgets what it keeps
//!   (`writer::Capture::discard`);
//! - a write's own changes are forgotten only once it is recorded, so a
//!   write reads through kept rows only what it has not changed itself:
//!   the callers read their rows first (the scope and the job before the
//!   write's own work; a catalog record by xref before it creates or
//!   changes any).
//!
//! Bounded: past [`MOST`] rows, all are forgotten.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;

/// Rows (and aliases) kept at most before all are forgotten: a job's body
/// may take a few KiB, and the writes of a busy site name a few jobs and
/// records at a time.
const MOST: usize = 1_000;

#[derive(Default)]
struct Rows {
    /// By table, then id; the value is the row as its module reads it.
    rows: HashMap<&'static str, HashMap<String, Box<dyn Any>>>,
    /// Another key of a row (a catalog record's workspace, catalog and xref)
    /// to its id, by table; only as good as the row it names is kept.
    aliases: HashMap<&'static str, HashMap<String, String>>,
    /// Rows and aliases kept.
    count: usize,
}

thread_local! {
    static KEPT: RefCell<Rows> = RefCell::default();
}

fn on_writer() -> bool {
    super::writer::current_transaction().is_some()
}

/// The row `id` of `table`: kept, or read by `read` (and kept when found).
/// A row not found is not kept: a write may create it.
pub fn row<V, E>(
    table: &'static str,
    id: &str,
    read: impl FnOnce() -> Result<Option<V>, E>,
) -> Result<Option<V>, E>
where
    V: Clone + 'static,
{
    kept_or_read(table, || kept(table, id), read, |_| id.to_string(), None)
}

/// The row of `table` with the other key `alias`: kept, or read by `read`
/// (and kept, with its id given by `id_of`, when found).
pub fn row_by<V, E>(
    table: &'static str,
    alias: &str,
    id_of: impl Fn(&V) -> &str,
    read: impl FnOnce() -> Result<Option<V>, E>,
) -> Result<Option<V>, E>
where
    V: Clone + 'static,
{
    let by_alias = || {
        let id = KEPT.with(|kept| {
            kept.borrow()
                .aliases
                .get(table)
                .and_then(|aliases| aliases.get(alias))
                .cloned()
        });
        id.and_then(|id| kept(table, &id))
    };
    kept_or_read(table, by_alias, read, |v| id_of(v).to_string(), Some(alias))
}

/// On the writer's thread, what `kept` finds, or else what `read` reads,
/// kept under the id `id_of` gives (and `alias`); elsewhere, what `read`
/// reads.
fn kept_or_read<V, E>(
    table: &'static str,
    kept: impl FnOnce() -> Option<V>,
    read: impl FnOnce() -> Result<Option<V>, E>,
    id_of: impl FnOnce(&V) -> String,
    alias: Option<&str>,
) -> Result<Option<V>, E>
where
    V: Clone + 'static,
{
    if !on_writer() {
        return read();
    }
    if let Some(found) = kept() {
        return Ok(Some(found));
    }
    let found = read()?;
    if let Some(value) = &found {
        keep(table, id_of(value), alias, value.clone());
    }
    Ok(found)
}

fn kept<V: Clone + 'static>(table: &str, id: &str) -> Option<V> {
    KEPT.with(|kept| {
        kept.borrow()
            .rows
            .get(table)
            .and_then(|rows| rows.get(id))
            .and_then(|value| value.downcast_ref::<V>())
            .cloned()
    })
}

fn keep<V: 'static>(table: &'static str, id: String, alias: Option<&str>, value: V) {
    KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.count >= MOST {
            *kept = Rows::default();
        }
        kept.count += 1 + usize::from(alias.is_some());
        if let Some(alias) = alias {
            kept.aliases
                .entry(table)
                .or_default()
                .insert(alias.to_string(), id.clone());
        }
        kept.rows
            .entry(table)
            .or_default()
            .insert(id, Box::new(value));
    });
}

/// Forgets the row `id` of `table` (a write changed it); its aliases then
/// name nothing kept.
pub fn forget(table: &str, id: &str) {
    KEPT.with(|kept| {
        if let Some(rows) = kept.borrow_mut().rows.get_mut(table) {
            rows.remove(id);
        }
    });
}

/// Forgets every row (something was rolled back, or written elsewhere).
pub fn clear() {
    KEPT.with(|kept| *kept.borrow_mut() = Rows::default());
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::db::writer::as_writer;

    /// A read that counts its calls and finds `found`.
    fn counted<'a>(
        calls: &'a Cell<u32>,
        found: Option<&'a str>,
    ) -> impl FnOnce() -> Result<Option<String>, ()> + 'a {
        move || {
            calls.set(calls.get() + 1);
            Ok(found.map(String::from))
        }
    }

    #[test]
    fn off_the_writer_thread_every_row_is_read() {
        let calls = Cell::new(0);
        for _ in 0..3 {
            let row = row("workspaces", "w", counted(&calls, Some("row")));
            assert_eq!(row, Ok(Some("row".to_string())));
        }
        assert_eq!(calls.get(), 3);
    }

    #[test]
    fn the_writer_reads_a_row_once_until_it_is_forgotten() {
        as_writer(|| {
            let calls = Cell::new(0);
            let read = |calls| row("workspaces", "w", counted(calls, Some("one")));
            assert_eq!(read(&calls), Ok(Some("one".to_string())));
            assert_eq!(read(&calls), Ok(Some("one".to_string())));
            assert_eq!(calls.get(), 1);
            // Another table's row of the same id is another row.
            forget("documents", "w");
            assert_eq!(read(&calls), Ok(Some("one".to_string())));
            assert_eq!(calls.get(), 1);
            forget("workspaces", "w");
            read(&calls).unwrap();
            assert_eq!(calls.get(), 2);
            clear();
            read(&calls).unwrap();
            assert_eq!(calls.get(), 3);
            // A row not found is read again: a write may create it.
            let missing = Cell::new(0);
            for _ in 0..2 {
                assert_eq!(row("workspaces", "x", counted(&missing, None)), Ok(None));
            }
            assert_eq!(missing.get(), 2);
        });
    }

    #[test]
    fn a_row_found_by_another_key_is_kept_as_long_as_the_row_is() {
        as_writer(|| {
            let calls = Cell::new(0);
            let by_xref = |calls| {
                row_by(
                    "catalog_items",
                    "w/tests/DEN",
                    |item: &String| item.as_str(),
                    counted(calls, Some("item-1")),
                )
            };
            assert_eq!(by_xref(&calls), Ok(Some("item-1".to_string())));
            assert_eq!(by_xref(&calls), Ok(Some("item-1".to_string())));
            assert_eq!(calls.get(), 1);
            // Kept under its id too.
            let by_id = Cell::new(0);
            assert_eq!(
                row("catalog_items", "item-1", counted(&by_id, Some("other"))),
                Ok(Some("item-1".to_string()))
            );
            assert_eq!(by_id.get(), 0);
            // The row changed: its other key reads again.
            forget("catalog_items", "item-1");
            by_xref(&calls).unwrap();
            assert_eq!(calls.get(), 2);
        });
    }

    #[test]
    fn past_the_bound_every_row_is_forgotten() {
        as_writer(|| {
            let calls = Cell::new(0);
            row("workspaces", "first", counted(&calls, Some("first"))).unwrap();
            for n in 0..MOST {
                let id = format!("w{n}");
                row("workspaces", &id, || Ok::<_, ()>(Some(id.clone()))).unwrap();
            }
            row("workspaces", "first", counted(&calls, Some("first"))).unwrap();
            assert_eq!(calls.get(), 2);
        });
    }
}
