-- 0005: a policy's cap on warm spares (runners started and listening beyond
-- Number 0004 belongs to another step (the memory limit); this one applies on top of either.
-- the jobs in flight, scale-set mode; in classic mode, runners prepared
-- ahead). Policies written before it keep one, the front ends' default.

ALTER TABLE policies ADD COLUMN spare INTEGER NOT NULL DEFAULT 1 CHECK (spare >= 0);
