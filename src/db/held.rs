//! Counts that writes add to, held on the writer's thread until their batch's
//! end, so that a batch changes each counted row once.
//!
//! A quality result adds one to the count of uses of each of its three catalog
//! items; sixteen of them in one batch updated the same three rows sixteen
//! times, one statement each (on PostgreSQL sent ahead, on SQLite an UPDATE
//! and, for an item's first use, an INSERT). Held, they are one upsert for
//! the batch (on SQLite one per row: `Dialect::rows_per_insert`), just
//! before its COMMIT ([`flush_batch`]), with the sums.
//!
//! What stays true:
//! - A count is read only after what is held for it is sent ([`flush`]): a
//!   write that reads or decrements a count (a catalog record's delete, a
//!   document's change or delete) flushes first, so it sees every addition
//!   made before it in the batch, its own included.
//! - Nothing held outlives its write when the write is undone: the writer
//!   ends every write with [`write_ended`] (kept or not), and every rolled
//!   back batch with [`clear`]. What a write flushed of the writes before it
//!   is held again when its savepoint is rolled back, since the rollback took
//!   it back.
//! - The rows are sent in the order of their keys, so two processes adding
//!   to the same rows lock them in the same order.
//!
//! Outside the writer's batches (the CLI, a write run elsewhere) [`add`]
//! holds nothing: it adds at once.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::Conn;

/// A table of counts: a key column and a count column, which an upsert adds to.
pub struct Counter {
    pub table: &'static str,
    pub key: &'static str,
    pub count: &'static str,
    /// The upsert's text for 1 to `MOST_ROWS_PER_INSERT` rows.
    texts: OnceLock<Vec<String>>,
}

impl Counter {
    pub const fn new(table: &'static str, key: &'static str, count: &'static str) -> Counter {
        Counter {
            table,
            key,
            count,
            texts: OnceLock::new(),
        }
    }

    /// The upsert adding to `rows` rows (1 to `MOST_ROWS_PER_INSERT`).
    fn upsert(&self, rows: usize) -> &str {
        let texts = self.texts.get_or_init(|| {
            (1..=super::dialect::MOST_ROWS_PER_INSERT)
                .map(|count| {
                    let values: Vec<String> = (0..count)
                        .map(|i| format!("(?{}, ?{})", 2 * i + 1, 2 * i + 2))
                        .collect();
                    format!(
                        "INSERT INTO {table} ({key}, {n}) VALUES {} \
                         ON CONFLICT ({key}) DO UPDATE SET {n} = {table}.{n} + excluded.{n}",
                        values.join(", "),
                        table = self.table,
                        key = self.key,
                        n = self.count,
                    )
                })
                .collect()
        });
        &texts[rows - 1]
    }
}

/// Amounts held, by counter table and key.
type Amounts = BTreeMap<(&'static str, String), (&'static Counter, i64)>;

#[derive(Default)]
struct Held {
    /// The running write's additions.
    write: Amounts,
    /// The batch's, from the writes kept so far.
    batch: Amounts,
    /// What the running write sent of `batch` ([`flush`]): held again if the
    /// write is undone.
    flushed: Amounts,
}

thread_local! {
    static HELD: RefCell<Held> = RefCell::default();
}

fn merge(into: &mut Amounts, from: Amounts) {
    for (key, (counter, amount)) in from {
        into.entry(key).or_insert((counter, 0)).1 += amount;
    }
}

/// Adds each `(key, amount)` of `amounts` (distinct keys) to `counter`:
/// held to the batch's end when the writer runs a batch, sent at once
/// anywhere else.
pub fn add(conn: &Conn, counter: &'static Counter, amounts: &[(String, i64)]) -> super::Result<()> {
    let add_to = |into: &mut Amounts| {
        for (key, amount) in amounts {
            into.entry((counter.table, key.clone()))
                .or_insert((counter, 0))
                .1 += amount;
        }
    };
    if super::writer::current_transaction().is_none() {
        let mut now = Amounts::new();
        add_to(&mut now);
        return send(conn, now);
    }
    HELD.with(|held| add_to(&mut held.borrow_mut().write));
    Ok(())
}

/// Sends everything held (the batch's and the running write's), before a
/// statement that reads or changes a count.
pub fn flush(conn: &Conn) -> super::Result<()> {
    let (write, batch) = HELD.with(|held| {
        let mut held = held.borrow_mut();
        let write = std::mem::take(&mut held.write);
        let batch = std::mem::take(&mut held.batch);
        merge(&mut held.flushed, batch.clone());
        (write, batch)
    });
    let mut all = batch;
    merge(&mut all, write);
    send(conn, all)
}

/// The writer, before the batch's COMMIT: sends what its kept writes hold.
pub(crate) fn flush_batch(conn: &Conn) -> super::Result<()> {
    let batch = HELD.with(|held| std::mem::take(&mut held.borrow_mut().batch));
    send(conn, batch)
}

/// The writer, after each write: `kept` (its changes stay in the batch), or
/// not (what it held is dropped, and what it flushed of the writes before
/// it is held again: its savepoint's rollback took that back).
pub(crate) fn write_ended(kept: bool) {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        let write = std::mem::take(&mut held.write);
        let flushed = std::mem::take(&mut held.flushed);
        if kept {
            merge(&mut held.batch, write);
        } else {
            merge(&mut held.batch, flushed);
        }
    });
}

/// The writer, when a batch is rolled back: nothing held stands.
pub(crate) fn clear() {
    HELD.with(|held| *held.borrow_mut() = Held::default());
}

/// One upsert per counter and as many rows as the engine prefers
/// (`Dialect::rows_per_insert`), sent ahead where the engine does, in key
/// order; rows whose amount came to zero are left alone.
fn send(conn: &Conn, amounts: Amounts) -> super::Result<()> {
    let mut rows: Vec<(&'static Counter, String, i64)> = amounts
        .into_iter()
        .filter(|(_, (_, amount))| *amount != 0)
        .map(|((_, key), (counter, amount))| (counter, key, amount))
        .collect();
    while !rows.is_empty() {
        let counter = rows[0].0;
        let same = rows
            .iter()
            .take(conn.dialect().rows_per_insert())
            .take_while(|(c, _, _)| std::ptr::eq(*c, counter))
            .count();
        let chunk: Vec<_> = rows.drain(..same).collect();
        let values: Vec<&dyn super::ToSql> = chunk
            .iter()
            .flat_map(|(_, key, amount)| [key as &dyn super::ToSql, amount as &dyn super::ToSql])
            .collect();
        conn.prepare_cached(counter.upsert(chunk.len()))?
            .execute_ahead(values.as_slice())?;
    }
    Ok(())
}
