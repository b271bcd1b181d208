-- 0005: a policy's cap on warm spares (runners started and listening beyond
-- the jobs in flight; scale-set mode only). Policies written before it keep
-- one, the front ends' default. Number 0004 belongs to another step (a
-- policy's memory limit); this one applies on top of either.

ALTER TABLE policies ADD COLUMN spare INTEGER NOT NULL DEFAULT 1 CHECK (spare >= 0);
