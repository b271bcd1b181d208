-- 0004: a policy's memory limit per attempt (0: none; -1, the largest
-- unsigned value read back: from the expected peak), and where an
-- attempt's usage was read from (its cgroup or its process tree).

ALTER TABLE policies ADD COLUMN memory_limit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN usage_source TEXT NOT NULL DEFAULT '';
