//! Jobs and the documents attached to a job (load port information, quantity
//! results, quality results, time logs): one generic implementation, driven by
//! the per-kind tables in [`kinds`].

pub mod kinds;
mod plans;
pub mod routes;
pub mod rules;
pub mod schema;
pub mod store;

use serde_json::{Map, Value};

pub use kinds::Kind;

/// A stored document.
#[derive(Clone, Debug)]
pub struct Document {
    pub id: String,
    pub workspace_id: String,
    pub kind: &'static Kind,
    /// The job a result belongs to; `None` for a job.
    pub job_id: Option<String>,
    pub body: Map<String, Value>,
    pub created_at: i64,
    pub updated_at: i64,
}
