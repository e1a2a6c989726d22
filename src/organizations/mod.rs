//! The organization registry (v2): parties find each other here to create
//! workspaces. Anyone authenticated lists and reads; only the owning tenant
//! (the `audience`) or an admin changes or deletes.

pub mod routes;
pub mod store;

use serde_json::{Value, json};

use crate::envelope::Entity;
use crate::error::{ApiError, ApiResult};
use crate::validate::{object, optional_enum, optional_string, required_string, unknown_field};

pub const ENTITY_TYPE: &str = "svc.hub.organization";
pub const CATEGORIES: &[&str] = &["shipper", "inspector"];
const NAME_MAX: usize = 256;

#[derive(Clone, Debug)]
pub struct Organization {
    pub id: String,
    pub name: String,
    pub audience: String,
    pub category: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Entity for Organization {
    const ENTITY_TYPE: &'static str = ENTITY_TYPE;

    fn id(&self) -> &str {
        &self.id
    }

    fn body(&self) -> Value {
        json!({"name": self.name, "audience": self.audience, "category": self.category})
    }

    fn stamps(&self) -> (i64, i64) {
        (self.created_at, self.updated_at)
    }
}

/// A validated create or patch body. `None` fields were not sent.
#[derive(Debug, Default)]
pub struct OrganizationInput {
    pub name: Option<String>,
    /// `Some(None)` sets the category to null.
    pub category: Option<Option<String>>,
    pub audience: Option<String>,
}

impl OrganizationInput {
    pub fn from_json(body: &Value, creating: bool) -> ApiResult<OrganizationInput> {
        let map = object(body, "")?;
        let mut input = OrganizationInput::default();
        for (key, value) in map {
            match key.as_str() {
                "name" => input.name = Some(required_string(Some(value), "name", NAME_MAX)?),
                "category" => input.category = Some(optional_enum(value, "category", CATEGORIES)?),
                "audience" => input.audience = optional_string(value, "audience", 64)?,
                other => return Err(unknown_field(other, &["name", "category", "audience"])),
            }
        }
        if creating && input.name.is_none() {
            return Err(crate::validate::missing("name"));
        }
        Ok(input)
    }
}

/// The audience is the owner's tenant and never changes: a body may repeat it, not alter it.
pub fn check_audience(sent: Option<&str>, owner_tenant: &str) -> ApiResult<()> {
    match sent {
        Some(audience) if audience != owner_tenant => Err(ApiError::BadRequest {
            code: "immutable_field",
            message:
                "`audience` is the owning tenant, set by the server; it cannot be set or changed"
                    .into(),
            field: Some("audience".into()),
        }),
        _ => Ok(()),
    }
}
