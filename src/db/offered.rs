//! A write's own rendering of a row it has just written, offered to the
//! change log's capture so that the capture need not read the row back and
//! render it again (`changes::capture::record`). A document's create renders
//! its body as it reads for its own answer; the capture would otherwise parse
//! the stored body, look up its catalog references and render the same thing
//! a second time, in the writer, for every document written.
//!
//! An offer is only as good as the row it shows, so it is withdrawn the
//! moment that row, or a row it depends on (a catalog record its body shows
//! expanded), changes again: the capture's row hook calls [`withdraw`] for
//! every change of a covered table's row, before the change. An offer that
//! survives to the capture's record is therefore what reading the row back
//! would give; the capture reads back everything else, and in builds with
//! debug assertions (the test suite) it reads back the offered rows too and
//! fails the write if the two differ.
//!
//! Offers are taken only on the writer's thread, on a connection whose
//! changes the capture sees (`Conn::withdraw_offers`):
//! - A data file's connection carries the capture's row hook, which withdraws
//!   offers as above, before each change.
//! - PostgreSQL's changes are noted by triggers, out of sight of the process
//!   until the capture takes the write's notes back, all at once and after
//!   the fact. There an offer is made only of a row the write has changed
//!   through its store ([`wrote`], which the store calls right after its
//!   statement), and [`settle`] keeps it only when the notes show that row
//!   changed exactly once (that change, before the offer) and no row it
//!   depends on changed at all (before or after the offer: the notes do not
//!   say which). Anything else is read back, as without an offer.
//!
//! Everything offered is dropped when the capture has recorded the write
//! ([`clear`]) and whenever the writer rolls anything back. On PostgreSQL
//! a write that offered every row it changed through its stores hands its
//! offers to the capture instead ([`set_aside`]), which renders them at
//! once and checks them against the write's notes later
//! (`changes::capture::defer`).

use std::any::Any;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use super::Conn;

/// A table and a row's key in it.
type Row = (&'static str, String);

#[derive(Default)]
struct Offers {
    /// The offered renderings, by row.
    shown: HashMap<Row, Box<dyn Any + Send>>,
    /// For each row some offer depends on, the offered rows that depend on it.
    dependents: HashMap<Row, Vec<Row>>,
    /// The rows the write changed through its store (PostgreSQL: [`wrote`]).
    written: HashSet<Row>,
    /// The offered rows whose value can be rendered only once the answers of
    /// the statements sent ahead are read ([`offer_later`]).
    later: HashSet<Row>,
}

thread_local! {
    static OFFERS: RefCell<Offers> = RefCell::default();
}

/// The row `key` (the values of its one or two key columns) of `table`, as
/// the map holds it: the values joined by `/`. Built only when some offer
/// stands.
fn row(table: &'static str, key: &[&str]) -> Row {
    (table, row_name(key))
}

/// Offers `render()`'s value as the rendering of the row `key` of `table`,
/// valid while neither that row nor any row of `depends` (a table and a
/// one-column key) changes. Does nothing (and does not render) where the
/// capture would not see such a change (see the module's documentation).
pub fn offer<V: Any + Send>(
    conn: &Conn,
    table: &'static str,
    key: &[&str],
    depends: impl IntoIterator<Item = (&'static str, String)>,
    render: impl FnOnce() -> V,
) {
    if super::writer::current_transaction().is_none() || !conn.withdraws_offers() {
        return;
    }
    let row = row(table, key);
    let after_the_fact = conn.dialect().engine == super::dialect::Engine::Postgres;
    if after_the_fact && OFFERS.with(|offers| !offers.borrow().written.contains(&row)) {
        return;
    }
    let value: Box<dyn Any + Send> = Box::new(render());
    OFFERS.with(|offers| {
        let mut offers = offers.borrow_mut();
        for depend in depends {
            offers
                .dependents
                .entry(depend)
                .or_default()
                .push(row.clone());
        }
        offers.later.remove(&row);
        offers.shown.insert(row, value);
    });
}

/// [`offer`] of a value that can be rendered only once the answers of the
/// statements the write sent ahead have been read (a row its statement
/// returns: `Statement::query_ahead`). The capture renders it then, never
/// before its notes are taken.
pub fn offer_later<V: Any + Send>(conn: &Conn, table: &'static str, key: &[&str], value: V) {
    let mut made = false;
    offer(conn, table, key, [], || {
        made = true;
        value
    });
    if made {
        OFFERS.with(|offers| offers.borrow_mut().later.insert(row(table, key)));
    }
}

/// The write has just changed the row `key` of `table` through its store: on
/// PostgreSQL, what it offers of that row next may be kept ([`settle`]).
/// Nothing on SQLite, whose row hook withdraws offers as rows change.
pub fn wrote(conn: &Conn, table: &'static str, key: &[&str]) {
    if conn.dialect().engine != super::dialect::Engine::Postgres
        || super::writer::current_transaction().is_none()
        || !conn.withdraws_offers()
    {
        return;
    }
    let row = row(table, key);
    OFFERS.with(|offers| offers.borrow_mut().written.insert(row));
}

/// PostgreSQL, before the capture renders a write's changes: `noted` are the
/// rows the write's notes name, one item per note, in any order. An offered
/// row noted once keeps its offer (the note is the change [`wrote`] saw
/// before the offer); one noted more often loses it (it changed again), as
/// does every offer showing a noted row.
pub fn settle<'a>(noted: impl IntoIterator<Item = (&'static str, &'a [&'a str])>) {
    OFFERS.with(|offers| {
        let mut offers = offers.borrow_mut();
        if offers.shown.is_empty() {
            return;
        }
        let mut times: HashMap<Row, usize> = HashMap::new();
        for (table, key) in noted {
            *times.entry(row(table, key)).or_default() += 1;
        }
        for (noted, times) in times {
            for dependent in offers.dependents.remove(&noted).unwrap_or_default() {
                offers.shown.remove(&dependent);
            }
            if times != 1 {
                offers.shown.remove(&noted);
            }
        }
    });
}

/// The row `key` of `table` is about to change: its offer, and the offers of
/// the rows that depend on it, no longer hold.
pub fn withdraw(table: &'static str, key: &[&str]) {
    OFFERS.with(|offers| {
        let mut offers = offers.borrow_mut();
        if offers.shown.is_empty() {
            return;
        }
        let row = row(table, key);
        offers.shown.remove(&row);
        for dependent in offers.dependents.remove(&row).unwrap_or_default() {
            offers.shown.remove(&dependent);
        }
    });
}

/// Takes the offer for the row `key` of `table`, if one stands.
pub fn take(table: &'static str, key: &[&str]) -> Option<Box<dyn Any>> {
    OFFERS.with(|offers| {
        let mut offers = offers.borrow_mut();
        if offers.shown.is_empty() {
            return None;
        }
        offers
            .shown
            .remove(&row(table, key))
            .map(|offer| offer as Box<dyn Any>)
    })
}

/// An offered row set aside: its table, its [`row_name`] and the offer.
pub type SetAside = (&'static str, String, Box<dyn Any + Send>, Rendering);

/// When a set-aside offer can be rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rendering {
    Now,
    /// Once the statements sent ahead are answered ([`offer_later`]).
    Later,
}

/// What a write offered, taken out for the capture to render now and check
/// later (`changes::capture::defer`, PostgreSQL): the offered rows (a table
/// and the values of its key columns joined by `/`) with their offers, when
/// there is at least one, every row the write changed through its store
/// ([`wrote`]) is offered, and `renders` says it can render each offer's
/// table; `None` (and nothing taken) otherwise.
pub fn set_aside(renders: impl Fn(&str) -> bool) -> Option<Vec<SetAside>> {
    OFFERS.with(|offers| {
        let mut offers = offers.borrow_mut();
        let whole = !offers.shown.is_empty()
            && offers
                .written
                .iter()
                .all(|row| offers.shown.contains_key(row))
            && offers.shown.keys().all(|(table, _)| renders(table));
        if !whole {
            return None;
        }
        let taken = std::mem::take(&mut *offers);
        Some(
            (taken.shown.into_iter())
                .map(|((table, key), offer)| {
                    let when = if taken.later.contains(&(table, key.clone())) {
                        Rendering::Later
                    } else {
                        Rendering::Now
                    };
                    (table, key, offer, when)
                })
                .collect(),
        )
    })
}

/// The row `key` of `table` as [`set_aside`] names it.
pub fn row_name(key: &[&str]) -> String {
    key.join("/")
}

/// Drops every offer.
pub fn clear() {
    OFFERS.with(|offers| {
        let mut offers = offers.borrow_mut();
        if !offers.shown.is_empty() || !offers.dependents.is_empty() || !offers.written.is_empty() {
            *offers = Offers::default();
        }
    });
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::db::writer::as_writer;

    /// A connection whose row hook says it withdraws offers (the test
    /// withdraws them itself).
    fn hooked() -> Conn {
        let conn = Conn::memory().unwrap();
        conn.on_row_change(|_| {}).unwrap();
        conn.withdraw_offers().unwrap();
        conn
    }

    fn taken(table: &'static str, key: &[&str]) -> Option<u32> {
        take(table, key).map(|offer| *offer.downcast::<u32>().unwrap())
    }

    #[test]
    fn nothing_is_offered_off_the_writer_or_where_changes_go_unseen() {
        let rendered = Cell::new(0);
        let render = || {
            rendered.set(rendered.get() + 1);
            1_u32
        };
        offer(&hooked(), "documents", &["d"], [], render);
        assert_eq!(taken("documents", &["d"]), None);
        as_writer(|| {
            let rendered = Cell::new(0);
            let unhooked = Conn::memory().unwrap();
            // A hook that does not say it withdraws offers, and one set
            // after the one that said so: offers would go unchecked.
            let silent = Conn::memory().unwrap();
            silent.on_row_change(|_| {}).unwrap();
            let replaced = hooked();
            replaced.on_row_change(|_| {}).unwrap();
            for conn in [&unhooked, &silent, &replaced] {
                offer(conn, "documents", &["d"], [], || {
                    rendered.set(1);
                    1_u32
                });
                assert_eq!(taken("documents", &["d"]), None);
            }
            let nobody = "an offer nobody may take is not rendered";
            assert_eq!(rendered.get(), 0, "{nobody}");
            offer(&hooked(), "documents", &["d"], [], || 2_u32);
            assert_eq!(taken("documents", &["d"]), Some(2));
        });
        assert_eq!(rendered.get(), 0);
    }

    #[test]
    fn settled_offers_stand_only_where_the_notes_say_they_hold() {
        as_writer(|| {
            let conn = hooked();
            let item = |id: &str| ("catalog_items", id.to_string());
            offer(&conn, "documents", &["a"], [item("i1")], || 1_u32);
            offer(&conn, "documents", &["b"], [], || 2_u32);
            offer(&conn, "documents", &["c"], [item("i2")], || 3_u32);
            offer(&conn, "locations", &["ports", "NLRTM"], [], || 4_u32);
            // In any order: `a` noted once, but an item it shows changed;
            // `b` changed again after its offer; `c` and the port once each.
            settle([
                ("documents", &["b"][..]),
                ("documents", &["a"][..]),
                ("locations", &["ports", "NLRTM"][..]),
                ("catalog_items", &["i1"][..]),
                ("documents", &["c"][..]),
                ("documents", &["b"][..]),
            ]);
            assert_eq!(taken("documents", &["a"]), None);
            assert_eq!(taken("documents", &["b"]), None);
            assert_eq!(taken("documents", &["c"]), Some(3));
            assert_eq!(taken("locations", &["ports", "NLRTM"]), Some(4));
        });
    }

    #[test]
    fn an_offer_stands_until_its_row_or_a_row_it_shows_changes() {
        as_writer(|| {
            let conn = hooked();
            let item = |id: &str| ("catalog_items", id.to_string());
            offer(&conn, "documents", &["a"], [item("i1"), item("i2")], || {
                1_u32
            });
            offer(&conn, "documents", &["b"], [item("i2")], || 2_u32);
            offer(&conn, "documents", &["c"], [item("i3")], || 3_u32);
            offer(&conn, "locations", &["ports", "NLRTM"], [], || 4_u32);
            // Another table's row of the same key is another row.
            withdraw("catalog_items", &["a"]);
            withdraw("locations", &["ports", "NLRTM2"]);
            // An item two documents show: both offers go.
            withdraw("catalog_items", &["i2"]);
            assert_eq!(taken("documents", &["a"]), None);
            assert_eq!(taken("documents", &["b"]), None);
            withdraw("documents", &["c"]);
            assert_eq!(taken("documents", &["c"]), None);
            assert_eq!(taken("locations", &["ports", "NLRTM"]), Some(4));
            // Taken once.
            assert_eq!(taken("locations", &["ports", "NLRTM"]), None);
            offer(&conn, "documents", &["d"], [], || 5_u32);
            clear();
            assert_eq!(taken("documents", &["d"]), None);
        });
    }
}
