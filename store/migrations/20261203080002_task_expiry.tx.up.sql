-- A task's expiry (issue 50): created_at + ttl_ms, as a column the sweep can compare (every
-- replica runs it: past expires_at a task's answer is dropped and tasks/get answers that it
-- has expired; a day later the row is deleted). Tasks written before it get theirs here.
ALTER TABLE tasks ADD COLUMN expires_at {{.TS}};
--bun:split
{{if .Postgres}}UPDATE tasks SET expires_at = created_at + ttl_ms * INTERVAL '1 millisecond' WHERE expires_at IS NULL{{else}}UPDATE tasks SET expires_at = strftime('%Y-%m-%d %H:%M:%f', created_at, '+' || (ttl_ms / 1000.0) || ' seconds') || '+00:00' WHERE expires_at IS NULL{{end}};
--bun:split
CREATE INDEX tasks_expiry_idx ON tasks (expires_at);
