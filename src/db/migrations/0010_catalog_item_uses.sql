-- Version 10: a count of the documents that refer to each catalog item
-- (`catalog_item_uses`) instead of a row per (document, item) link: the
-- delete of an item needs only whether it is used, and the links' two
-- B-trees took a quarter of the pages a quality result's commit wrote.
-- PostgreSQL's step is the same with its own types and the commit-counting
-- trigger every table has (`db::pg::schema`).
CREATE TABLE catalog_item_uses (
    item_id TEXT    PRIMARY KEY REFERENCES catalog_items (id) ON DELETE CASCADE,
    uses    INTEGER NOT NULL CHECK (uses >= 0)
) WITHOUT ROWID;
INSERT INTO catalog_item_uses (item_id, uses)
    SELECT item_id, count(*) FROM document_refs GROUP BY item_id;
DROP TABLE document_refs;
