-- Partner-proposed transactions (issue 49 item 2) are sends too: kind '' is a wallet's own
-- transfer (wallet_send), 'proposed' a transaction a partner proposed and the wallet signed.
-- data is what the proposal was: the EVM calldata (0x hex; to_address its contract, amount its
-- value in wei) or the Solana message the wallet signed (base64). A proposed send is never
-- signed again: on Solana its blockhash expiring unlanded ends it dropped.
ALTER TABLE chain_sends ADD COLUMN kind TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE chain_sends ADD COLUMN data TEXT NOT NULL DEFAULT '';
