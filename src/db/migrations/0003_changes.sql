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
