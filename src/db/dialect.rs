//! The SQL that differs between the storage engines, in one place.
//!
//! Stores, lists and the change log write SQL both engines take; where the
//! engines differ (a JSON path, a list parameter, a substring test, planner
//! hints, where NULLs sort), they ask the connection's [`Dialect`]
//! (`conn.dialect()`) for the fragment.

/// Which engine a connection speaks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// The SQL fragments of one engine.
#[derive(Debug)]
pub struct Dialect {
    pub engine: Engine,
}

/// SQLite's.
pub static SQLITE: Dialect = Dialect {
    engine: Engine::Sqlite,
};

/// PostgreSQL's.
pub static POSTGRES: Dialect = Dialect {
    engine: Engine::Postgres,
};
