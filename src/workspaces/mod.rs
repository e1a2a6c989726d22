//! Workspaces: a client and a vendor organization sharing jobs, results,
//! catalogs and files. Served on both path generations from one model; the
//! tenancy rule every nested route goes through is [`scope`].

pub mod routes;
pub mod scope;
pub mod store;

use serde_json::{Map, Value, json};

use crate::auth::principal::Principal;
use crate::envelope::Entity;
use crate::error::{ApiError, ApiResult};
use crate::validate::{object, optional_string, unknown_field};

pub const ENTITY_TYPE: &str = "svc.hub.workspace";
const DESCRIPTION_MAX: usize = 4000;

#[derive(Clone, Debug, Default)]
pub struct Party {
    pub id: Option<String>,
    pub xref: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Workspace {
    pub id: String,
    pub description: Option<String>,
    pub client: Party,
    pub vendor: Party,
    pub created_at: i64,
    pub updated_at: i64,
    /// Tenants owning the client and vendor organizations (who may see it).
    pub client_audience: Option<String>,
    pub vendor_audience: Option<String>,
}

impl Entity for Workspace {
    const ENTITY_TYPE: &'static str = ENTITY_TYPE;

    fn id(&self) -> &str {
        &self.id
    }

    fn body(&self) -> Value {
        json!({
            "description": self.description,
            "parties": {
                "client": {"id": self.client.id, "xref": self.client.xref},
                "vendor": {"id": self.vendor.id, "xref": self.vendor.xref},
            }
        })
    }

    fn stamps(&self) -> (i64, i64) {
        (self.created_at, self.updated_at)
    }
}

impl Workspace {
    pub fn visible_to(&self, user: &Principal) -> bool {
        user.is_admin
            || self.client_audience.as_deref() == Some(user.tenant.as_str())
            || self.vendor_audience.as_deref() == Some(user.tenant.as_str())
    }

    /// The caller's party organization here: the client's if the caller's tenant
    /// owns it, else the vendor's; `None` for an admin who is neither.
    pub fn party_of(&self, user: &Principal) -> Option<String> {
        if self.client_audience.as_deref() == Some(user.tenant.as_str()) {
            self.client.id.clone()
        } else if self.vendor_audience.as_deref() == Some(user.tenant.as_str()) {
            self.vendor.id.clone()
        } else {
            None
        }
    }
}

pub fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("No workspace with id \"{id}\""))
}

/// A validated workspace body.
#[derive(Debug, Default)]
pub struct WorkspaceInput {
    pub description: Option<Option<String>>,
    pub client: Party,
    pub vendor: Party,
}

impl WorkspaceInput {
    /// `creating` false: parties are accepted and ignored (they cannot change).
    pub fn from_json(body: &Value, creating: bool) -> ApiResult<WorkspaceInput> {
        let map = object(body, "")?;
        let mut input = WorkspaceInput::default();
        for (key, value) in map {
            match key.as_str() {
                "description" => {
                    input.description =
                        Some(optional_string(value, "description", DESCRIPTION_MAX)?);
                }
                "parties" if !creating => {}
                "parties" => parse_parties(value, &mut input)?,
                other => return Err(unknown_field(other, &["description", "parties"])),
            }
        }
        Ok(input)
    }
}

fn parse_parties(value: &Value, input: &mut WorkspaceInput) -> ApiResult<()> {
    if value.is_null() {
        return Ok(());
    }
    for (role, party) in object(value, "parties")? {
        let path = format!("parties.{role}");
        let target = match role.as_str() {
            "client" => &mut input.client,
            "vendor" => &mut input.vendor,
            _ => return Err(unknown_field(&path, &["parties.client", "parties.vendor"])),
        };
        if party.is_null() {
            continue;
        }
        let fields: &Map<String, Value> = object(party, &path)?;
        for (key, v) in fields {
            let field = format!("{path}.{key}");
            match key.as_str() {
                "id" => target.id = optional_string(v, &field, 64)?,
                "xref" => target.xref = optional_string(v, &field, 256)?,
                _ => {
                    return Err(unknown_field(
                        &field,
                        &[&format!("{path}.id"), &format!("{path}.xref")],
                    ));
                }
            }
        }
    }
    Ok(())
}
