-- Version 7: lists that cost the same in a workspace of 1,000 jobs and of
-- 100,000 (issue #16). One index per access path, so that no plan depends on
-- the planner's statistics: the jobs of a workspace (partial on
-- kind = 'job', which the list's SQL names literally), and the documents of a
-- job. The job fields clients filter and sort on, and the result fields, each
-- have an expression index that names the JSON path literally, as the lists'
-- SQL does (src/listing.rs); each index ends in (created_at, id), the lists'
-- default order and every sort's tiebreak. `documents::kinds` lists the
-- indexed fields of each kind (`Kind::indexed`).
DROP INDEX documents_workspace;
DROP INDEX documents_job;
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

-- The other lists' default order, after their own condition.
DROP INDEX catalog_items_name;
CREATE INDEX catalog_items_list ON catalog_items (workspace_id, catalog, created_at, id);
CREATE INDEX catalog_items_name ON catalog_items (workspace_id, catalog, name_folded, created_at, id);
DROP INDEX synonyms_workspace;
CREATE INDEX synonyms_workspace ON synonyms (workspace_id, catalog, created_at, id);
DROP INDEX attachments_document;
CREATE INDEX attachments_document ON attachments (document_id, created_at, id);
DROP INDEX webhook_deliveries_webhook;
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at, id);
CREATE INDEX organizations_created ON organizations (created_at, id);
CREATE INDEX workspaces_created ON workspaces (created_at, id);

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
INSERT OR IGNORE INTO workspace_members (tenant, workspace_id, created_at)
    SELECT o.audience, w.id, w.created_at FROM workspaces w JOIN organizations o
    ON o.id IN (CASE WHEN w.state = 'active' OR w.invited IS NOT 'client' THEN w.client_id END,
                CASE WHEN w.state = 'active' OR w.invited IS NOT 'vendor' THEN w.vendor_id END);
