-- 0013: warm jobs (docs/warm.md), as the SQLite journal's step 0016 adds
-- them: a policy's cold switch and the slot an attempt ran in.

ALTER TABLE policies ADD COLUMN IF NOT EXISTS cold BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS slot TEXT NOT NULL DEFAULT '';
