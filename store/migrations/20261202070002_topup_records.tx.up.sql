-- Every credited top-up is a movement on the record (issue 48): an invocations row of kind
-- topup, written with its credit from now on. Top-ups credited before get theirs here, so the
-- usage log shows them and ledger-check finds each credited top-up's row.
INSERT INTO invocations (request_id, account_id, key_id, intent_id, handle, category, intent_revision, args, state,
    reserve_micro, max_partner_fee_micro, max_platform_fee_micro, outcome_code, kind, network, tx_hash, value_micro,
    created_at, dispatched_at, finished_at)
SELECT t.request_id, t.account_id, t.key_id, '', 'credit_topup', '', 0, '{}', 'succeeded',
    0, 0, 0, '', 'topup', 'eip155:' || CAST(t.chain_id AS TEXT), t.pay_tx, t.amount_atomic,
    t.created_at, t.updated_at, t.updated_at
FROM credit_topups t
WHERE t.state = 'credited' AND NOT EXISTS (SELECT 1 FROM invocations i WHERE i.request_id = t.request_id);
