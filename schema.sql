-- Quayside schema: the whole current schema of a data file.
--
-- A new file gets exactly this; an older file is brought here by the steps in
-- src/db/migrate.rs. The version lives in PRAGMA user_version, set by the migrator.
-- Since version 6 every file is in incremental auto-vacuum mode
-- (PRAGMA auto_vacuum = INCREMENTAL), which the migrator sets with a VACUUM
-- right after creating or migrating the schema: the mode cannot be chosen
-- inside the schema's transaction (nor, in WAL mode, before it).
-- Timestamps are INTEGER milliseconds since the Unix epoch (UTC); the API renders
-- them as RFC 3339 with milliseconds.

-- Web service accounts. A tenant is a UUID shared by accounts of one company.
CREATE TABLE accounts (
    id                  INTEGER PRIMARY KEY,
    username            TEXT    NOT NULL UNIQUE,
    tenant              TEXT    NOT NULL,
    is_admin            INTEGER NOT NULL DEFAULT 0 CHECK (is_admin IN (0, 1)),
    password_hash       BLOB    NOT NULL,
    password_salt       BLOB    NOT NULL,
    password_iterations INTEGER NOT NULL,
    created_at          INTEGER NOT NULL
);
CREATE INDEX accounts_tenant ON accounts (tenant);

-- Login sessions. Only the SHA-256 of the key is stored, never the key itself.
CREATE TABLE sessions (
    key_hash     BLOB    PRIMARY KEY,
    account_id   INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_account ON sessions (account_id);

-- The two location catalogs (ports, inland facilities) share one table and one shape.
CREATE TABLE locations (
    catalog          TEXT    NOT NULL CHECK (catalog IN ('ports', 'inland_facilities')),
    client_code      TEXT    NOT NULL,
    name             TEXT    NOT NULL,
    -- Lower-cased name for case-insensitive substring search beyond ASCII.
    name_folded      TEXT    NOT NULL,
    country_code     TEXT,
    geo_region_code  TEXT,
    latitude_deg     INTEGER,
    latitude_min     INTEGER,
    latitude_sec     REAL,
    latitude_ns      TEXT CHECK (latitude_ns IN ('N', 'S')),
    longitude_deg    INTEGER,
    longitude_min    INTEGER,
    longitude_sec    REAL,
    longitude_we     TEXT CHECK (longitude_we IN ('E', 'W')),
    status_code      TEXT    NOT NULL CHECK (status_code IN ('ACTIVE', 'INACTIVE')),
    restrictions     TEXT,
    general_comments TEXT,
    created_at       INTEGER NOT NULL,
    creator          TEXT    NOT NULL,
    modified_at      INTEGER NOT NULL,
    modifier         TEXT    NOT NULL,
    PRIMARY KEY (catalog, client_code)
) WITHOUT ROWID;
CREATE INDEX locations_country  ON locations (catalog, country_code, client_code);
CREATE INDEX locations_modified ON locations (catalog, modified_at);
CREATE INDEX locations_status   ON locations (catalog, status_code, client_code);

-- Version 2: the workspace integration service (organizations, workspaces,
-- documents, catalogs, synonyms, stored files).

-- The organization registry. `audience` is the tenant that owns it.
CREATE TABLE organizations (
    id          TEXT    PRIMARY KEY,
    name        TEXT    NOT NULL,
    -- Lower-cased name: names are unique regardless of case.
    name_folded TEXT    NOT NULL UNIQUE,
    audience    TEXT    NOT NULL,
    category    TEXT    CHECK (category IN ('shipper', 'inspector')),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX organizations_audience ON organizations (audience);
CREATE INDEX organizations_created ON organizations (created_at, id);

-- A collaboration space of a client and a vendor organization.
CREATE TABLE workspaces (
    id          TEXT    PRIMARY KEY,
    description TEXT,
    client_id   TEXT    REFERENCES organizations (id),
    client_xref TEXT,
    vendor_id   TEXT    REFERENCES organizations (id),
    vendor_xref TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX workspaces_client ON workspaces (client_id);
CREATE INDEX workspaces_vendor ON workspaces (vendor_id);
CREATE INDEX workspaces_created ON workspaces (created_at, id);

-- Jobs and the four kinds of document that attach to a job. `body` is the
-- document as JSON, with catalog references stored as record ids. The kinds
-- are compared one by one, not with `IN (...)`: SQLite checks a list of more
-- than two constants through a temporary B-tree built for every statement
-- that writes a row (version 11).
CREATE TABLE documents (
    id           TEXT    PRIMARY KEY,
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    kind         TEXT    NOT NULL CHECK (kind = 'job' OR kind = 'loadPortInformation'
                             OR kind = 'quantityResult' OR kind = 'qualityResult'
                             OR kind = 'timelog'),
    -- The job a result belongs to; NULL for jobs.
    job_id       TEXT    REFERENCES documents (id),
    body         TEXT    NOT NULL CHECK (json_valid(body)),
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
-- The lists (version 7): one index per access path, so that no plan depends
-- on the planner's statistics: the jobs of a workspace (partial on
-- kind = 'job', which the list's SQL names literally) and the documents of a
-- job; the fields clients filter and sort on each have an expression index
-- naming the JSON path literally, as the lists' SQL does (src/listing.rs),
-- ending in (created_at, id): the default order and every sort's tiebreak.
-- `documents::kinds` lists each kind's indexed fields (`Kind::indexed`).
CREATE INDEX documents_jobs ON documents (workspace_id, created_at, id) WHERE kind = 'job';
CREATE INDEX documents_jobs_xref
    ON documents (workspace_id, json_extract(body, '$.xref'), created_at, id) WHERE kind = 'job';
CREATE INDEX documents_jobs_ref_number
    ON documents (workspace_id, json_extract(body, '$.refNumber'), created_at, id) WHERE kind = 'job';
CREATE INDEX documents_jobs_status
    ON documents (workspace_id, json_extract(body, '$.status'), created_at, id) WHERE kind = 'job';
CREATE INDEX documents_jobs_activity
    ON documents (workspace_id, json_extract(body, '$.activity'), created_at, id) WHERE kind = 'job';
CREATE INDEX documents_jobs_eta
    ON documents (workspace_id, json_extract(body, '$.eta'), created_at, id) WHERE kind = 'job';
CREATE INDEX documents_jobs_etc
    ON documents (workspace_id, json_extract(body, '$.etc'), created_at, id) WHERE kind = 'job';
CREATE INDEX documents_jobs_parent
    ON documents (workspace_id, json_extract(body, '$.parent'), created_at, id) WHERE kind = 'job';
-- The status filter with the sorts clients pair it with (the console's job
-- list filters by status).
CREATE INDEX documents_jobs_status_eta
    ON documents (workspace_id, json_extract(body, '$.status'), json_extract(body, '$.eta'),
                  created_at, id) WHERE kind = 'job';
CREATE INDEX documents_of_job ON documents (job_id, kind, created_at, id) WHERE job_id IS NOT NULL;
CREATE INDEX documents_quality_status
    ON documents (job_id, kind, json_extract(body, '$.status'), created_at, id)
    WHERE kind = 'qualityResult';
CREATE INDEX documents_quality_set_number
    ON documents (job_id, kind, json_extract(body, '$.setNumber'), created_at, id)
    WHERE kind = 'qualityResult';
CREATE INDEX documents_quality_date
    ON documents (job_id, kind, json_extract(body, '$.date'), created_at, id)
    WHERE kind = 'qualityResult';
CREATE INDEX documents_quantity_date
    ON documents (job_id, kind, json_extract(body, '$.date'), created_at, id)
    WHERE kind = 'quantityResult';
-- One quantity result per direction per job.
CREATE UNIQUE INDEX documents_quantity_direction
    ON documents (job_id, json_extract(body, '$.direction'))
    WHERE kind = 'quantityResult';

-- Reference data of a workspace: eight catalogs.
CREATE TABLE catalog_items (
    id           TEXT    PRIMARY KEY,
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    catalog      TEXT    NOT NULL,
    name         TEXT,
    name_folded  TEXT,
    xref         TEXT,
    owner_party  TEXT,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE UNIQUE INDEX catalog_items_xref ON catalog_items (workspace_id, catalog, xref)
    WHERE xref IS NOT NULL AND xref <> '';
CREATE INDEX catalog_items_list ON catalog_items (workspace_id, catalog, created_at, id);
CREATE INDEX catalog_items_name ON catalog_items (workspace_id, catalog, name_folded, created_at, id);

-- Version 10: how many documents refer to each catalog item, so that a
-- referenced item cannot be deleted; kept by the document store in the same
-- transaction as the documents (a document's references are the record ids
-- in its body). A row is made at an item's first use and stays at 0 after
-- its last. It replaced the table of (document, item) links, whose reverse
-- index took a quarter of the pages a quality result's commit wrote.
CREATE TABLE catalog_item_uses (
    item_id TEXT    PRIMARY KEY REFERENCES catalog_items (id) ON DELETE CASCADE,
    uses    INTEGER NOT NULL CHECK (uses >= 0)
) WITHOUT ROWID;

-- Two catalog records of one catalog that describe the same thing (symmetric).
CREATE TABLE synonyms (
    id           TEXT    PRIMARY KEY,
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    catalog      TEXT    NOT NULL,
    base_item    TEXT    NOT NULL REFERENCES catalog_items (id) ON DELETE CASCADE,
    linked_item  TEXT    NOT NULL REFERENCES catalog_items (id) ON DELETE CASCADE,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    CHECK (base_item <> linked_item)
);
CREATE UNIQUE INDEX synonyms_pair
    ON synonyms (min(base_item, linked_item), max(base_item, linked_item));
CREATE INDEX synonyms_workspace ON synonyms (workspace_id, catalog, created_at, id);
CREATE INDEX synonyms_workspace_all ON synonyms (workspace_id, created_at, id);
CREATE INDEX synonyms_linked ON synonyms (linked_item);

-- Stored bytes, in chunks. A blob is `complete` only once every chunk is in;
-- incomplete blobs (an upload cut short, a crash) are swept at startup.
CREATE TABLE blobs (
    id         TEXT    PRIMARY KEY,
    size       INTEGER NOT NULL DEFAULT 0,
    sha256     TEXT,
    complete   INTEGER NOT NULL DEFAULT 0 CHECK (complete IN (0, 1)),
    created_at INTEGER NOT NULL
);
CREATE TABLE blob_chunks (
    blob_id TEXT    NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    data    BLOB    NOT NULL,
    PRIMARY KEY (blob_id, seq)
);

-- Files attached to a document. The older `files` path of a job and the v2
-- `attachments` path of any document are two views of these rows.
CREATE TABLE attachments (
    id                      TEXT    PRIMARY KEY,
    workspace_id            TEXT    NOT NULL REFERENCES workspaces (id),
    document_id             TEXT    NOT NULL REFERENCES documents (id),
    blob_id                 TEXT    NOT NULL REFERENCES blobs (id),
    caption                 TEXT    NOT NULL,
    format                  TEXT    NOT NULL,
    client_reference_number TEXT,
    vendor_reference_number TEXT,
    description             TEXT,
    created_at              INTEGER NOT NULL,
    updated_at              INTEGER NOT NULL
);
CREATE INDEX attachments_document ON attachments (document_id, created_at, id);

-- Version 3: the change log (src/changes/). One entry per change of a record,
-- appended in the same transaction as the change; `seq` is the feeds' cursor.
CREATE TABLE changes (
    -- Strictly increasing in commit order (one writer): the last one plus
    -- one. Never reused: retention always keeps the newest entry.
    seq           INTEGER PRIMARY KEY,
    event_id      TEXT    NOT NULL,
    -- `job.created`, `port.deactivated`, ...
    type          TEXT    NOT NULL,
    entity_type   TEXT    NOT NULL,
    entity_id     TEXT    NOT NULL,
    -- Which feed serves it: the location catalogs or the workspace service.
    feed          TEXT    NOT NULL CHECK (feed IN ('locations', 'workspaces')),
    -- For workspace records: the workspace, and the tenants owning its client
    -- and vendor organizations (who may read the record).
    workspace_id  TEXT,
    client_tenant TEXT,
    vendor_tenant TEXT,
    actor         TEXT    NOT NULL,
    occurred_at   INTEGER NOT NULL,
    -- The record's envelope after the change (for a delete, before it), as JSON.
    record        TEXT    NOT NULL
);
CREATE INDEX changes_workspace ON changes (workspace_id, seq) WHERE workspace_id IS NOT NULL;

-- How far retention has trimmed the log: a cursor below this has lost entries.
CREATE TABLE change_log (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    trimmed_through INTEGER NOT NULL
);
INSERT INTO change_log (id, trimmed_through) VALUES (1, 0);

-- Version 4: webhooks (src/webhooks/). Deliveries read the change log (no
-- second queue): a webhook's `cursor` is the last change it delivered.

-- A receiver of changes, owned by a tenant.
CREATE TABLE webhooks (
    id               TEXT    PRIMARY KEY,
    tenant           TEXT    NOT NULL,
    -- The account that made it: an admin's webhook sees what an admin sees,
    -- while that account is still an admin of the tenant.
    created_by       TEXT    NOT NULL,
    url              TEXT    NOT NULL,
    -- JSON array of type names and `entity.*` patterns; empty: every type.
    event_types      TEXT    NOT NULL CHECK (json_valid(event_types)),
    -- Only this workspace's changes; NULL: everything the owner may read.
    -- No foreign key: a deleted workspace disables the webhook, never blocks the delete.
    workspace_id     TEXT,
    description      TEXT,
    active           INTEGER NOT NULL CHECK (active IN (0, 1)),
    disabled_reason  TEXT,
    -- HMAC needs the key itself: kept as given, never answered again.
    secret           TEXT    NOT NULL,
    -- The secret before the last rotation, honoured until `previous_until` (ms).
    previous_secret  TEXT,
    previous_until   INTEGER,
    -- The last change delivered (a change log `seq`).
    cursor           INTEGER NOT NULL,
    -- Failed attempts at the change after `cursor`, since `failing_since` (ms).
    failures         INTEGER NOT NULL DEFAULT 0,
    failing_since    INTEGER,
    next_attempt_at  INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX webhooks_tenant ON webhooks (tenant, created_at);

-- Every attempt to deliver a change to a webhook, and manual redeliveries
-- waiting for their turn (`outcome` 'queued').
CREATE TABLE webhook_deliveries (
    id            TEXT    PRIMARY KEY,
    webhook_id    TEXT    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    event_id      TEXT    NOT NULL,
    event_type    TEXT    NOT NULL,
    -- 1 for the first attempt at this change on this webhook.
    attempt       INTEGER NOT NULL,
    -- A manual redelivery: the attempt it repeats.
    redelivery_of TEXT,
    outcome       TEXT    NOT NULL CHECK (outcome IN ('queued', 'succeeded', 'failed')),
    -- The receiver's HTTP status, when it answered.
    status        INTEGER,
    duration_ms   INTEGER,
    error         TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at, id);
CREATE INDEX webhook_deliveries_queued ON webhook_deliveries (webhook_id) WHERE outcome = 'queued';

-- Version 5: party consent (src/workspaces/). A workspace that names another
-- tenant's organization as a party is an invitation to that tenant: `pending`
-- until it accepts (`active`) or declines (`declined`). Until it accepts, the
-- invited party does not count as a party: its tenant does not see the
-- workspace, no documents can be added to it, and the organization stays
-- deletable.
-- Workspaces made before this version are `active` with no invited party:
-- they stay exactly as they were.
ALTER TABLE workspaces ADD COLUMN state TEXT NOT NULL DEFAULT 'active'
    CHECK (state IN ('active', 'pending', 'declined'));
-- Which party was invited (`client` or `vendor`); NULL when none was.
ALTER TABLE workspaces ADD COLUMN invited TEXT CHECK (invited IN ('client', 'vendor'));
CREATE INDEX workspaces_pending ON workspaces (state) WHERE state = 'pending';

-- A tenant's workspaces, by index: one row per tenant that sees the
-- workspace (the owner of a party that counts; `Workspace::members`), kept
-- by the workspace store in the same transaction as the workspace.
CREATE TABLE workspace_members (
    tenant       TEXT    NOT NULL,
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant, workspace_id)
) WITHOUT ROWID;
CREATE INDEX workspace_members_list ON workspace_members (tenant, created_at, workspace_id);
CREATE INDEX workspace_members_workspace ON workspace_members (workspace_id);
-- How many workspaces each tenant sees (its rows in workspace_members), kept
-- with them by the workspace store in the same transaction: the total of a
-- tenant's workspace list without a filter, exact at any length, without
-- counting the rows.
CREATE TABLE tenant_workspaces (
    tenant     TEXT    PRIMARY KEY,
    workspaces INTEGER NOT NULL CHECK (workspaces >= 0)
) WITHOUT ROWID;
