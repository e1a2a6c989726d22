//! Why the store could not be opened or closed: the errors of startup and
//! shutdown, each naming the file and the step that failed, with the error
//! underneath kept as its `source()` (print them with [`crate::error::chain`]).

use std::fmt;
use std::path::PathBuf;

use super::checkpoint::CheckpointError;
use super::migrate::MigrateError;

#[derive(Debug)]
pub enum StoreError {
    /// The file cannot be opened (or created) with the standard pragmas.
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// The schema cannot be created or brought to this binary's version.
    Migrate { path: PathBuf, source: MigrateError },
    /// A setting of the writer's connection (`what`: "cap the page count", ...)
    /// could not be applied.
    Pragma {
        path: PathBuf,
        what: &'static str,
        source: super::Error,
    },
    /// The pool of read-only connections could not be filled.
    Pool { path: PathBuf, source: r2d2::Error },
    /// The background checkpoint could not start.
    Checkpointer {
        path: PathBuf,
        source: CheckpointError,
    },
    /// A PostgreSQL database could not be used (`what`: "connect to", ...;
    /// `target`: the database, described without its password).
    Postgres {
        what: &'static str,
        target: String,
        source: super::pg::Error,
    },
    /// The checkpoint on close, which folds the WAL back into the file, failed.
    Checkpoint {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// A thread of the store (`what`) could not be started.
    Thread {
        what: &'static str,
        source: std::io::Error,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Open { path, .. } => write!(f, "cannot open {}", path.display()),
            StoreError::Migrate { path, .. } => write!(f, "cannot use {}", path.display()),
            StoreError::Pragma { path, what, .. } => {
                write!(f, "cannot {what} on {}", path.display())
            }
            StoreError::Pool { path, .. } => {
                write!(f, "cannot open the reader pool on {}", path.display())
            }
            StoreError::Checkpointer { path, .. } => write!(
                f,
                "cannot start the background checkpoint of {}",
                path.display()
            ),
            StoreError::Checkpoint { path, .. } => {
                write!(f, "the final checkpoint of {} failed", path.display())
            }
            StoreError::Postgres { what, target, .. } => write!(f, "cannot {what} {target}"),
            StoreError::Thread { what, .. } => write!(f, "cannot start {what}"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Open { source, .. } | StoreError::Checkpoint { source, .. } => Some(source),
            StoreError::Pragma { source, .. } => Some(source),
            StoreError::Migrate { source, .. } => Some(source),
            StoreError::Pool { source, .. } => Some(source),
            StoreError::Checkpointer { source, .. } => Some(source),
            StoreError::Postgres { source, .. } => Some(source),
            StoreError::Thread { source, .. } => Some(source),
        }
    }
}
