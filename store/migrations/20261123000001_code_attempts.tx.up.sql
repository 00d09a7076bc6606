-- Wrong e-mail code guesses counted per client address, so one client's guesses lock out that
-- client, not the inbox's owner (the total per code is still capped in email_codes.attempts).
CREATE TABLE email_code_attempts (
    email       TEXT NOT NULL,
    client_addr TEXT NOT NULL,
    code_hash   TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    PRIMARY KEY (email, client_addr)
);
