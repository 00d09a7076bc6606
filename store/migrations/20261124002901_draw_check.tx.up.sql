-- A merged batch's draws from budget leases are checked in the database, so that they and
-- the writes that may follow only a full draw travel in one round trip (issue 28). A DO block
-- did it, compiled afresh each time (about 70 µs a batch); this function is compiled once
-- per connection. It raises SQLSTATE SB001 unless a draw changed one row per lease.
{{if .Postgres}}CREATE FUNCTION switchboard_check_draws(drawn bigint, leases bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF drawn <> leases THEN
        RAISE EXCEPTION 'a merged draw missed its lease' USING ERRCODE = 'SB001';
    END IF;
END $${{else}}SELECT 1{{end}};
