-- Partner integrations: a /connect/<slug> page where a human issues a key already scoped for
-- the integration, and its manifest.json.
CREATE TABLE integrations (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    slug        TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    scopes      {{.JSON}} NOT NULL,
    methods     {{.JSON}} NOT NULL,
    created_at  {{.TS}} NOT NULL
);
--bun:split
ALTER TABLE api_keys ADD COLUMN integration_id TEXT REFERENCES integrations (id);
