//! The records the change log covers: one row per table, saying how a row of
//! it is identified and rendered into a change entry. The capture
//! (`capture.rs`) installs its triggers from this table and nothing else, so a
//! table is covered exactly when it is listed here.

use std::collections::HashMap;

use crate::db::Conn;
use serde_json::json;

use crate::catalogs::CatalogItem;

use crate::clock::format_ms;
use crate::envelope::{Entity, v2_text};
use crate::error::ApiResult;

/// Which feed serves a record's changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeedName {
    /// The location catalogs (`/api/rest/1.0/changes`).
    Locations,
    /// The workspace service (`/v2/changes`, `/v2/workspaces/{id}/changes`).
    Workspaces,
}

impl FeedName {
    pub fn key(self) -> &'static str {
        match self {
            FeedName::Locations => "locations",
            FeedName::Workspaces => "workspaces",
        }
    }
}

/// A changed record, rendered.
#[derive(Debug, PartialEq)]
pub struct Rendered {
    /// The event type's first part: `job` in `job.created`.
    pub entity: &'static str,
    /// The envelope's `type`.
    pub entity_type: &'static str,
    pub entity_id: String,
    pub feed: FeedName,
    pub workspace_id: Option<String>,
    /// The envelope `{type, id, body, created_at, updated_at}`, as JSON.
    pub record: String,
}

/// Reads the row of `table` with key `key`; `table` is the live table or the
/// copy a delete left behind (and `blobs` likewise, for attachments).
type Render = fn(&Conn, &Tables<'_>, &[String]) -> ApiResult<Option<Rendered>>;

/// Renders what a write offered of a row it wrote (`db::offered`), instead of
/// reading the row back.
pub type FromOffer = fn(Box<dyn std::any::Any>) -> ApiResult<Rendered>;

/// Where a render reads from.
pub struct Tables<'a> {
    /// The record's own table, or its copy of deleted rows.
    pub table: String,
    /// `blobs` with the copies of blobs deleted in this write.
    pub blobs: String,
    /// Catalog items read by earlier renders.
    pub items: &'a Items,
}

/// Rows the capture keeps between writes, by id: read once, forgotten when
/// their row changes (the capture sees every change) or a write fails.
/// Bounded: beyond [`KEPT`] entries, all are forgotten.
pub struct Kept<V>(std::sync::Mutex<HashMap<String, V>>);

/// Entries a [`Kept`] holds at most.
const KEPT: usize = 10_000;

impl<V> Default for Kept<V> {
    fn default() -> Self {
        Kept(std::sync::Mutex::default())
    }
}

impl<V: Clone> Kept<V> {
    pub fn forget(&self, id: &str) {
        self.map().remove(id);
    }

    pub fn clear(&self) {
        self.map().clear();
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, V>> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() > KEPT {
            map.clear();
        }
        map
    }

    /// The entry `id`, if it is kept.
    pub fn kept(&self, id: &str) -> Option<V> {
        self.map().get(id).cloned()
    }

    /// The entry `id`, read by `read` when it is not kept.
    pub fn get_or<E>(&self, id: &str, read: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        let mut map = self.map();
        if let Some(found) = map.get(id) {
            return Ok(found.clone());
        }
        let found = read()?;
        map.insert(id.to_string(), found.clone());
        Ok(found)
    }
}

/// Catalog items as the store holds them, for the references that documents
/// show expanded.
pub type Items = Kept<CatalogItem>;

impl Items {
    /// The items `ids` of `workspace`: kept ones, the others from the store.
    fn get(
        &self,
        conn: &Conn,
        workspace: &str,
        ids: &[String],
    ) -> crate::db::Result<Vec<CatalogItem>> {
        let mut map = self.map();
        let missing: Vec<String> = ids
            .iter()
            .filter(|id| !map.contains_key(*id))
            .cloned()
            .collect();
        if !missing.is_empty() {
            for item in crate::catalogs::store::get_many(conn, workspace, &missing)? {
                map.insert(item.id.clone(), item);
            }
        }
        Ok(ids
            .iter()
            .filter_map(|id| map.get(id))
            .filter(|item| item.workspace_id == workspace)
            .cloned()
            .collect())
    }
}

/// One covered table.
pub struct Source {
    pub table: &'static str,
    /// The columns that identify a row (at most two).
    pub key: &'static [&'static str],
    /// A column whose change is an event of its own (`activated` /
    /// `deactivated`), with the value that means inactive.
    pub status: Option<(&'static str, &'static str)>,
    pub render: Render,
    /// The kind of rendering a write may offer (`db::offered`), if any.
    pub offered: Option<FromOffer>,
}

/// Tables whose deleted rows are kept for the renders of the same write, but
/// whose own changes are not events (an attachment's bytes).
pub const SHADOWED: [&str; 1] = ["blobs"];

/// Every table whose row changes the capture notes: the covered ones
/// ([`SOURCES`]), then [`SHADOWED`].
pub fn noted_tables() -> impl Iterator<Item = &'static str> {
    SOURCES.iter().map(|s| s.table).chain(SHADOWED)
}

/// Every covered table, parents before children (the order of one write's
/// entries follows the order of its changes, not this list).
pub const SOURCES: [Source; 7] = [
    Source {
        table: "organizations",
        key: &["id"],
        status: None,
        offered: None,
        render: |conn, from, key| {
            let Some(org) = crate::organizations::store::get_from(conn, &from.table, &key[0])?
            else {
                return Ok(None);
            };
            Ok(Some(Rendered {
                entity: "organization",
                entity_type: crate::organizations::ENTITY_TYPE,
                entity_id: org.id.clone(),
                feed: FeedName::Workspaces,
                workspace_id: None,
                record: org.v2_text()?,
            }))
        },
    },
    Source {
        table: "workspaces",
        key: &["id"],
        status: None,
        offered: None,
        render: |conn, from, key| {
            let Some(ws) = crate::workspaces::store::get_from(conn, &from.table, &key[0])? else {
                return Ok(None);
            };
            Ok(Some(Rendered {
                entity: "workspace",
                entity_type: crate::workspaces::ENTITY_TYPE,
                entity_id: ws.id.clone(),
                feed: FeedName::Workspaces,
                workspace_id: Some(ws.id.clone()),
                record: ws.v2_text()?,
            }))
        },
    },
    Source {
        table: crate::catalogs::store::TABLE,
        key: &["id"],
        status: None,
        offered: None,
        render: |conn, from, key| {
            let Some(item) = crate::catalogs::store::get_from(conn, &from.table, &key[0])? else {
                return Ok(None);
            };
            let mut body = item.body();
            body["catalog"] = json!(item.catalog);
            Ok(Some(Rendered {
                entity: "catalogItem",
                entity_type: CATALOG_ITEM_TYPE,
                entity_id: item.id.clone(),
                feed: FeedName::Workspaces,
                workspace_id: Some(item.workspace_id.clone()),
                record: v2_text(
                    CATALOG_ITEM_TYPE,
                    &item.id,
                    &body,
                    &format_ms(item.created_at),
                    &format_ms(item.updated_at),
                )?,
            }))
        },
    },
    Source {
        table: "synonyms",
        key: &["id"],
        status: None,
        offered: None,
        render: |conn, from, key| {
            let Some(link) = crate::catalogs::synonyms::get_from(conn, &from.table, &key[0])?
            else {
                return Ok(None);
            };
            Ok(Some(Rendered {
                entity: "synonym",
                entity_type: crate::catalogs::synonyms::ENTITY_TYPE,
                entity_id: link.id.clone(),
                feed: FeedName::Workspaces,
                workspace_id: Some(link.workspace_id.clone()),
                record: link.v2_text()?,
            }))
        },
    },
    Source {
        table: crate::documents::store::TABLE,
        key: &["id"],
        status: None,
        offered: Some(|offer| {
            let shown = offer
                .downcast::<std::sync::Arc<crate::documents::store::Shown>>()
                .map_err(|_| crate::error::ApiError::internal("an offer of another type"))?;
            document(
                shown.kind,
                shown.id.clone(),
                shown.workspace_id.clone(),
                &shown.body,
                shown.created_at,
                shown.updated_at,
            )
        }),
        render: |conn, from, key| {
            use crate::documents::store::{Stored, stored_from};
            match stored_from(conn, &from.table, &key[0])? {
                None => Ok(None),
                // Shown as stored: the body's text goes into the envelope as it is.
                Some(Stored::Raw {
                    id,
                    workspace_id,
                    kind,
                    body,
                    created_at,
                    updated_at,
                }) => document(kind, id, workspace_id, &body, created_at, updated_at).map(Some),
                Some(Stored::Parsed(doc)) => {
                    let crate::documents::Document {
                        id,
                        workspace_id,
                        kind,
                        body,
                        created_at,
                        updated_at,
                        ..
                    } = doc;
                    let body = crate::documents::store::readable(kind, body, |ids| {
                        from.items.get(conn, &workspace_id, ids)
                    })?;
                    document(kind, id, workspace_id, &body, created_at, updated_at).map(Some)
                }
            }
        },
    },
    Source {
        table: "attachments",
        key: &["id"],
        status: None,
        offered: None,
        render: |conn, from, key| {
            let Some(a) =
                crate::attachments::store::get_from(conn, &from.table, &from.blobs, &key[0])?
            else {
                return Ok(None);
            };
            Ok(Some(Rendered {
                entity: "attachment",
                entity_type: crate::attachments::ENTITY_TYPE,
                entity_id: a.id.clone(),
                feed: FeedName::Workspaces,
                workspace_id: Some(a.workspace_id.clone()),
                record: a.v2_text()?,
            }))
        },
    },
    Source {
        table: crate::locations::store::TABLE,
        key: &["catalog", "client_code"],
        status: Some(("status_code", "INACTIVE")),
        offered: Some(|offer| {
            let offer = match offer.downcast::<crate::locations::store::LaterLocation>() {
                // Its statement's answer read (`db::offered::offer_later`).
                Ok(later) => return location(later.catalog, later.location()?),
                Err(offer) => offer,
            };
            let offered = offer
                .downcast::<(crate::locations::Catalog, crate::locations::model::Location)>()
                .map_err(|_| crate::error::ApiError::internal("an offer of another type"))?;
            let (catalog, loc) = *offered;
            location(catalog, loc)
        }),
        render: |conn, from, key| {
            let Some(catalog) = crate::locations::Catalog::ALL
                .into_iter()
                .find(|c| c.key() == key[0])
            else {
                return Ok(None);
            };
            let found =
                crate::locations::store::get_from(conn, &from.table, catalog.key(), &key[1])?;
            found.map(|loc| location(catalog, loc)).transpose()
        },
    },
];

/// A location record's change.
fn location(
    catalog: crate::locations::Catalog,
    loc: crate::locations::model::Location,
) -> ApiResult<Rendered> {
    let (entity, entity_type) = location_names(catalog);
    Ok(Rendered {
        entity,
        entity_type,
        record: v2_text(
            entity_type,
            &loc.client_code,
            &loc,
            &loc.date_created,
            &loc.date_modified,
        )?,
        entity_id: loc.client_code,
        feed: FeedName::Locations,
        workspace_id: None,
    })
}

/// A document's change, its body as it reads.
fn document(
    kind: &'static crate::documents::kinds::Kind,
    id: String,
    workspace_id: String,
    body: &impl serde::Serialize,
    created_at: i64,
    updated_at: i64,
) -> ApiResult<Rendered> {
    Ok(Rendered {
        entity: kind.key,
        entity_type: kind.entity_type,
        record: v2_text(
            kind.entity_type,
            &id,
            body,
            &format_ms(created_at),
            &format_ms(updated_at),
        )?,
        entity_id: id,
        feed: FeedName::Workspaces,
        workspace_id: Some(workspace_id),
    })
}

/// The envelope `type` of a catalog item (the service documents name none).
pub const CATALOG_ITEM_TYPE: &str = "svc.hub.catalogItem";

/// The event entity and envelope type of a location catalog's records.
fn location_names(catalog: crate::locations::Catalog) -> (&'static str, &'static str) {
    match catalog {
        crate::locations::Catalog::Ports => ("port", "svc.location.port"),
        crate::locations::Catalog::InlandFacilities => {
            ("inlandFacility", "svc.location.inlandFacility")
        }
    }
}

/// Every event entity, in the order the documentation lists them, with
/// whether it has `activated` / `deactivated` events.
pub fn entities() -> Vec<(&'static str, bool)> {
    let mut out = vec![("organization", false), ("workspace", false)];
    out.extend(
        crate::documents::kinds::ALL
            .iter()
            .map(|kind| (kind.key, false)),
    );
    out.extend([
        ("catalogItem", false),
        ("synonym", false),
        ("attachment", false),
    ]);
    out.extend(
        crate::locations::Catalog::ALL
            .into_iter()
            .map(|c| (location_names(c).0, true)),
    );
    out
}

/// Tables whose rows are not records of the log: accounts and sessions,
/// stored bytes, how many documents use each catalog item, the log itself, and
/// webhooks with their delivery log (a tenant's own settings, holding secrets;
/// their changes in the log would also be delivered to them), and which
/// tenants see a workspace (derived from the workspace, for its list).
pub const NOT_RECORDS: [&str; 12] = [
    "accounts",
    "sessions",
    "blobs",
    "blob_chunks",
    "catalog_item_uses",
    "changes",
    "change_log",
    "sqlite_sequence",
    "webhooks",
    "webhook_deliveries",
    "workspace_members",
    "tenant_workspaces",
];

#[cfg(test)]
mod tests {
    use super::{NOT_RECORDS, SOURCES, noted_tables};

    /// A new table is a decision: covered by the change log (listed in
    /// `SOURCES`) or named here as not a record.
    #[test]
    fn every_table_is_covered_or_named_as_not_a_record() {
        let conn = crate::db::Conn::memory().unwrap();
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for table in &tables {
            let covered = SOURCES.iter().any(|s| s.table == table);
            let excluded = NOT_RECORDS.contains(&table.as_str());
            assert!(
                covered ^ excluded,
                "table {table}: covered by the change log: {covered}, named not a record: {excluded}"
            );
        }
        for name in noted_tables() {
            assert!(tables.iter().any(|t| t == name), "{name} is not a table");
        }
    }
}
