-- Discover in a few milliseconds with 10,000 intents (issue 12).
--
-- PostgreSQL: the GIN index took new rows into its pending list (fastupdate), which every
-- search scans whole until a vacuum merges it; after a burst of publishing the planner then
-- preferred a sequential scan testing every row. Intents are published rarely and searched
-- often, so rows go straight into the index, and what is pending now is merged.
--
-- SQLite: ranking joined every full-text match to partner_intents by its text id, read from
-- the FTS row's stored content, which cost several times the search itself. intent_search
-- keeps the few columns ranking and visibility need under an integer key that is also the
-- FTS rowid; intent_fts is rebuilt keyed by it (same columns and tokenizer, so the same bm25).
-- The triggers keep both in step; an update that changes no searched text (a re-probe, a
-- deactivation) leaves the FTS row alone.
{{if .Postgres}}
ALTER INDEX partner_intents_search_idx SET (fastupdate = off);
--bun:split
SELECT gin_clean_pending_list('partner_intents_search_idx');
{{else}}
DROP TRIGGER intent_fts_insert;
--bun:split
DROP TRIGGER intent_fts_update;
--bun:split
DROP TRIGGER intent_fts_delete;
--bun:split
DROP TABLE intent_fts;
--bun:split
CREATE TABLE intent_search (
    doc                 INTEGER PRIMARY KEY,
    intent_id           TEXT NOT NULL UNIQUE,
    handle              TEXT NOT NULL,
    category            TEXT NOT NULL,
    verification_status TEXT NOT NULL,
    is_active           BOOLEAN NOT NULL,
    owner_id            TEXT NOT NULL,
    archived_at         TIMESTAMP
);
--bun:split
CREATE VIRTUAL TABLE intent_fts USING fts5(
    handle, name, category, description, samples,
    tokenize = 'porter unicode61'
);
--bun:split
INSERT INTO intent_search (intent_id, handle, category, verification_status, is_active, owner_id, archived_at)
SELECT id, public_identifier, category, verification_status, is_active, owner_id, archived_at FROM partner_intents;
--bun:split
INSERT INTO intent_fts (rowid, handle, name, category, description, samples)
SELECT s.doc, replace(replace(replace(pi.public_identifier, '@', ' '), '-', ' '), '_', ' '),
       pi.name, pi.category, pi.description, pi.sample_queries
FROM partner_intents AS pi JOIN intent_search AS s ON s.intent_id = pi.id;
--bun:split
CREATE TRIGGER intent_search_insert AFTER INSERT ON partner_intents BEGIN
    INSERT INTO intent_search (intent_id, handle, category, verification_status, is_active, owner_id, archived_at)
    VALUES (new.id, new.public_identifier, new.category, new.verification_status, new.is_active, new.owner_id, new.archived_at);
    INSERT INTO intent_fts (rowid, handle, name, category, description, samples)
    SELECT doc, replace(replace(replace(new.public_identifier, '@', ' '), '-', ' '), '_', ' '),
           new.name, new.category, new.description, new.sample_queries
    FROM intent_search WHERE intent_id = new.id;
END;
--bun:split
CREATE TRIGGER intent_search_update AFTER UPDATE ON partner_intents BEGIN
    UPDATE intent_search SET intent_id = new.id, handle = new.public_identifier, category = new.category,
        verification_status = new.verification_status, is_active = new.is_active, owner_id = new.owner_id,
        archived_at = new.archived_at
    WHERE intent_id = old.id;
    DELETE FROM intent_fts WHERE rowid = (SELECT doc FROM intent_search WHERE intent_id = new.id)
        AND (old.public_identifier IS NOT new.public_identifier OR old.name IS NOT new.name
             OR old.category IS NOT new.category OR old.description IS NOT new.description
             OR old.sample_queries IS NOT new.sample_queries);
    INSERT INTO intent_fts (rowid, handle, name, category, description, samples)
    SELECT doc, replace(replace(replace(new.public_identifier, '@', ' '), '-', ' '), '_', ' '),
           new.name, new.category, new.description, new.sample_queries
    FROM intent_search WHERE intent_id = new.id
        AND (old.public_identifier IS NOT new.public_identifier OR old.name IS NOT new.name
             OR old.category IS NOT new.category OR old.description IS NOT new.description
             OR old.sample_queries IS NOT new.sample_queries);
END;
--bun:split
CREATE TRIGGER intent_search_delete AFTER DELETE ON partner_intents BEGIN
    DELETE FROM intent_fts WHERE rowid = (SELECT doc FROM intent_search WHERE intent_id = old.id);
    DELETE FROM intent_search WHERE intent_id = old.id;
END;
{{end}}
