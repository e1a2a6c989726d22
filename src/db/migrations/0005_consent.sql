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
