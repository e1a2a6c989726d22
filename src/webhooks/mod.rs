//! Webhooks: a tenant's receivers of changes. The delivery worker
//! (`deliver.rs`) reads the change log with the owner's visibility and POSTs
//! each change, signed (`sign.rs`), in sequence order, at least once; every
//! attempt is logged in `webhook_deliveries`. This file is the model and its
//! validation; `store.rs` the SQL; `routes.rs` the handlers of `/v2/webhooks`.

pub mod deliver;
pub mod routes;
pub mod sign;
pub mod store;

use serde_json::{Value, json};

use crate::changes::TypeFilter;
use crate::clock;
use crate::envelope::Entity;
use crate::error::{ApiError, ApiResult};
use crate::validate::{missing, object, optional_string, required_string, unknown_field};

pub const ENTITY_TYPE: &str = "svc.hub.webhook";
pub const DELIVERY_TYPE: &str = "svc.hub.webhookDelivery";
pub const URL_MAX: usize = 2048;
pub const DESCRIPTION_MAX: usize = 1000;
/// How long a rotated-out secret still signs deliveries.
pub const SECRET_OVERLAP_MS: i64 = 24 * 3600 * 1000;
/// The fields a create or PATCH body takes.
pub const WRITE_FIELDS: &[&str] = &[
    "url",
    "event_types",
    "workspace_id",
    "description",
    "active",
];

/// One webhook as stored.
#[derive(Clone, Debug)]
pub struct Webhook {
    pub id: String,
    pub tenant: String,
    pub created_by: String,
    pub url: String,
    /// Type names and `entity.*` patterns; empty: every type.
    pub event_types: Vec<String>,
    pub workspace_id: Option<String>,
    pub description: Option<String>,
    pub active: bool,
    pub disabled_reason: Option<String>,
    pub secret: String,
    pub previous_secret: Option<String>,
    pub previous_until: Option<i64>,
    /// The last change delivered.
    pub cursor: u64,
    /// Failed attempts at the change after `cursor`.
    pub failures: i64,
    pub failing_since: Option<i64>,
    pub next_attempt_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The newest attempt, when reading for an answer.
    pub last_delivery: Option<Delivery>,
}

impl Webhook {
    /// The secrets that sign a delivery at `now`: the current one, and the
    /// previous one during its overlap.
    pub fn signing_secrets(&self, now: i64) -> Vec<&str> {
        let mut secrets = vec![self.secret.as_str()];
        if let (Some(previous), Some(until)) = (&self.previous_secret, self.previous_until) {
            if now < until {
                secrets.push(previous);
            }
        }
        secrets
    }

    /// Its event types as a filter; `None` for every type.
    pub fn type_filter(&self) -> ApiResult<Option<TypeFilter>> {
        if self.event_types.is_empty() {
            Ok(None)
        } else {
            TypeFilter::from_list(&self.event_types, "event_types").map(Some)
        }
    }

    /// The envelope with the secret shown: the answer of create and rotate,
    /// the only two that ever carry it.
    pub fn with_secret(&self) -> Value {
        let mut rendered = self.v2();
        rendered["body"]["secret"] = Value::from(self.secret.as_str());
        rendered
    }
}

fn time(ms: Option<i64>) -> Value {
    ms.map_or(Value::Null, |ms| Value::from(clock::format_ms(ms)))
}

impl Entity for Webhook {
    const ENTITY_TYPE: &'static str = ENTITY_TYPE;

    fn id(&self) -> &str {
        &self.id
    }

    fn body(&self) -> Value {
        let last = self.last_delivery.as_ref().map(|d| {
            json!({
                "id": d.id,
                "seq": d.seq,
                "event_id": d.event_id,
                "outcome": d.outcome,
                "status": d.status,
                "at": clock::format_ms(d.updated_at),
            })
        });
        json!({
            "url": self.url,
            "event_types": self.event_types,
            "workspace_id": self.workspace_id,
            "description": self.description,
            "active": self.active,
            "status": {
                "disabled_reason": self.disabled_reason,
                "cursor": self.cursor,
                "failures": self.failures,
                "failing_since": time(self.failing_since),
                "next_attempt_at": time(self.next_attempt_at),
                "previous_secret_valid_until": time(self.previous_until),
                "last_delivery": last,
            },
        })
    }

    fn stamps(&self) -> (i64, i64) {
        (self.created_at, self.updated_at)
    }
}

/// How an attempt ended, or that a redelivery waits for its turn.
pub mod outcome {
    pub const QUEUED: &str = "queued";
    pub const SUCCEEDED: &str = "succeeded";
    pub const FAILED: &str = "failed";
    pub const ALL: &[&str] = &[QUEUED, SUCCEEDED, FAILED];
}

/// One attempt to deliver a change (or a redelivery waiting for its turn).
#[derive(Clone, Debug)]
pub struct Delivery {
    pub id: String,
    pub webhook_id: String,
    pub seq: u64,
    pub event_id: String,
    pub event_type: String,
    pub attempt: i64,
    pub redelivery_of: Option<String>,
    pub outcome: String,
    pub status: Option<u16>,
    pub duration_ms: Option<i64>,
    pub error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Entity for Delivery {
    const ENTITY_TYPE: &'static str = DELIVERY_TYPE;

    fn id(&self) -> &str {
        &self.id
    }

    fn body(&self) -> Value {
        json!({
            "webhook_id": self.webhook_id,
            "seq": self.seq,
            "event_id": self.event_id,
            "event_type": self.event_type,
            "attempt": self.attempt,
            "redelivery_of": self.redelivery_of,
            "outcome": self.outcome,
            "status": self.status,
            "duration_ms": self.duration_ms,
            "error": self.error,
        })
    }

    fn stamps(&self) -> (i64, i64) {
        (self.created_at, self.updated_at)
    }
}

/// A validated create or PATCH body. `None` fields were not sent.
#[derive(Debug, Default)]
pub struct WebhookInput {
    pub url: Option<String>,
    pub event_types: Option<Vec<String>>,
    /// `Some(None)`: every workspace the owner may read.
    pub workspace_id: Option<Option<String>>,
    pub description: Option<Option<String>>,
    pub active: Option<bool>,
}

impl WebhookInput {
    pub fn from_json(body: &Value, creating: bool) -> ApiResult<WebhookInput> {
        let map = object(body, "")?;
        let mut input = WebhookInput::default();
        for (key, value) in map {
            match key.as_str() {
                "url" => input.url = Some(required_string(Some(value), "url", URL_MAX)?),
                "event_types" => input.event_types = Some(event_types(value)?),
                "workspace_id" => input.workspace_id = Some(optional_string(value, key, 64)?),
                "description" => {
                    input.description = Some(optional_string(value, key, DESCRIPTION_MAX)?);
                }
                "active" => match value {
                    Value::Bool(b) => input.active = Some(*b),
                    other => {
                        return Err(ApiError::invalid(
                            "active",
                            format!(
                                "`active` must be true or false, not {}",
                                crate::validate::kind_of(other)
                            ),
                        ));
                    }
                },
                other => return Err(unknown_field(other, WRITE_FIELDS)),
            }
        }
        if creating && input.url.is_none() {
            return Err(missing("url"));
        }
        Ok(input)
    }
}

/// `event_types`: an array of type names or `entity.*` patterns (validated
/// against the change log's types); `null` or empty for every type.
fn event_types(value: &Value) -> ApiResult<Vec<String>> {
    let items = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(ApiError::invalid(
                "event_types",
                format!(
                    "`event_types` must be an array of event type names, not {}",
                    crate::validate::kind_of(other)
                ),
            ));
        }
    };
    let mut names = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("event_types[{i}]");
        match optional_string(item, &path, 64)? {
            Some(name) => names.push(name),
            None => return Err(ApiError::invalid(path, "An event type cannot be null")),
        }
    }
    if names.is_empty() {
        return Ok(names);
    }
    Ok(TypeFilter::from_list(&names, "event_types")?
        .names()
        .to_vec())
}

/// The 404 of a webhook that does not exist or belongs to another tenant.
pub fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("No webhook with id \"{id}\""))
}
