-- Keys form a tree (issue 35): parent_id is the key a key was minted from; NULL is a root (the
-- key agent_verify issues, one the portal's human issues, and every key older than this
-- column). Parents never change. A key's spend row counts its own calls and its descendants'.
-- One table per migration: each ALTER locks its table alone until it commits, so a migration
-- run under load never holds one table while waiting for another (two in one transaction
-- deadlocked against calls that lock reservations, then read api_keys).
ALTER TABLE api_keys ADD COLUMN parent_id TEXT REFERENCES api_keys (id) ON DELETE CASCADE;
--bun:split
CREATE INDEX api_keys_parent_idx ON api_keys (parent_id) WHERE parent_id IS NOT NULL;
