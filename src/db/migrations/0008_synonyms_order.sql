-- Version 8: a workspace's synonyms of every catalog in their list order
-- (issue #16). `synonyms_workspace` serves the list of one catalog (`xtype`);
-- without `xtype` the list read every synonym of the workspace and sorted
-- them for each page. The same text is PostgreSQL's step to version 8
-- (`db::pg::schema`).
CREATE INDEX synonyms_workspace_all ON synonyms (workspace_id, created_at, id);
