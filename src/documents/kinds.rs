//! The five document kinds, each described by a small table: its fields and
//! their types, aliases, required fields and response shapes. The generic code
//! in this module reads these tables; nothing is written per kind twice.

use crate::catalogs::CatalogName;

/// What a field holds.
#[derive(Debug)]
pub enum Type {
    /// One line of text: no control characters.
    Text,
    /// Multi-line text (notes): line breaks and tabs allowed, other control
    /// characters not.
    Notes,
    /// A value kept as a string; numbers and booleans are accepted and stringified.
    Stringified,
    Int,
    Float,
    Bool,
    DateTime,
    Enum(&'static [&'static str]),
    /// A record of a workspace catalog; stored as its id.
    Catalog(CatalogName),
    /// An organization id.
    Organization,
    /// A document id (`workspace`, `parent`); checked by the kind's rules.
    DocumentId,
    Object(&'static [Field]),
    Array(&'static Type),
}

#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub ty: Type,
}

const fn f(name: &'static str, ty: Type) -> Field {
    Field { name, ty }
}

/// How an operation answers: the bare body, `{id, body}`, or `[{id, body}]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Body,
    Envelope,
    EnvelopeInArray,
}

#[derive(Debug)]
pub struct Kind {
    /// Stored in `documents.kind`.
    pub key: &'static str,
    /// The collection's path pattern (older paths).
    pub collection: &'static str,
    /// One document's path pattern: the collection and the id parameter.
    pub item: &'static str,
    /// The v2 entity type.
    pub entity_type: &'static str,
    pub noun: &'static str,
    pub fields: &'static [Field],
    /// Other names accepted on write, stored under the canonical name.
    pub aliases: &'static [(&'static str, &'static str)],
    /// Dotted paths that must be present on create.
    pub required: &'static [&'static str],
    /// Answer of GET one, and of PATCH.
    pub get_shape: Shape,
    pub patch_shape: Shape,
    /// Quality results read references back as `{id, xref, name}`.
    pub expand_references: bool,
    /// The fields a list filters on by an index (`schema.sql`, version 7):
    /// a filter on any other field reads every document the list holds.
    pub indexed: &'static [&'static str],
    /// Its POST also takes a JSON array of 1 to [`MAX_ITEMS`] documents,
    /// stored all or none (a certificate of results).
    pub bulk: bool,
    /// The v2 collection's path pattern, where the kind has one (POST only).
    pub v2_collection: Option<&'static str>,
}

/// Most documents one array body of a `bulk` kind may hold.
pub const MAX_ITEMS: usize = 1000;

impl Kind {
    pub fn is_job(&self) -> bool {
        self.key == JOB.key
    }

    /// The name of the document's id parameter: the last one of [`Kind::item`].
    pub fn id_param(&self) -> &'static str {
        let last = self.item.rsplit('/').next().unwrap_or_default();
        last.trim_start_matches('{').trim_end_matches('}')
    }

    /// The component name of the kind in the OpenAPI document: its noun in
    /// PascalCase (`TimeLog`).
    pub fn schema_name(&self) -> String {
        crate::openapi::schema::pascal(self.noun)
    }
}

pub const JOB_STATUSES: &[&str] = &["pending", "active", "complete", "cancelled"];

const CARGO: &[Field] = &[
    f("product", Type::Catalog(CatalogName::Products)),
    f("quantity", Type::Float),
    f("uom", Type::Catalog(CatalogName::Uom)),
];
const REQUESTED: &[Field] = &[
    f("quality", Type::Bool),
    f("quantity", Type::Bool),
    f("timelog", Type::Bool),
];
const MEASUREMENT: &[Field] = &[
    f("code", Type::Text),
    f("name", Type::Text),
    f("uom", Type::Catalog(CatalogName::Uom)),
    f("value", Type::Float),
];
const MEAN_TEMP: &[Field] = &[
    f("value", Type::Float),
    f("uom", Type::Catalog(CatalogName::Uom)),
];
const SAMPLE: &[Field] = &[
    f("refNumber", Type::Text),
    f("description", Type::Text),
    f("sealNumber", Type::Text),
    f("sampleNumber", Type::Text),
    f("location", Type::Text),
];

pub static JOB: Kind = Kind {
    key: "job",
    collection: "/workspaces/{workspace_id}/jobs",
    item: "/workspaces/{workspace_id}/jobs/{job_id}",
    entity_type: "svc.inspection.job",
    noun: "job",
    fields: &[
        f("workspace", Type::DocumentId),
        f("parent", Type::DocumentId),
        f("xref", Type::Text),
        f("refNumber", Type::Text),
        f("tripNumber", Type::Text),
        f("status", Type::Enum(JOB_STATUSES)),
        f(
            "activity",
            Type::Enum(&["load", "discharge", "sts", "transfer", "sample"]),
        ),
        f("eta", Type::DateTime),
        f("etc", Type::DateTime),
        f("notes", Type::Notes),
        f("location", Type::Catalog(CatalogName::Locations)),
        f(
            "transports",
            Type::Array(&Type::Catalog(CatalogName::Transports)),
        ),
        f("cargo", Type::Object(CARGO)),
        f("requested", Type::Object(REQUESTED)),
        f("vendor", Type::Organization),
        f("client", Type::Organization),
    ],
    aliases: &[],
    required: &[],
    get_shape: Shape::Body,
    patch_shape: Shape::Body,
    expand_references: false,
    indexed: &[
        "xref",
        "refNumber",
        "status",
        "activity",
        "eta",
        "etc",
        "parent",
    ],
    bulk: false,
    v2_collection: None,
};

pub static LOAD_PORT_INFORMATION: Kind = Kind {
    key: "loadPortInformation",
    collection: "/workspaces/{workspace_id}/jobs/{job_id}/load-port-information",
    item: "/workspaces/{workspace_id}/jobs/{job_id}/load-port-information/{id}",
    entity_type: "svc.inspection.loadPortInformation",
    noun: "load port information",
    fields: &[
        f("workspace", Type::DocumentId),
        f("parent", Type::DocumentId),
        f("billOfLadingDate", Type::DateTime),
        f("portOfLoading", Type::Catalog(CatalogName::Locations)),
        f("measurements", Type::Array(&Type::Object(MEASUREMENT))),
    ],
    aliases: &[],
    required: &[],
    get_shape: Shape::Body,
    patch_shape: Shape::Body,
    expand_references: false,
    indexed: &[],
    bulk: false,
    v2_collection: None,
};

pub static QUANTITY_RESULT: Kind = Kind {
    key: "quantityResult",
    collection: "/workspaces/{workspace_id}/jobs/{job_id}/quantity",
    item: "/workspaces/{workspace_id}/jobs/{job_id}/quantity/{quantity_id}",
    entity_type: "svc.inspection.quantityResult",
    noun: "quantity result",
    fields: &[
        f("workspace", Type::DocumentId),
        f("parent", Type::DocumentId),
        f("date", Type::DateTime),
        f("direction", Type::Enum(&["source", "destination"])),
        f("activeShoreTank", Type::Bool),
        f("measurements", Type::Array(&Type::Object(MEASUREMENT))),
        f("waterMethod", Type::Text),
        f("waterPerc", Type::Float),
        f("sedimentMethod", Type::Text),
        f("sedimentPerc", Type::Float),
        f("densityMethod", Type::Text),
        f("density15c", Type::Float),
        f("sedimentWaterPerc", Type::Float),
        f("meanTemp", Type::Object(MEAN_TEMP)),
        f("vcfTable", Type::Catalog(CatalogName::VcfTable)),
        f("api", Type::Float),
    ],
    aliases: &[("vcftable", "vcfTable")],
    required: &["direction"],
    get_shape: Shape::Body,
    patch_shape: Shape::Envelope,
    expand_references: false,
    indexed: &["date", "direction"],
    bulk: false,
    v2_collection: None,
};

pub static QUALITY_RESULT: Kind = Kind {
    key: "qualityResult",
    collection: "/workspaces/{workspace_id}/jobs/{job_id}/quality",
    item: "/workspaces/{workspace_id}/jobs/{job_id}/quality/{quality_id}",
    entity_type: "svc.inspection.qualityResult",
    noun: "quality result",
    fields: &[
        f("workspace", Type::DocumentId),
        f("parent", Type::DocumentId),
        f("status", Type::Enum(&["confirmed", "preliminary"])),
        f("setNumber", Type::Int),
        f("coaId", Type::Text),
        f("testNumber", Type::Int),
        f("sample", Type::Object(SAMPLE)),
        f("test", Type::Catalog(CatalogName::Tests)),
        f("method", Type::Catalog(CatalogName::TestMethods)),
        f("uom", Type::Catalog(CatalogName::Uom)),
        f("date", Type::DateTime),
        f(
            "resultOperator",
            Type::Enum(&["lte", "gte", "lt", "gt", "eq"]),
        ),
        f("result", Type::Stringified),
        f("notes", Type::Notes),
        f("isRetestNeeded", Type::Bool),
        f("isOffSpec", Type::Bool),
        f("isPassed", Type::Bool),
        f("isPreviouslySubmitted", Type::Bool),
        f("isPerformed", Type::Bool),
        f("propertyIsNumeric", Type::Bool),
        f("propertyName", Type::Text),
    ],
    aliases: &[("testDate", "date"), ("comment", "notes")],
    required: &[
        "status",
        "setNumber",
        "sample.location",
        "test",
        "method",
        "uom",
        "result",
    ],
    get_shape: Shape::EnvelopeInArray,
    patch_shape: Shape::Body,
    expand_references: true,
    indexed: &["status", "setNumber", "date"],
    bulk: true,
    v2_collection: Some("/v2/workspaces/{workspace_id}/jobs/{job_id}/quality-results"),
};

pub static TIMELOG: Kind = Kind {
    key: "timelog",
    collection: "/workspaces/{workspace_id}/jobs/{job_id}/timelog",
    item: "/workspaces/{workspace_id}/jobs/{job_id}/timelog/{event_id}",
    entity_type: "svc.inspection.timelog",
    noun: "time log",
    fields: &[
        f("workspace", Type::DocumentId),
        f("parent", Type::DocumentId),
        f("type", Type::Catalog(CatalogName::EventTypes)),
        f("category", Type::Enum(&["event", "delay"])),
        f("start", Type::DateTime),
        f("end", Type::DateTime),
        f("notes", Type::Notes),
    ],
    aliases: &[],
    required: &["type", "category", "start"],
    get_shape: Shape::Body,
    patch_shape: Shape::Body,
    expand_references: false,
    indexed: &[],
    bulk: true,
    v2_collection: Some("/v2/workspaces/{workspace_id}/jobs/{job_id}/timelogs"),
};

/// Every kind; the four after the job attach to a job.
pub static ALL: [&Kind; 5] = [
    &JOB,
    &LOAD_PORT_INFORMATION,
    &QUANTITY_RESULT,
    &QUALITY_RESULT,
    &TIMELOG,
];

pub fn by_key(key: &str) -> Option<&'static Kind> {
    ALL.iter().copied().find(|k| k.key == key)
}

/// The field at a dotted path (`cargo.uom`), if the kind has one.
pub fn field_at(fields: &'static [Field], path: &str) -> Option<&'static Field> {
    let (head, rest) = match path.split_once('.') {
        Some((head, rest)) => (head, Some(rest)),
        None => (path, None),
    };
    let field = fields.iter().find(|f| f.name == head)?;
    match (rest, &field.ty) {
        (None, _) => Some(field),
        (Some(rest), Type::Object(inner)) => field_at(inner, rest),
        _ => None,
    }
}
