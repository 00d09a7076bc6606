-- One row per call (issue 28). A read drawn on a budget lease is recorded as its invocation
-- row alone: its history goes in trail (JSON, the events a separate table would hold), its
-- partner fee's payout book in payout_book, and its ledger postings into one transaction per
-- batch (ledger_txn), which ledger-check proves equal to the sum of the calls that name it.
ALTER TABLE invocations ADD COLUMN trail TEXT;
--bun:split
ALTER TABLE invocations ADD COLUMN payout_book TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE invocations ADD COLUMN ledger_txn TEXT;
--bun:split
-- An operator reading one call finds its batch's transaction; only rows of no one request
-- (batches, grants, payouts: a few per batch, not per call) pay for this index.
CREATE INDEX ledger_entries_batch_idx ON ledger_entries (txn_id) WHERE request_id IS NULL;
--bun:split
-- Rows of no one request (a batch's legs: about one per call) no longer enter the request
-- index, which only ever looks one request's rows up.
DROP INDEX ledger_entries_request_idx;
--bun:split
CREATE INDEX ledger_entries_request_idx ON ledger_entries (request_id) WHERE request_id IS NOT NULL;
