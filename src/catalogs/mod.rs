//! Workspace catalogs: the reference data documents point at (products,
//! locations, transports, units, tests, test methods, event types, VCF
//! tables), with their synonyms.

pub mod routes;
pub mod store;
pub mod synonyms;

use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};

/// The eight catalogs of a workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CatalogName {
    Products,
    Locations,
    Transports,
    Uom,
    Tests,
    TestMethods,
    EventTypes,
    VcfTable,
}

impl CatalogName {
    pub const ALL: [CatalogName; 8] = [
        CatalogName::Products,
        CatalogName::Locations,
        CatalogName::Transports,
        CatalogName::Uom,
        CatalogName::Tests,
        CatalogName::TestMethods,
        CatalogName::EventTypes,
        CatalogName::VcfTable,
    ];

    /// The path name, also what is stored.
    pub fn key(self) -> &'static str {
        match self {
            CatalogName::Products => "products",
            CatalogName::Locations => "locations",
            CatalogName::Transports => "transports",
            CatalogName::Uom => "uom",
            CatalogName::Tests => "tests",
            CatalogName::TestMethods => "testMethods",
            CatalogName::EventTypes => "eventTypes",
            CatalogName::VcfTable => "vcfTable",
        }
    }

    /// Other path names a catalog is known by.
    pub const ALIASES: [(&'static str, CatalogName); 2] = [
        ("methods", CatalogName::TestMethods),
        ("timelogEvents", CatalogName::EventTypes),
    ];

    /// A path name, or one of its [aliases](CatalogName::ALIASES).
    pub fn from_path(name: &str) -> Option<CatalogName> {
        CatalogName::ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map(|(_, catalog)| *catalog)
            .or_else(|| CatalogName::ALL.into_iter().find(|c| c.key() == name))
    }

    /// Every name a path may use: the keys, then the aliases.
    pub fn path_names() -> impl Iterator<Item = &'static str> {
        CatalogName::ALL
            .into_iter()
            .map(CatalogName::key)
            .chain(CatalogName::ALIASES.iter().map(|(alias, _)| *alias))
    }

    pub fn parse(name: &str) -> ApiResult<CatalogName> {
        CatalogName::from_path(name).ok_or_else(|| {
            ApiError::not_found(format!(
                "No catalog named \"{name}\"; catalogs are {}",
                CatalogName::ALL.map(|c| c.key()).join(", ")
            ))
        })
    }
}

/// One record of a catalog.
#[derive(Clone, Debug)]
pub struct CatalogItem {
    pub id: String,
    pub workspace_id: String,
    pub catalog: String,
    pub name: Option<String>,
    pub xref: Option<String>,
    pub owner_party: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl CatalogItem {
    pub fn body(&self) -> Value {
        json!({"name": self.name, "xref": self.xref, "ownerParty": self.owner_party})
    }

    /// How quality results show a reference.
    pub fn reference(&self) -> Value {
        json!({"id": self.id, "xref": self.xref, "name": self.name})
    }
}
