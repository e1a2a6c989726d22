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
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at);
CREATE INDEX webhook_deliveries_queued ON webhook_deliveries (webhook_id) WHERE outcome = 'queued';
