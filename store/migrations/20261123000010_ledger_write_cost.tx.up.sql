-- Cheaper ledger writes (issue 12). Every call writes four to eight ledger rows, and each row
-- paid for four indexes. Nothing looks rows up by txn_id: the ledger check groups the whole
-- table by it, which needs no index. Dropping it takes a quarter of the ledger's index work
-- off every call.
DROP INDEX ledger_entries_txn_idx;
