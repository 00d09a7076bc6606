-- MCP authorization (OAuth 2.1): clients that registered themselves (RFC 7591), authorization
-- codes (PKCE S256), grants (a human's consent, backed by an API key holding the chosen scopes
-- and limits) and their access and refresh tokens, stored hashed.
CREATE TABLE oauth_clients (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    redirect_uris {{.JSON}} NOT NULL,
    client_uri    TEXT NOT NULL DEFAULT '',
    created_at    {{.TS}} NOT NULL
);
--bun:split
CREATE TABLE oauth_codes (
    hash            TEXT PRIMARY KEY,
    client_id       TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    grant_id        TEXT NOT NULL,
    redirect_uri    TEXT NOT NULL,
    code_challenge  TEXT NOT NULL,
    resource        TEXT NOT NULL,
    expires_at      {{.TS}} NOT NULL,
    used_at         {{.TS}}
);
--bun:split
CREATE TABLE oauth_grants (
    id           TEXT PRIMARY KEY,
    client_id    TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key_id       TEXT NOT NULL REFERENCES api_keys (id),
    resource     TEXT NOT NULL,
    created_at   {{.TS}} NOT NULL,
    last_used_at {{.TS}},
    revoked_at   {{.TS}},
    revoked_why  TEXT NOT NULL DEFAULT ''
);
--bun:split
CREATE INDEX oauth_grants_account_idx ON oauth_grants (account_id);
--bun:split
CREATE TABLE oauth_tokens (
    hash        TEXT PRIMARY KEY,
    grant_id    TEXT NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    expires_at  {{.TS}} NOT NULL,
    used_at     {{.TS}},
    created_at  {{.TS}} NOT NULL
);
--bun:split
CREATE INDEX oauth_tokens_grant_idx ON oauth_tokens (grant_id);
