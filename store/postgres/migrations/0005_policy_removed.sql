-- 0005: a removed policy is kept, with its attempts' history, until it is
-- purged. removed_at is when it was removed (NULL: in force). Names are
-- unique among the policies in force only: a removed policy's name is
-- free for a new one.

ALTER TABLE policies ADD COLUMN removed_at BIGINT;
ALTER TABLE policies DROP CONSTRAINT policies_name_key;
CREATE UNIQUE INDEX policies_name_in_force ON policies (name) WHERE removed_at IS NULL;
