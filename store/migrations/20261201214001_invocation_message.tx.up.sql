-- A confirmation must send what was quoted (issue 46 item 6): message_hash is the hex SHA-256
-- of the message, without its handle, that a quote or a call sent for approval was asked with;
-- confirmRequestId with another message is CONFLICT. NULL for calls that wait for no one (a
-- read dispatched at once), a flat fee's (its args are its message), and every call a
-- previous release records.
ALTER TABLE invocations ADD COLUMN message_hash TEXT;
