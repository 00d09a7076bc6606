-- Fees as the spec describes them: the caller's tier (platform basis points on routed value),
-- and on every invocation the routed value, the gas estimate and worst case it reserved, and the
-- gas it was charged.
ALTER TABLE accounts ADD COLUMN tier TEXT NOT NULL DEFAULT 'standard';
--bun:split
ALTER TABLE invocations ADD COLUMN routed_value_micro BIGINT;
--bun:split
ALTER TABLE invocations ADD COLUMN gas_chain TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE invocations ADD COLUMN gas_estimate_micro BIGINT NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE invocations ADD COLUMN max_gas_micro BIGINT NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE invocations ADD COLUMN gas_micro BIGINT NOT NULL DEFAULT 0;
