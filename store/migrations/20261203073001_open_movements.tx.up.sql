-- The sweeper judges the on-chain movements left dispatching (an x402 payment whose answer a
-- crash lost) by the chain, oldest first: a partial index keeps that scan to the few rows in
-- flight.
CREATE INDEX invocations_open_idx ON invocations (kind, dispatched_at) WHERE state = 'dispatching';
