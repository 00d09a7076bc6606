-- The service's Ed25519 keys, for rotation with overlap: the key signing now (current), the one
-- published ahead of a rotation (next), and the one it replaced (previous, still verifying
-- receipts). Private halves sealed with the master key.
CREATE TABLE service_keys (
    kid            TEXT PRIMARY KEY,
    status         TEXT NOT NULL,
    sealed_private {{.Bytes}} NOT NULL,
    master_key_id  TEXT NOT NULL,
    public_pem     TEXT NOT NULL,
    created_at     {{.TS}} NOT NULL,
    activated_at   {{.TS}}
);
--bun:split
CREATE UNIQUE INDEX service_keys_one_current ON service_keys (status) WHERE status IN ('current', 'next');
