-- Version 11: the documents' kind checked with comparisons, not
-- `kind IN (...)`. SQLite checks an IN list of more than two constants
-- through a temporary B-tree (a B-tree, a pager and a page cache, made and
-- freed) at every INSERT or UPDATE of a document: about 5% of a quality
-- result's POST. The two checks accept the same rows, so the table's text
-- is changed in place, as SQLite's documentation describes for a CHECK
-- (https://www.sqlite.org/lang_altertable.html, "making other kinds of table
-- schema changes"), instead of copying every document into a new table.
-- The schema is then read again by this connection (RESET), and a table made
-- and dropped moves the schema cookie, so that every other connection
-- reads it again too. PostgreSQL checks an IN list without such a cost: it
-- has no step 11 of its own (`db::pg::schema`).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql, 'CHECK (kind IN (''job'', ''loadPortInformation'',
                             ''quantityResult'', ''qualityResult'', ''timelog''))',
                     'CHECK (kind = ''job'' OR kind = ''loadPortInformation''
                             OR kind = ''quantityResult'' OR kind = ''qualityResult''
                             OR kind = ''timelog'')')
 WHERE type = 'table' AND name = 'documents';
PRAGMA writable_schema = RESET;
CREATE TABLE quayside_schema_moved (x);
DROP TABLE quayside_schema_moved;
