-- Quayside schema: the whole current schema of a data file.
--
-- A new file gets exactly this; an older file is brought here by the steps in
-- src/db/migrate.rs. The version lives in PRAGMA user_version, set by the migrator.
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
