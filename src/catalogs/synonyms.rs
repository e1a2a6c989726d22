//! Synonym links: two records of one catalog in one workspace that describe
//! the same thing. A link is symmetric; `baseItem` and `linkedItem` are only
//! the order in which it was made.

use crate::db::Value as SqlValue;
use crate::db::{Conn, OptionalExtension, params};
use serde_json::{Value, json};

use crate::envelope::Entity;
use crate::listing::{ListQuery, Page, fetch_page};

pub const ENTITY_TYPE: &str = "svc.hub.synonym";

#[derive(Clone, Debug)]
pub struct Synonym {
    pub id: String,
    pub workspace_id: String,
    pub catalog: String,
    pub base_item: String,
    pub linked_item: String,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Entity for Synonym {
    const ENTITY_TYPE: &'static str = ENTITY_TYPE;

    fn id(&self) -> &str {
        &self.id
    }

    fn body(&self) -> Value {
        json!({"workspace": self.workspace_id, "baseItem": self.base_item, "linkedItem": self.linked_item})
    }

    fn stamps(&self) -> (i64, i64) {
        (self.created_at, self.updated_at)
    }
}

impl Synonym {
    /// The record at the other end of the link from `item`.
    pub fn other(&self, item: &str) -> &str {
        if self.base_item == item {
            &self.linked_item
        } else {
            &self.base_item
        }
    }
}

const COLUMNS: &str = "id, workspace_id, catalog, base_item, linked_item, created_at, updated_at";

fn from_row(row: &crate::db::Row<'_>) -> crate::db::Result<Synonym> {
    Ok(Synonym {
        id: row.get(0)?,
        workspace_id: row.get(1)?,
        catalog: row.get(2)?,
        base_item: row.get(3)?,
        linked_item: row.get(4)?,
        created_at: row.get(5)?,
        updated_at: row.get(6)?,
    })
}

/// A link row of `table`: `synonyms`, or the change log's copy of a deleted
/// row (see `changes::capture`).
pub fn get_from(conn: &Conn, table: &str, id: &str) -> crate::db::Result<Option<Synonym>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM {table} WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// The link between two records, in either direction.
pub fn find(conn: &Conn, a: &str, b: &str) -> crate::db::Result<Option<Synonym>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM synonyms WHERE (base_item = ?1 AND linked_item = ?2) \
         OR (base_item = ?2 AND linked_item = ?1)"
    ))?
    .query_row(params![a, b], from_row)
    .optional()
}

pub fn insert(conn: &Conn, link: &Synonym) -> crate::db::Result<()> {
    conn.prepare_cached(
        "INSERT INTO synonyms (id, workspace_id, catalog, base_item, linked_item, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        link.id,
        link.workspace_id,
        link.catalog,
        link.base_item,
        link.linked_item,
        link.created_at,
        link.updated_at
    ])?;
    Ok(())
}

pub fn delete(conn: &Conn, id: &str) -> crate::db::Result<()> {
    conn.prepare_cached("DELETE FROM synonyms WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Which links a list covers.
pub enum Scope<'a> {
    /// Every link of a workspace, optionally of one catalog (`xtype`).
    Workspace {
        workspace: &'a str,
        catalog: Option<&'a str>,
    },
    /// The links of one record.
    Item { workspace: &'a str, item: &'a str },
}

pub fn list(conn: &Conn, scope: &Scope<'_>, query: &ListQuery) -> crate::db::Result<Page<Synonym>> {
    let (condition, params) = match scope {
        Scope::Workspace { workspace, catalog } => {
            let mut params = vec![SqlValue::Text(workspace.to_string())];
            let mut condition = String::from("workspace_id = ?");
            if let Some(catalog) = catalog {
                condition.push_str(" AND catalog = ?");
                params.push(SqlValue::Text(catalog.to_string()));
            }
            (condition, params)
        }
        Scope::Item { workspace, item } => (
            String::from("workspace_id = ? AND (base_item = ? OR linked_item = ?)"),
            vec![
                SqlValue::Text(workspace.to_string()),
                SqlValue::Text(item.to_string()),
                SqlValue::Text(item.to_string()),
            ],
        ),
    };
    fetch_page(
        conn,
        COLUMNS,
        "FROM synonyms",
        &condition,
        params,
        query,
        from_row,
    )
}
