//! The PostgreSQL layer's one error type: the server's SQLSTATE sorted into
//! what the service tells apart (docs/design/postgresql.md, 3.5), every
//! variant keeping its source.

use tokio_postgres::error::SqlState;

use super::placeholders::PlaceholderError;

#[derive(Debug)]
pub enum Error {
    /// The connection string is not one this layer accepts (`what` says why
    /// in a sentence for an administrator).
    Config {
        what: String,
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// A statement's placeholders could not be rewritten.
    Placeholder {
        sql: String,
        source: PlaceholderError,
    },
    /// 23505: a unique constraint or index refused the row.
    Unique {
        constraint: Option<String>,
        source: tokio_postgres::Error,
    },
    /// 40001 (serialization failure), 40P01 (deadlock detected), 55P03 (lock
    /// not available): nothing is wrong with the request; it may be retried.
    Busy(tokio_postgres::Error),
    /// The connection is gone or could not be made: SQLSTATE class 08, the
    /// server ending the session (57P01-57P03), an I/O error, a closed
    /// connection. The transaction, if any, did not commit.
    Lost(tokio_postgres::Error),
    /// 53100: the server's disk is full.
    DiskFull(tokio_postgres::Error),
    /// The database's collation is not C: text would sort otherwise than on
    /// SQLite (bytewise), and the lists' cursors depend on that order.
    Collation { found: String },
    /// The database holds a schema version newer than this binary knows.
    Newer { found: i64 },
    /// The database holds a schema version older than `first`, the version the
    /// PostgreSQL schema starts at: no step brings it forward.
    Unsupported { found: i64, first: i64 },
    /// The database has tables but no Quayside schema version.
    Foreign,
    /// The connection has ended (the server closed it): nothing more will
    /// arrive on it.
    Closed,
    /// The driver's runtime could not be made (the process is out of file
    /// descriptors or memory).
    Runtime(std::io::Error),
    /// Anything else, as the driver reported it.
    Other(tokio_postgres::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The SQLSTATE the server sent, if the error came from the server.
    pub fn code(&self) -> Option<&str> {
        self.driver()
            .and_then(tokio_postgres::Error::code)
            .map(SqlState::code)
    }

    /// The driver's error this one was made from.
    pub fn driver(&self) -> Option<&tokio_postgres::Error> {
        match self {
            Error::Unique { source, .. }
            | Error::Busy(source)
            | Error::Lost(source)
            | Error::DiskFull(source)
            | Error::Other(source) => Some(source),
            _ => None,
        }
    }

    pub(crate) fn config(what: impl Into<String>) -> Error {
        Error::Config {
            what: what.into(),
            source: None,
        }
    }
}

/// Whether the connection is gone: class 08, the server's shutdown codes, or
/// no server answer at all.
fn is_lost(error: &tokio_postgres::Error, code: Option<&str>) -> bool {
    if let Some(code) = code {
        return code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03");
    }
    error.is_closed() || std::error::Error::source(error).is_some_and(|s| s.is::<std::io::Error>())
}

impl From<tokio_postgres::Error> for Error {
    fn from(error: tokio_postgres::Error) -> Error {
        let code = error.code().map(SqlState::code);
        match code {
            Some("23505") => Error::Unique {
                constraint: error
                    .as_db_error()
                    .and_then(|db| db.constraint())
                    .map(str::to_owned),
                source: error,
            },
            Some("40001" | "40P01" | "55P03") => Error::Busy(error),
            Some("53100") => Error::DiskFull(error),
            _ if is_lost(&error, code) => Error::Lost(error),
            _ => Error::Other(error),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The driver's own text for a server error is only "db error": the
        // server's message is in its source, shown here.
        let server =
            |f: &mut std::fmt::Formatter<'_>, what: &str, e: &tokio_postgres::Error| match e
                .as_db_error()
            {
                Some(db) => write!(f, "{what}: {db}"),
                None => match std::error::Error::source(e) {
                    Some(source) => write!(f, "{what}: {e}: {source}"),
                    None => write!(f, "{what}: {e}"),
                },
            };
        match self {
            Error::Config { what, source } => match source {
                Some(source) => write!(f, "{what}: {source}"),
                None => f.write_str(what),
            },
            Error::Placeholder { sql, source } => write!(f, "{source} in: {sql}"),
            Error::Unique { constraint, source } => match constraint {
                Some(name) => server(f, &format!("unique constraint {name} violated"), source),
                None => server(f, "unique constraint violated", source),
            },
            Error::Busy(e) => server(f, "the database is busy (retry)", e),
            Error::Lost(e) => server(f, "the connection to PostgreSQL is lost", e),
            Error::DiskFull(e) => server(f, "the PostgreSQL server's disk is full", e),
            Error::Collation { found } => write!(
                f,
                "the database's collation is {found}; Quayside needs collation C (bytewise text \
                 order): create it with CREATE DATABASE ... LC_COLLATE 'C' LC_CTYPE 'C' \
                 TEMPLATE template0"
            ),
            Error::Newer { found } => write!(
                f,
                "this database has Quayside schema version {found}, newer than this binary \
                 understands (version {}); use a newer quayside binary",
                crate::db::migrate::CURRENT_VERSION
            ),
            Error::Unsupported { found, first } => write!(
                f,
                "this database has Quayside schema version {found}; on PostgreSQL there are \
                 no migration steps before version {first}"
            ),
            Error::Foreign => f.write_str(
                "this database has tables but no Quayside schema version (quayside_meta): \
                 it is not a Quayside database",
            ),
            Error::Closed => f.write_str("the connection to PostgreSQL has ended"),
            Error::Runtime(e) => write!(f, "cannot start the PostgreSQL driver: {e}"),
            Error::Other(e) => server(f, "PostgreSQL", e),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Config { source, .. } => source.as_deref().map(|s| s as _),
            Error::Placeholder { source, .. } => Some(source),
            Error::Unique { source, .. }
            | Error::Busy(source)
            | Error::Lost(source)
            | Error::DiskFull(source)
            | Error::Other(source) => Some(source),
            Error::Runtime(source) => Some(source),
            Error::Closed
            | Error::Collation { .. }
            | Error::Newer { .. }
            | Error::Unsupported { .. }
            | Error::Foreign => None,
        }
    }
}
