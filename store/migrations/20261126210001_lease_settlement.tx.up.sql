-- A call drawn on a budget lease names its lease's ledger transaction when it is recorded,
-- and its money is posted once for all of the lease's calls when the lease is settled (its
-- return, its renewal, or the sweeper after its deadline), which sums the calls naming it.
CREATE INDEX invocations_ledger_txn_idx ON invocations (ledger_txn) WHERE ledger_txn IS NOT NULL;
