-- 0014: a monitor-only policy (rm.Policy.Monitor), which watches its
-- target's demand and starts no runner, as the SQLite journal's step 0017
-- adds it.

ALTER TABLE policies ADD COLUMN IF NOT EXISTS monitor BOOLEAN NOT NULL DEFAULT false;
