//! The components of the OpenAPI document: the schemas of every record as it
//! is written and read. Location shapes take their limits from
//! `locations/model.rs`; the document kinds' schemas are derived from their
//! tables in `documents/kinds.rs`, so they follow validation.

use serde_json::{Map, Value, json};

use super::schema::*;
use crate::catalogs;
use crate::documents::kinds::{self, Field, Kind, Type};
use crate::locations::model as location;
use crate::{attachments, organizations, webhooks, workspaces};

pub fn schemas() -> Map<String, Value> {
    let mut s = Map::new();
    let mut put = |name: &str, schema: Value| {
        s.insert(name.to_string(), schema);
    };
    put(
        "Error",
        record(vec![(
            "error",
            object(
                vec![
                    ("status", integer(400, 599)),
                    ("code", json!({"type": "string", "pattern": "^[a-z_]+$"})),
                    ("message", string()),
                    (
                        "field",
                        describe(
                            string(),
                            "The input at fault: a JSON path (`cargo.uom`, `$`; `[3].setNumber` \
                             for an item of an array) or a query parameter; present when one \
                             input is at fault",
                        ),
                    ),
                    (
                        "next",
                        describe(
                            integer(0, i64::MAX),
                            "With `cursor_expired`: the cursor to continue the feed from, \
                             after listing again",
                        ),
                    ),
                    (
                        "items",
                        describe(
                            array(object(
                                vec![
                                    (
                                        "index",
                                        describe(
                                            integer(0, kinds::MAX_ITEMS as i64 - 1),
                                            "The item's place in the array, from 0",
                                        ),
                                    ),
                                    ("status", integer(400, 409)),
                                    ("code", json!({"type": "string", "pattern": "^[a-z_]+$"})),
                                    ("message", string()),
                                    (
                                        "field",
                                        describe(
                                            string(),
                                            "The item's field at fault, from the item's root \
                                             (`setNumber`, `sample.location`; `$` for the item)",
                                        ),
                                    ),
                                ],
                                &["index", "status", "code", "message"],
                            )),
                            "With `invalid_items` and `conflicting_items`: every item of the \
                             array that failed, in order, each with the error a POST of it \
                             alone would have answered",
                        ),
                    ),
                ],
                &["status", "code", "message"],
            ),
        )]),
    );
    put(
        "Health",
        record(vec![
            ("status", json!({"const": "ok"})),
            ("version", string()),
        ]),
    );
    put(
        "Session",
        record(vec![
            ("sessionName", json!({"const": "api_key"})),
            (
                "sessionId",
                describe(string(), "The key: 32 random bytes in unpadded base64url"),
            ),
            ("username", string()),
        ]),
    );
    put("Change", change());
    location_schemas(&mut put);
    put(
        "Envelope",
        describe(
            record(vec![("id", uuid("")), ("body", json!({"type": "object"}))]),
            "The envelope of the older paths",
        ),
    );
    put(
        "V2Envelope",
        describe(
            record(vec![
                ("type", one_of(&v2_entity_types())),
                ("id", uuid("")),
                ("body", json!({"type": "object"})),
                ("created_at", date_time("RFC 3339 UTC with milliseconds")),
                ("updated_at", date_time("RFC 3339 UTC with milliseconds")),
            ]),
            "The envelope of the v2 paths",
        ),
    );
    entity_schemas(&mut put);
    webhook_schemas(&mut put);
    for kind in kinds::ALL {
        kind_schemas(kind, &mut s);
    }
    s
}

/// The `type` of every record a v2 route answers: the hub's records and the
/// document kinds that have a v2 route.
fn v2_entity_types() -> Vec<&'static str> {
    let mut types = vec![
        workspaces::ENTITY_TYPE,
        organizations::ENTITY_TYPE,
        attachments::ENTITY_TYPE,
        catalogs::synonyms::ENTITY_TYPE,
        webhooks::ENTITY_TYPE,
        webhooks::DELIVERY_TYPE,
    ];
    types.extend(
        kinds::ALL
            .iter()
            .filter(|kind| kind.v2_collection.is_some())
            .map(|kind| kind.entity_type),
    );
    types
}

fn location_schemas(put: &mut impl FnMut(&str, Value)) {
    let text = |max: usize| json!({"type": "string", "maxLength": max});
    let mut fields: Vec<(String, Value)> = vec![
        (
            "name".into(),
            describe(
                json!({"type": "string", "minLength": 1, "maxLength": location::NAME_MAX}),
                "Not blank",
            ),
        ),
        (
            "countryCode".into(),
            describe(
                json!({"type": "string", "pattern": "^[A-Z]{2}$"}),
                "ISO 3166-1 alpha-2, upper case, from the UN/LOCODE country list",
            ),
        ),
        ("geoRegionCode".into(), text(location::CODE_FIELD_MAX)),
    ];
    for (axis, degrees, hemispheres, hemisphere) in location::AXES {
        let whole_degrees = describe(
            integer(0, degrees),
            "Whole degrees; at the maximum, minutes and seconds must be 0",
        );
        let seconds = json!({"type": "number", "minimum": 0, "exclusiveMaximum": location::SECONDS_BELOW as i64});
        for (suffix, schema) in [
            ("Deg", whole_degrees),
            ("Min", integer(0, location::MINUTES_MAX)),
            ("Sec", seconds),
            (hemisphere, one_of(&hemispheres)),
        ] {
            fields.push((format!("{axis}{suffix}"), schema));
        }
    }
    let mut status = one_of(location::STATUSES);
    status["default"] = Value::from(location::STATUS_ACTIVE);
    fields.push(("statusCode".into(), status));
    fields.push(("restrictions".into(), text(location::TEXT_MAX)));
    fields.push(("generalComments".into(), text(location::TEXT_MAX)));

    let mut write = fields.clone();
    for name in location::SERVICE_FIELDS {
        let what = match *name {
            "clientCode" => "Must equal the path's when sent (so a read body can be sent back)",
            _ => "Read-only; accepted and ignored",
        };
        write.push((name.to_string(), json!({"description": what})));
    }
    let mut not_null = vec!["name"];
    not_null.extend(location::SERVICE_FIELDS);
    let write = closed(nullable_properties(object(write, &["name"]), &not_null));
    put(
        "LocationWrite",
        describe(write, "A location record as PUT takes it and answers it"),
    );

    let code = json!({"type": "string", "pattern": location::CLIENT_CODE_PATTERN});
    let mut read = vec![("clientCode".to_string(), code.clone())];
    read.extend(fields);
    for (name, schema) in [
        ("dateCreated", date_time("RFC 3339 UTC with milliseconds")),
        ("creator", describe(string(), "Username")),
        ("dateModified", date_time("RFC 3339 UTC with milliseconds")),
        ("modifier", describe(string(), "Username")),
    ] {
        read.push((name.to_string(), schema));
    }
    not_null.push("statusCode");
    put(
        "Location",
        describe(
            nullable_properties(record(read), &not_null),
            "A location record as read; unset fields are null",
        ),
    );
    put(
        "LocationSearchResult",
        record(vec![
            (
                "totalResultsAvailable",
                describe(integer(0, i64::MAX), "Every match"),
            ),
            (
                "firstResultPosition",
                describe(integer(1, i64::MAX), "(page-1)*resultsPerPage+1"),
            ),
            (
                "resultsPerPage",
                describe(integer(1, location::MAX_PAGE_SIZE), "The page size used"),
            ),
            ("results", array(schema_ref("Location"))),
        ]),
    );
    put(
        "ResourceStatus",
        record(vec![
            ("clientCode", code),
            (
                "statusCode",
                describe(
                    one_of(&[location::STATUS_INACTIVE, "DELETED"]),
                    "INACTIVE: an active record was deactivated; DELETED: an inactive one was removed",
                ),
            ),
        ]),
    );
}

/// Workspaces, organizations, catalog records and references, synonyms and files.
fn entity_schemas(put: &mut impl FnMut(&str, Value)) {
    let nullable_string = || or_null(string());
    // A party and the parties as read (every key present) or as written.
    let party = |write: bool| {
        let properties = vec![
            ("id", or_null(uuid("An organization id"))),
            ("xref", nullable_string()),
        ];
        if write {
            or_null(closed(object(properties, &[])))
        } else {
            record(properties)
        }
    };
    let parties = |write: bool| {
        let properties = vec![("client", party(write)), ("vendor", party(write))];
        if write {
            or_null(closed(object(properties, &[])))
        } else {
            record(properties)
        }
    };
    let state = || one_of(&workspaces::State::keys());
    put(
        "Workspace",
        record(vec![
            ("description", nullable_string()),
            ("parties", parties(false)),
            (
                "state",
                describe(
                    state(),
                    "`pending`: another tenant's organization was named as a party and has not \
                     accepted; `declined`: it declined; `active`: both parties are in",
                ),
            ),
        ]),
    );
    put(
        "WorkspaceWrite",
        describe(
            closed(object(
                vec![
                    ("description", nullable_string()),
                    ("parties", parties(true)),
                    (
                        "state",
                        describe(
                            or_null(state()),
                            "Set by the server (accept and decline change it); accepted and ignored",
                        ),
                    ),
                ],
                &[],
            )),
            "On create, `parties.client.id` or `parties.vendor.id` must be an organization of \
             the caller's tenant; naming another tenant's organization invites it (the workspace \
             is `pending` until it accepts). On PATCH only `description` changes (`parties` and \
             `state` are ignored)",
        ),
    );
    let category = || or_null(one_of(organizations::CATEGORIES));
    put(
        "Organization",
        record(vec![
            ("name", string()),
            ("audience", describe(string(), "The owning tenant")),
            ("category", category()),
        ]),
    );
    put(
        "OrganizationWrite",
        closed(object(
            vec![
                (
                    "name",
                    describe(string(), "Unique ignoring case; required on create"),
                ),
                ("category", category()),
                (
                    "audience",
                    describe(
                        nullable_string(),
                        "Set by the server; a body may repeat the current value only",
                    ),
                ),
            ],
            &[],
        )),
    );
    put(
        "CatalogItem",
        record(vec![
            ("name", nullable_string()),
            ("xref", nullable_string()),
            (
                "ownerParty",
                or_null(uuid("The caller's party organization, set by the server")),
            ),
        ]),
    );
    let bounded = |max: usize| or_null(json!({"type": "string", "maxLength": max}));
    put(
        "CatalogItemWrite",
        describe(
            closed(object(
                vec![
                    ("name", bounded(catalogs::store::NAME_MAX)),
                    (
                        "xref",
                        describe(
                            bounded(catalogs::store::XREF_MAX),
                            "Unique within the workspace's catalog",
                        ),
                    ),
                    (
                        "ownerParty",
                        json!({"description": "Set by the server; ignored"}),
                    ),
                ],
                &[],
            )),
            "A record needs a `name` or an `xref`",
        ),
    );
    put(
        "CatalogReference",
        json!({
            "description": "A record of a workspace catalog: its id, or an object found by \
                `xref` (else by `name`, ignoring case) and created when missing",
            "oneOf": [
                uuid("Id of an existing record of that catalog in the workspace"),
                closed(object(
                    vec![
                        ("id", uuid("Id of an existing record")),
                        ("xref", string()),
                        ("name", string()),
                    ],
                    &[],
                )),
            ],
        }),
    );
    put(
        "ResolvedReference",
        describe(
            record(vec![
                ("id", uuid("")),
                ("xref", nullable_string()),
                ("name", nullable_string()),
            ]),
            "A catalog record as quality results read references back",
        ),
    );
    put(
        "Synonym",
        record(vec![
            ("workspace", uuid("")),
            ("baseItem", uuid("")),
            ("linkedItem", uuid("")),
        ]),
    );
    let stored = || {
        vec![
            ("format", describe(string(), "Media type")),
            ("size", integer(0, i64::MAX)),
            (
                "sha256",
                json!({"type": "string", "pattern": "^[0-9a-f]{64}$"}),
            ),
        ]
    };
    let caption = || describe(string(), "The file name");
    let location = || uuid("Id of the stored bytes");
    put(
        "FileDescriptor",
        record(vec![
            ("id", uuid("Also the id of the v2 attachment")),
            ("caption", caption()),
            ("location", location()),
            ("body", record(stored())),
        ]),
    );
    let mut attachment = vec![
        ("workspace", uuid("")),
        ("document", uuid("")),
        ("caption", caption()),
        ("location", location()),
    ];
    attachment.extend(stored());
    for name in [
        "clientReferenceNumber",
        "vendorReferenceNumber",
        "description",
    ] {
        attachment.push((name, nullable_string()));
    }
    put("Attachment", record(attachment));
}

/// Webhooks and their delivery attempts (`webhooks/mod.rs`).
fn webhook_schemas(put: &mut impl FnMut(&str, Value)) {
    let types = crate::changes::event_types();
    let event_type = json!({"anyOf": [
        one_of(&types.iter().map(String::as_str).collect::<Vec<_>>()),
        describe(
            json!({"type": "string", "pattern": "^[A-Za-z]+\\.\\*$"}),
            "Every verb of one entity, e.g. `qualityResult.*`",
        ),
    ]});
    let event_types = describe(
        array(event_type),
        "The change types delivered; empty or absent for every type",
    );
    let time = || or_null(date_time("RFC 3339 UTC with milliseconds"));
    let workspace = || {
        or_null(uuid(
            "Only this workspace's changes (one the caller may see); null for everything \
             the tenant may read: the location catalogs, organizations and every workspace",
        ))
    };
    let description = || or_null(json!({"type": "string", "maxLength": webhooks::DESCRIPTION_MAX}));
    let url = || {
        describe(
            json!({"type": "string", "format": "uri", "maxLength": webhooks::URL_MAX}),
            "http or https; a host that resolves to a loopback, private, link-local, \
             unique-local or CGNAT address is refused (400) unless the server allows it",
        )
    };
    let last = record(vec![
        ("id", uuid("The attempt")),
        ("seq", integer(0, i64::MAX)),
        ("event_id", uuid("")),
        ("outcome", one_of(webhooks::outcome::ALL)),
        ("status", or_null(integer(100, 599))),
        ("at", date_time("When it ended")),
    ]);
    let mut read = record(vec![
        ("url", url()),
        ("event_types", event_types.clone()),
        ("workspace_id", workspace()),
        ("description", description()),
        ("active", json!({"type": "boolean"})),
        (
            "status",
            record(vec![
                (
                    "disabled_reason",
                    describe(
                        or_null(string()),
                        "Why the server disabled it (persistent failure, its workspace gone); \
                         PATCH `active: true` re-enables it",
                    ),
                ),
                (
                    "cursor",
                    describe(
                        integer(0, i64::MAX),
                        "The last change delivered (its `seq`)",
                    ),
                ),
                (
                    "failures",
                    describe(integer(0, i64::MAX), "Failed attempts at the next change"),
                ),
                ("failing_since", time()),
                ("next_attempt_at", time()),
                ("previous_secret_valid_until", time()),
                ("last_delivery", or_null(last)),
            ]),
        ),
    ]);
    read["properties"]["secret"] = describe(
        json!({"type": "string", "pattern": "^whsec_[A-Za-z0-9_-]{43}$"}),
        "The signing secret: only in the answers of create and rotate-secret",
    );
    put("Webhook", read);
    let write: Vec<(&str, Value)> = webhooks::WRITE_FIELDS
        .iter()
        .map(|name| {
            let schema = match *name {
                "url" => url(),
                "event_types" => or_null(event_types.clone()),
                "workspace_id" => workspace(),
                "description" => description(),
                _ => describe(
                    json!({"type": "boolean"}),
                    "Default true; `true` re-enables a disabled webhook, which resumes from its cursor",
                ),
            };
            (*name, schema)
        })
        .collect();
    put("WebhookWrite", closed(object(write, &[])));
    put(
        "WebhookDelivery",
        record(vec![
            ("webhook_id", uuid("")),
            ("seq", integer(0, i64::MAX)),
            (
                "event_id",
                uuid("The change's event id (`Quayside-Event-Id`)"),
            ),
            ("event_type", string()),
            (
                "attempt",
                describe(
                    integer(1, i64::MAX),
                    "1 for the first attempt at this change",
                ),
            ),
            (
                "redelivery_of",
                or_null(uuid("A manual redelivery: the attempt it repeats")),
            ),
            (
                "outcome",
                describe(
                    one_of(webhooks::outcome::ALL),
                    "`queued`: a redelivery waiting for its turn",
                ),
            ),
            ("status", or_null(integer(100, 599))),
            ("duration_ms", or_null(integer(0, i64::MAX))),
            (
                "error",
                describe(
                    or_null(string()),
                    "No answer (timeout, refused, TLS) or the status and the start of the answer",
                ),
            ),
        ]),
    );
}

// ---------------------------------------------------------------------------
// Document kinds, from their tables

/// Which side of the wire a kind schema describes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// As read back; `expand` when references read back as `{id, xref, name}`.
    Read { expand: bool },
    /// As written: references by id or `{xref, name}`, `null` for "not set".
    Write,
}

impl Side {
    fn suffix(self) -> &'static str {
        match self {
            Side::Read { expand: false } => "",
            Side::Read { expand: true } => "Expanded",
            Side::Write => "Write",
        }
    }
}

fn kind_schemas(kind: &Kind, out: &mut Map<String, Value>) {
    let name = kind.schema_name();
    let mut read = fields_schema(
        kind.fields,
        Side::Read {
            expand: kind.expand_references,
        },
        out,
    );
    for path in kind.required {
        require(&mut read, path, false);
    }
    read["description"] = Value::from(format!(
        "A {} as read back: the fields that are set, in this order (from documents/kinds.rs)",
        kind.noun
    ));
    let mut write = fields_schema(kind.fields, Side::Write, out);
    for (alias, canonical) in kind.aliases {
        let same = write["properties"][*canonical].clone();
        write["properties"][*alias] = describe(
            same,
            &format!("Alias of `{canonical}`, stored under that name; sending both is 400"),
        );
    }
    write["description"] = Value::from(format!(
        "A {} as written (POST, or a PATCH merge patch where `null` clears a field)",
        kind.noun
    ));
    out.insert(name.clone(), read);
    out.insert(format!("{name}Write"), write);
}

fn fields_schema(fields: &'static [Field], side: Side, out: &mut Map<String, Value>) -> Value {
    let properties = fields
        .iter()
        .map(|field| (field.name, type_schema(&field.ty, field.name, side, out)))
        .collect();
    let schema = object(properties, &[]);
    match side {
        Side::Read { .. } => schema,
        Side::Write => closed(nullable_properties(schema, &[])),
    }
}

fn type_schema(ty: &'static Type, name: &str, side: Side, out: &mut Map<String, Value>) -> Value {
    match ty {
        Type::Text => describe(string(), "One line: no control characters"),
        Type::Notes => describe(
            string(),
            "Multi-line: line breaks and tabs allowed, no other control characters",
        ),
        Type::Stringified => match side {
            Side::Write => describe(
                json!({"type": ["string", "number", "boolean"]}),
                "Numbers and booleans are stored as their text",
            ),
            Side::Read { .. } => string(),
        },
        Type::Int => json!({"type": "integer"}),
        Type::Float => json!({"type": "number"}),
        Type::Bool => json!({"type": "boolean"}),
        Type::DateTime => date_time(match side {
            Side::Write => "RFC 3339 with any offset",
            Side::Read { .. } => "RFC 3339 UTC with milliseconds",
        }),
        Type::Enum(values) => one_of(values),
        Type::Catalog(catalog) => {
            let what = format!("A record of the `{}` catalog", catalog.key());
            match side {
                Side::Write => describe(schema_ref("CatalogReference"), &what),
                Side::Read { expand: true } => describe(schema_ref("ResolvedReference"), &what),
                Side::Read { expand: false } => uuid(&format!("{what}: its id")),
            }
        }
        Type::Organization => uuid("An organization id"),
        Type::DocumentId => uuid("A document id of this workspace"),
        Type::Object(fields) => fields_schema(fields, side, out),
        Type::Array(Type::Object(fields)) => {
            let component = format!(
                "{}{}",
                pascal(name.strip_suffix('s').unwrap_or(name)),
                side.suffix()
            );
            let schema = fields_schema(fields, side, out);
            debug_assert!(out.get(&component).is_none_or(|s| *s == schema));
            out.insert(component.clone(), schema);
            array(schema_ref(&component))
        }
        Type::Array(inner) => array(type_schema(inner, name, side, out)),
    }
}

/// One entry of the change log, as the feeds list it and a webhook posts it.
fn change() -> Value {
    let types: Vec<String> = crate::changes::event_types();
    let types: Vec<&str> = types.iter().map(String::as_str).collect();
    describe(
        record(vec![
            (
                "seq",
                describe(
                    integer(1, i64::MAX),
                    "The change's place in the log: strictly increasing in commit order",
                ),
            ),
            (
                "event_id",
                uuid("Stable id of this change, for de-duplication"),
            ),
            ("type", one_of(&types)),
            (
                "entity_type",
                describe(string(), "The record's envelope type"),
            ),
            ("entity_id", string()),
            (
                "workspace_id",
                or_null(describe(string(), "The workspace of a workspace record")),
            ),
            (
                "actor",
                describe(string(), "The username that made the change"),
            ),
            ("occurred_at", date_time("When the change was committed")),
            (
                "record",
                describe(
                    json!({"type": "object"}),
                    "The record's envelope `{type, id, body, created_at, updated_at}` after \
                     the change; for a delete, as it was last",
                ),
            ),
        ]),
        "One change of one record",
    )
}
