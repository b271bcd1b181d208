-- 0016: a monitor-only policy (rm.Policy.Monitor), which watches its
-- target's demand and starts no runner, as the PostgreSQL journal's step
-- 0013 adds it.

ALTER TABLE policies ADD COLUMN monitor INTEGER NOT NULL DEFAULT 0;
