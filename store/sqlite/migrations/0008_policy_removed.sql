-- 0008: a removed policy is kept, with its attempts' history, until it is
-- purged. removed_at is when it was removed (NULL: in force). The name of
-- a removed policy is free for a new one: the row's name becomes '~' and
-- its id (no policy name holds '~'), and removed_name keeps the name it had.

ALTER TABLE policies ADD COLUMN removed_at INTEGER;
ALTER TABLE policies ADD COLUMN removed_name TEXT NOT NULL DEFAULT '';
