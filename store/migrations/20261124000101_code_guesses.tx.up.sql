-- E-mail codes that strangers cannot void (issue 24). A code is no longer replaced while live:
-- a repeat signup re-sends it, so the code is derived from a random seed kept in the row
-- (HMAC under the server secret; the code itself is still never stored, only its HMAC). Wrong
-- guesses no longer void a code: they are counted per (e-mail, source address) in
-- email_code_attempts and per source address here, in a fixed window.
ALTER TABLE email_codes ADD COLUMN code_seed TEXT NOT NULL DEFAULT '';
--bun:split
CREATE TABLE email_code_sources (
    source       TEXT PRIMARY KEY,
    window_start {{.TS}} NOT NULL,
    guesses      INTEGER NOT NULL
);
