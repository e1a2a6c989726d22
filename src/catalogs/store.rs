//! SQL for catalog items, and the resolution of catalog references in
//! documents (find by id, xref or name; create when missing).

use std::collections::HashMap;
use std::sync::Arc;

use crate::db::Value as SqlValue;
use crate::db::{Conn, OptionalExtension, params};
use serde_json::Value;

use super::{CatalogItem, CatalogName};
use crate::error::{ApiError, ApiResult};
use crate::listing::{FieldSql, ListQuery, Page, fetch_page};
use crate::validate::{kind_of, optional_string, unknown_field};

const COLUMNS: &str = "id, workspace_id, catalog, name, xref, owner_party, created_at, updated_at";

/// The items' table, as the writer's kept rows and offers name it.
pub const TABLE: &str = "catalog_items";
pub const NAME_MAX: usize = 512;
pub const XREF_MAX: usize = 256;

fn from_row(row: &crate::db::Row<'_>) -> crate::db::Result<CatalogItem> {
    Ok(CatalogItem {
        id: row.get(0)?,
        workspace_id: row.get(1)?,
        catalog: row.get(2)?,
        name: row.get(3)?,
        xref: row.get(4)?,
        owner_party: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
    })
}

pub fn get(
    conn: &Conn,
    workspace: &str,
    catalog: CatalogName,
    id: &str,
) -> crate::db::Result<Option<CatalogItem>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM catalog_items WHERE id = ?1 AND workspace_id = ?2 AND catalog = ?3"
    ))?
    .query_row(params![id, workspace, catalog.key()], from_row)
    .optional()
}

/// An item row of `table`: `catalog_items`, or the change log's copy of a
/// deleted row (see `changes::capture`).
pub fn get_from(conn: &Conn, table: &str, id: &str) -> crate::db::Result<Option<CatalogItem>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM {table} WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// Most ids [`get_many`] binds one by one; more go as one JSON array.
const IDS_BOUND: usize = 8;

/// Items by id, in any catalog of the workspace (for expanding references).
/// A few ids (a document's references) are bound one by one: the primary
/// key is probed for each, with no table built from a JSON array (which
/// cost the change log's rendering of a quality result most of its time).
pub fn get_many(
    conn: &Conn,
    workspace: &str,
    ids: &[String],
) -> crate::db::Result<Vec<CatalogItem>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    if ids.len() <= IDS_BOUND {
        let marks: Vec<String> = (2..ids.len() + 2).map(|i| format!("?{i}")).collect();
        let mut values: Vec<&dyn crate::db::ToSql> = Vec::with_capacity(ids.len() + 1);
        values.push(&workspace);
        values.extend(ids.iter().map(|id| id as &dyn crate::db::ToSql));
        return conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM catalog_items WHERE workspace_id = ?1 AND id IN ({})",
                marks.join(", ")
            ))?
            .query_map(values.as_slice(), from_row)?
            .collect();
    }
    let list = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM catalog_items WHERE workspace_id = ?1 AND id IN ({})",
        conn.dialect().in_json_list("?2")
    ))?
    .query_map(params![workspace, list], from_row)?
    .collect()
}

/// The condition of the partial index `catalog_items_xref`, written out so
/// that a lookup by a bound xref can use it (SQLite cannot tell that a bound
/// value is not empty).
const XREF_INDEXED: &str = "AND xref IS NOT NULL AND xref <> ''";

/// The lookup of a catalog record by xref (its partial index's condition
/// named, so that a bound xref can use it); also what the plan tests explain.
pub fn find_by_xref_sql() -> String {
    format!(
        "SELECT {COLUMNS} FROM catalog_items WHERE workspace_id = ?1 AND catalog = ?2 AND xref = ?3 \
         {XREF_INDEXED}"
    )
}

fn find_by_xref(
    conn: &Conn,
    workspace: &str,
    catalog: CatalogName,
    xref: &str,
) -> crate::db::Result<Option<CatalogItem>> {
    conn.prepare_cached(&find_by_xref_sql())?
        .query_row(params![workspace, catalog.key(), xref], from_row)
        .optional()
}

fn find_by_name(
    conn: &Conn,
    workspace: &str,
    catalog: CatalogName,
    name: &str,
) -> crate::db::Result<Option<CatalogItem>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM catalog_items WHERE workspace_id = ?1 AND catalog = ?2 \
         AND name_folded = ?3 ORDER BY created_at, id LIMIT 1"
    ))?
    .query_row(
        params![workspace, catalog.key(), crate::validate::fold(name)],
        from_row,
    )
    .optional()
}

fn check_xref_free(conn: &Conn, item: &CatalogItem) -> ApiResult<()> {
    let Some(xref) = item.xref.as_deref().filter(|x| !x.is_empty()) else {
        return Ok(());
    };
    let catalog = CatalogName::from_path(&item.catalog).unwrap_or(CatalogName::Products);
    match find_by_xref(conn, &item.workspace_id, catalog, xref)? {
        Some(other) if other.id != item.id => Err(ApiError::conflict(
            "duplicate_xref",
            format!(
                "The {} catalog already has a record with xref \"{xref}\"",
                item.catalog
            ),
        )),
        _ => Ok(()),
    }
}

pub fn insert(conn: &Conn, item: &CatalogItem) -> ApiResult<()> {
    check_xref_free(conn, item)?;
    conn.prepare_cached(
        "INSERT INTO catalog_items (id, workspace_id, catalog, name, name_folded, xref, owner_party, \
         created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        item.id,
        item.workspace_id,
        item.catalog,
        item.name,
        item.name.as_deref().map(crate::validate::fold),
        item.xref,
        item.owner_party,
        item.created_at,
        item.updated_at
    ])?;
    // Changed through its store, never offered: the write's change entries
    // are rendered by reading it back (`db::offered::set_aside`).
    crate::db::offered::wrote(conn, TABLE, &[&item.id]);
    Ok(())
}

pub fn update(conn: &Conn, item: &CatalogItem) -> ApiResult<()> {
    check_xref_free(conn, item)?;
    conn.prepare_cached(
        "UPDATE catalog_items SET name = ?2, name_folded = ?3, xref = ?4, updated_at = ?5 WHERE id = ?1",
    )?
    .execute(params![
        item.id,
        item.name,
        item.name.as_deref().map(crate::validate::fold),
        item.xref,
        item.updated_at
    ])?;
    crate::db::offered::wrote(conn, TABLE, &[&item.id]);
    Ok(())
}

/// Removes an item no document refers to (409 otherwise); its synonym links go with it.
pub fn delete(conn: &Conn, id: &str) -> ApiResult<()> {
    // The uses the batch's writes before this one hold count too.
    crate::db::held::flush(conn)?;
    let uses: i64 = conn
        .prepare_cached("SELECT uses FROM catalog_item_uses WHERE item_id = ?1")?
        .query_row([id], |row| row.get(0))
        .optional()?
        .unwrap_or(0);
    if uses > 0 {
        return Err(ApiError::conflict(
            "catalog_item_in_use",
            format!("The record is referenced by {uses} document(s); change those first"),
        ));
    }
    conn.prepare_cached("DELETE FROM synonyms WHERE base_item = ?1 OR linked_item = ?1")?
        .execute([id])?;
    conn.prepare_cached("DELETE FROM catalog_items WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

pub fn list(
    conn: &Conn,
    workspace: &str,
    catalog: CatalogName,
    query: &ListQuery,
) -> crate::db::Result<Page<CatalogItem>> {
    let params = vec![
        SqlValue::Text(workspace.to_string()),
        SqlValue::Text(catalog.key().to_string()),
    ];
    let mut condition = String::from("workspace_id = ? AND catalog = ?");
    let by_xref = query.filters.iter().any(|(field, value)| {
        *field == FieldSql::Column("xref") && !matches!(value, SqlValue::Text(x) if x.is_empty())
    });
    if by_xref {
        condition.push(' ');
        condition.push_str(XREF_INDEXED);
    }
    fetch_page(
        conn,
        COLUMNS,
        "FROM catalog_items",
        &condition,
        params,
        query,
        from_row,
    )
}

/// Where a document's catalog references are resolved: its workspace, the
/// party that owns records created on the way, and the time.
pub struct RefContext<'a> {
    pub conn: &'a Conn,
    pub workspace: &'a str,
    pub owner_party: Option<&'a str>,
    pub now: i64,
    /// Every item the document refers to, as found: to show the references
    /// expanded without reading them again. Shared,
    /// as in [`Resolved`]: a reference costs no copy of its record.
    pub used: Vec<Arc<CatalogItem>>,
    /// What the write resolved before, for this document or an earlier one.
    pub resolved: &'a mut Resolved,
}

/// The references one write has resolved, shared by the documents it stores
/// (the items of a certificate): a record found or created once is not
/// looked up again. It holds only what the write's own transaction read or
/// wrote, so it answers what the store would: for one write only.
#[derive(Default)]
pub struct Resolved {
    by_id: ByKey,
    by_xref: ByKey,
    /// By folded name: the oldest record of that name, as `find_by_name`.
    by_name: ByKey,
}

/// Records by catalog, then by a key of theirs: looked up by `&str`, with no
/// key made for the question.
#[derive(Default)]
struct ByKey(HashMap<CatalogName, HashMap<String, Arc<CatalogItem>>>);

impl ByKey {
    fn get(&self, catalog: CatalogName, key: &str) -> Option<&Arc<CatalogItem>> {
        self.0.get(&catalog)?.get(key)
    }

    /// Keeps `item` under `key`, unless a record is kept there already.
    fn keep(&mut self, catalog: CatalogName, key: &str, item: &Arc<CatalogItem>) {
        let keyed = self.0.entry(catalog).or_default();
        if !keyed.contains_key(key) {
            keyed.insert(key.to_string(), item.clone());
        }
    }

    /// Keeps `item` under `key`, in place of any record kept there.
    fn set(&mut self, catalog: CatalogName, key: &str, item: &Arc<CatalogItem>) {
        self.0
            .entry(catalog)
            .or_default()
            .insert(key.to_string(), item.clone());
    }
}

impl Resolved {
    fn remember_id(&mut self, catalog: CatalogName, item: &Arc<CatalogItem>) {
        self.by_id.keep(catalog, &item.id, item);
    }
}

/// A catalog reference as a document writes it, its form checked: a record
/// id, or `{xref, name}` to find (by xref when given, else by name ignoring
/// case) or create, or `{id, ...}` as quality results read back.
pub enum Reference<'a> {
    Id(&'a str),
    Find {
        xref: Option<&'a str>,
        name: Option<&'a str>,
    },
}

impl Reference<'_> {
    /// Checks a reference's form and reads it, touching no store (documents
    /// check it before the writer).
    pub fn parse<'a>(
        catalog: CatalogName,
        value: &'a Value,
        path: &str,
    ) -> ApiResult<Reference<'a>> {
        match value {
            Value::String(_) => {}
            Value::Object(map) => {
                for (key, v) in map {
                    let field = format!("{path}.{key}");
                    let max = match key.as_str() {
                        "id" => 64,
                        "xref" => XREF_MAX,
                        "name" => NAME_MAX,
                        _ => {
                            return Err(unknown_field(
                                &field,
                                &[&format!("{path}.xref"), &format!("{path}.name")],
                            ));
                        }
                    };
                    optional_string(v, &field, max)?;
                }
            }
            other => {
                return Err(ApiError::invalid(
                    path,
                    format!(
                        "`{path}` must be a {} record id or an object {{\"xref\", \"name\"}}, not {}",
                        catalog.key(),
                        kind_of(other)
                    ),
                ));
            }
        }
        match Reference::read(value) {
            Reference::Find {
                xref: None,
                name: None,
            } => Err(ApiError::invalid(
                path,
                format!("`{path}` needs an `xref` or a `name` to find or create the record"),
            )),
            reference => Ok(reference),
        }
    }

    /// Reads a reference whose form [`Reference::parse`] has checked: an id
    /// wins; an empty xref and a blank name count as absent.
    fn read(value: &Value) -> Reference<'_> {
        let text = |key: &str| value.get(key).and_then(Value::as_str);
        if let Some(id) = value.as_str().or_else(|| text("id")) {
            return Reference::Id(id);
        }
        Reference::Find {
            xref: text("xref").filter(|x| !x.is_empty()),
            name: text("name").filter(|n| !crate::validate::is_blank(n)),
        }
    }
}

impl RefContext<'_> {
    /// Resolves a reference whose form [`Reference::parse`] has checked (a
    /// document's body after `schema::check`) to its record's id: the record
    /// found, or created when `{xref, name}` finds none.
    pub fn resolve(
        &mut self,
        catalog: CatalogName,
        value: &Value,
        path: &str,
    ) -> ApiResult<String> {
        let item = match Reference::read(value) {
            Reference::Id(id) => self.existing(catalog, id, path)?,
            Reference::Find { xref, name } => {
                let found = match (&xref, &name) {
                    (Some(x), _) => self.by_xref(catalog, x)?,
                    (None, Some(n)) => self.by_name(catalog, n)?,
                    (None, None) => {
                        return Err(ApiError::internal(format!(
                            "`{path}`: a reference resolved without its form checked"
                        )));
                    }
                };
                match found {
                    Some(found) => found,
                    None => {
                        let item = Arc::new(CatalogItem {
                            id: crate::ids::new_id(),
                            workspace_id: self.workspace.to_string(),
                            catalog: catalog.key().to_string(),
                            name: name.map(String::from),
                            xref: xref.map(String::from),
                            owner_party: self.owner_party.map(String::from),
                            created_at: self.now,
                            updated_at: self.now,
                        });
                        insert(self.conn, &item)?;
                        self.created(catalog, &item);
                        item
                    }
                }
            }
        };
        let id = item.id.clone();
        if !self.used.iter().any(|used| used.id == id) {
            self.used.push(item);
        }
        Ok(id)
    }

    fn by_xref(&mut self, catalog: CatalogName, xref: &str) -> ApiResult<Option<Arc<CatalogItem>>> {
        if let Some(item) = self.resolved.by_xref.get(catalog, xref) {
            return Ok(Some(item.clone()));
        }
        // As the writer keeps it between writes (`db::kept`): a write
        // resolves its references before it changes any record.
        let alias = format!("{}\u{1f}{}\u{1f}{xref}", self.workspace, catalog.key());
        let found = crate::db::kept::row_by(
            TABLE,
            &alias,
            |item: &Arc<CatalogItem>| item.id.as_str(),
            || {
                Ok::<_, crate::db::Error>(
                    find_by_xref(self.conn, self.workspace, catalog, xref)?.map(Arc::new),
                )
            },
        )?
        .filter(|item| {
            item.workspace_id == self.workspace
                && item.catalog == catalog.key()
                && item.xref.as_deref() == Some(xref)
        });
        if let Some(item) = &found {
            self.resolved.remember_id(catalog, item);
            self.resolved.by_xref.set(catalog, xref, item);
        }
        Ok(found)
    }

    fn by_name(&mut self, catalog: CatalogName, name: &str) -> ApiResult<Option<Arc<CatalogItem>>> {
        let folded = crate::validate::fold(name);
        if let Some(item) = self.resolved.by_name.get(catalog, &folded) {
            return Ok(Some(item.clone()));
        }
        let found = find_by_name(self.conn, self.workspace, catalog, name)?.map(Arc::new);
        if let Some(item) = &found {
            self.resolved.remember_id(catalog, item);
            self.resolved.by_name.set(catalog, &folded, item);
        }
        Ok(found)
    }

    /// A record this write created: found again by id and xref; by name only
    /// when no record had that name (else the older one stays the answer).
    fn created(&mut self, catalog: CatalogName, item: &Arc<CatalogItem>) {
        self.resolved.remember_id(catalog, item);
        if let Some(xref) = &item.xref {
            self.resolved.by_xref.set(catalog, xref, item);
        } else if let Some(name) = &item.name {
            let folded = crate::validate::fold(name);
            self.resolved.by_name.keep(catalog, &folded, item);
        }
    }

    fn existing(
        &mut self,
        catalog: CatalogName,
        id: &str,
        path: &str,
    ) -> ApiResult<Arc<CatalogItem>> {
        if let Some(item) = self.resolved.by_id.get(catalog, id) {
            return Ok(item.clone());
        }
        match get(self.conn, self.workspace, catalog, id)?.map(Arc::new) {
            Some(item) => {
                self.resolved.remember_id(catalog, &item);
                Ok(item)
            }
            None => Err(ApiError::invalid(
                path,
                format!(
                    "No {} record with id \"{id}\" in this workspace",
                    catalog.key()
                ),
            )),
        }
    }
}
