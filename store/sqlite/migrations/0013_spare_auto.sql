-- 0013: a policy's warm spares sized by the day (its spare column is then
-- 0, and stays checked as a count). Policies written before keep the fixed
-- cap they had.

ALTER TABLE policies ADD COLUMN spare_auto INTEGER NOT NULL DEFAULT 0;
