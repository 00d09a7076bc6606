-- Idempotency answers are sealed under the master key (issue 46 item 6), as wallet keys are,
-- so `admin reseal` moves them with the rest: master_key_id names the key that sealed a row's
-- answer. '' is the key earlier releases derived from the server secret, which this release
-- still opens (a previous release's rows during an upgrade, for their 24 hours) and reseal
-- moves to the master key.
ALTER TABLE idempotency_keys ADD COLUMN master_key_id TEXT NOT NULL DEFAULT '';
