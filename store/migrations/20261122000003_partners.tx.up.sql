-- Partners and their published intents (the spec's "partner intent row").
-- Rendered as a Go template: .TS and .JSON are the dialect's column types. The two JSON Schemas
-- are TEXT in both dialects so the partner's bytes come back exactly as published.
CREATE TABLE partners (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL UNIQUE REFERENCES accounts (id) ON DELETE CASCADE,
    created_at  {{.TS}} NOT NULL
);
--bun:split
CREATE TABLE partner_intents (
    id                  TEXT PRIMARY KEY,
    partner_id          TEXT NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    owner_id            TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    public_identifier   TEXT NOT NULL UNIQUE,
    name                TEXT NOT NULL,
    description         TEXT NOT NULL,
    category            TEXT NOT NULL,
    capabilities        {{.JSON}} NOT NULL,
    binding_type        TEXT NOT NULL,
    tool_endpoint       TEXT NOT NULL,
    timeout_ms          INTEGER NOT NULL,
    parameters_schema   TEXT NOT NULL,
    output_schema       TEXT,
    fee_rate            TEXT NOT NULL,
    fee_rate_unit       TEXT NOT NULL,
    payout_addresses    {{.JSON}},
    tier                TEXT NOT NULL DEFAULT 'one_shot',
    pricing_shape       {{.JSON}},
    sample_queries      {{.JSON}} NOT NULL,
    is_active           BOOLEAN NOT NULL DEFAULT FALSE,
    is_core_intent      BOOLEAN NOT NULL DEFAULT FALSE,
    verification_status TEXT NOT NULL DEFAULT 'UNVERIFIED',
    revision            INTEGER NOT NULL DEFAULT 1,
    archived_at         {{.TS}},
    created_at          {{.TS}} NOT NULL,
    updated_at          {{.TS}} NOT NULL
);
--bun:split
CREATE INDEX partner_intents_partner_created_idx ON partner_intents (partner_id, created_at);
--bun:split
CREATE INDEX partner_intents_owner_idx ON partner_intents (owner_id, created_at);
