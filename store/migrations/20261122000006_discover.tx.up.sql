-- Full-text search over intents for discover: a weighted tsvector with a GIN index on
-- PostgreSQL, an FTS5 table kept in step by triggers on SQLite. Handle and name weigh most,
-- then category and description, then sample queries.
{{if .Postgres}}
ALTER TABLE partner_intents ADD COLUMN search_doc tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', translate(public_identifier, '@-_', '   ')), 'A') ||
    setweight(to_tsvector('english', name), 'A') ||
    setweight(to_tsvector('english', category), 'B') ||
    setweight(to_tsvector('english', description), 'B') ||
    setweight(to_tsvector('english', sample_queries::text), 'C')
) STORED;
--bun:split
CREATE INDEX partner_intents_search_idx ON partner_intents USING GIN (search_doc);
{{else}}
CREATE VIRTUAL TABLE intent_fts USING fts5(
    intent_id UNINDEXED, handle, name, category, description, samples,
    tokenize = 'porter unicode61'
);
--bun:split
CREATE TRIGGER intent_fts_insert AFTER INSERT ON partner_intents BEGIN
    INSERT INTO intent_fts (intent_id, handle, name, category, description, samples)
    VALUES (new.id, replace(replace(replace(new.public_identifier, '@', ' '), '-', ' '), '_', ' '),
            new.name, new.category, new.description, new.sample_queries);
END;
--bun:split
CREATE TRIGGER intent_fts_update AFTER UPDATE ON partner_intents BEGIN
    DELETE FROM intent_fts WHERE intent_id = old.id;
    INSERT INTO intent_fts (intent_id, handle, name, category, description, samples)
    VALUES (new.id, replace(replace(replace(new.public_identifier, '@', ' '), '-', ' '), '_', ' '),
            new.name, new.category, new.description, new.sample_queries);
END;
--bun:split
CREATE TRIGGER intent_fts_delete AFTER DELETE ON partner_intents BEGIN
    DELETE FROM intent_fts WHERE intent_id = old.id;
END;
{{end}}
