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

-- Jobs and the four kinds of document that attach to a job. `body` is the
-- document as JSON, with catalog references stored as record ids.
CREATE TABLE documents (
    id           TEXT    PRIMARY KEY,
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    kind         TEXT    NOT NULL CHECK (kind IN ('job', 'loadPortInformation',
                             'quantityResult', 'qualityResult', 'timelog')),
    -- The job a result belongs to; NULL for jobs.
    job_id       TEXT    REFERENCES documents (id),
    body         TEXT    NOT NULL CHECK (json_valid(body)),
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX documents_workspace ON documents (workspace_id, kind, created_at);
CREATE INDEX documents_job ON documents (job_id, kind);
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
CREATE INDEX catalog_items_name ON catalog_items (workspace_id, catalog, name_folded);

-- Which catalog items a document refers to, so that a referenced item cannot be deleted.
CREATE TABLE document_refs (
    document_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    item_id     TEXT NOT NULL REFERENCES catalog_items (id),
    PRIMARY KEY (document_id, item_id)
) WITHOUT ROWID;
CREATE INDEX document_refs_item ON document_refs (item_id);

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
CREATE INDEX synonyms_workspace ON synonyms (workspace_id, catalog);
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
CREATE INDEX attachments_document ON attachments (document_id, created_at);
