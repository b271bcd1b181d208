-- 0010: a policy's warm spares sized by the day, as the SQLite journal's
-- step 0013 adds it.

ALTER TABLE policies ADD COLUMN IF NOT EXISTS spare_auto BOOLEAN NOT NULL DEFAULT false;
