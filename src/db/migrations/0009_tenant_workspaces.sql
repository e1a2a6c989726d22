-- Version 9: how many workspaces each tenant sees, kept with
-- workspace_members (issue #16): a tenant's workspace list answers its total
-- without counting its rows. PostgreSQL's step to version 9 is the same with
-- its own types and the commit-counting trigger every table has
-- (`db::pg::schema`).
CREATE TABLE tenant_workspaces (
    tenant     TEXT    PRIMARY KEY,
    workspaces INTEGER NOT NULL CHECK (workspaces >= 0)
) WITHOUT ROWID;
INSERT INTO tenant_workspaces (tenant, workspaces)
    SELECT tenant, count(*) FROM workspace_members GROUP BY tenant;
