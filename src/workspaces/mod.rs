//! Workspaces: a client and a vendor organization sharing jobs, results,
//! catalogs and files. Served on both path generations from one model; the
//! tenancy rule every nested route goes through is [`scope`].
//!
//! Party consent: a workspace that names another tenant's organization as a
//! party is an invitation to that tenant ([`State::Pending`]) until it accepts
//! ([`State::Active`]) or declines ([`State::Declined`]). Until it accepts, the
//! invited party is not a member ([`Workspace::members`]): its tenant does not
//! see the workspace, and the organization is not held by it.

pub mod routes;
pub mod scope;
pub mod store;

use serde_json::{Map, Value, json};

use crate::auth::principal::Principal;
use crate::envelope::Entity;
use crate::error::{ApiError, ApiResult};
use crate::validate::{object, optional_enum, optional_string, unknown_field};

pub const ENTITY_TYPE: &str = "svc.hub.workspace";
const DESCRIPTION_MAX: usize = 4000;

#[derive(Clone, Debug, Default)]
pub struct Party {
    pub id: Option<String>,
    pub xref: Option<String>,
}

/// Where a workspace stands with the consent of its parties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Both parties are in: no invitation, or an accepted one.
    Active,
    /// The invited party has not answered yet.
    Pending,
    /// The invited party declined (or its organization was deleted unanswered).
    Declined,
}

impl State {
    pub const ALL: [State; 3] = [State::Active, State::Pending, State::Declined];

    /// The stored and rendered name.
    pub fn key(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Pending => "pending",
            State::Declined => "declined",
        }
    }

    pub fn keys() -> [&'static str; 3] {
        State::ALL.map(State::key)
    }

    pub fn from_key(key: &str) -> Option<State> {
        State::ALL.into_iter().find(|s| s.key() == key)
    }
}

/// One of the two parties of a workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Vendor,
}

impl Role {
    pub fn key(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Vendor => "vendor",
        }
    }

    pub fn from_key(key: &str) -> Option<Role> {
        [Role::Client, Role::Vendor]
            .into_iter()
            .find(|r| r.key() == key)
    }
}

#[derive(Clone, Debug)]
pub struct Workspace {
    pub id: String,
    pub description: Option<String>,
    pub client: Party,
    pub vendor: Party,
    pub created_at: i64,
    pub updated_at: i64,
    /// Tenants owning the client and vendor organizations.
    pub client_audience: Option<String>,
    pub vendor_audience: Option<String>,
    pub state: State,
    /// The party that was invited (another tenant's organization), if any.
    pub invited: Option<Role>,
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
            },
            "state": self.state.key(),
        })
    }

    fn stamps(&self) -> (i64, i64) {
        (self.created_at, self.updated_at)
    }
}

impl Workspace {
    /// Whether `role`'s organization counts as a party: not while it is the
    /// invited one and has not accepted. The SQL twin is
    /// `store::MEMBER_CLIENT` / `store::MEMBER_VENDOR`.
    fn is_member(&self, role: Role) -> bool {
        self.state == State::Active || self.invited != Some(role)
    }

    /// The tenants owning the client and vendor organizations that count as
    /// parties: who may see the workspace and read its records.
    pub fn members(&self) -> (Option<&str>, Option<&str>) {
        (
            self.client_audience
                .as_deref()
                .filter(|_| self.is_member(Role::Client)),
            self.vendor_audience
                .as_deref()
                .filter(|_| self.is_member(Role::Vendor)),
        )
    }

    pub fn visible_to(&self, user: &Principal) -> bool {
        let (client, vendor) = self.members();
        user.is_admin || [client, vendor].contains(&Some(user.tenant.as_str()))
    }

    /// The tenant invited to this workspace (whatever it answered).
    pub fn invited_tenant(&self) -> Option<&str> {
        match self.invited? {
            Role::Client => self.client_audience.as_deref(),
            Role::Vendor => self.vendor_audience.as_deref(),
        }
    }

    /// Whether `user` answers this workspace's invitation: an account of the
    /// invited tenant, or an admin.
    pub fn answered_by(&self, user: &Principal) -> bool {
        self.invited.is_some()
            && (user.is_admin || self.invited_tenant() == Some(user.tenant.as_str()))
    }

    /// The caller's party organization here: the client's if the caller's tenant
    /// owns it (as a member), else the vendor's; `None` for an admin who is
    /// neither.
    pub fn party_of(&self, user: &Principal) -> Option<String> {
        let (client, vendor) = self.members();
        if client == Some(user.tenant.as_str()) {
            self.client.id.clone()
        } else if vendor == Some(user.tenant.as_str()) {
            self.vendor.id.clone()
        } else {
            None
        }
    }

    /// The organizations a job may name as its `client` or `vendor`.
    pub fn party_ids(&self) -> Vec<&str> {
        [&self.client.id, &self.vendor.id]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect()
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
                // Read-only (accept and decline change it): a body read back
                // may carry it; it changes nothing.
                "state" => {
                    optional_enum(value, "state", &State::keys())?;
                }
                other => {
                    return Err(unknown_field(other, &["description", "parties", "state"]));
                }
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
