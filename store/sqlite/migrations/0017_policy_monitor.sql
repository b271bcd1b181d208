-- 0017: a monitor-only policy (rm.Policy.Monitor), which watches its
-- target's demand and starts no runner, as the PostgreSQL journal's step
-- 0014 adds it.

ALTER TABLE policies ADD COLUMN monitor INTEGER NOT NULL DEFAULT 0;
