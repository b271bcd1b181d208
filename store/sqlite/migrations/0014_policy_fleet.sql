-- 0014: a policy the fleet serves (rm.Policy.Fleet), as the PostgreSQL
-- journal's step 0011 adds it. This journal, one host's, refuses such a
-- policy; the column keeps the statements both journals share the same.

ALTER TABLE policies ADD COLUMN fleet INTEGER NOT NULL DEFAULT 0;
