-- 0013: warm jobs (docs/warm.md), as the SQLite journal's step 0016 adds
-- them: a policy's cold switch and the slot an attempt ran in.

ALTER TABLE policies ADD COLUMN IF NOT EXISTS cold BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS slot TEXT NOT NULL DEFAULT '';
-- How many workspace slots of a fleet policy's repository wait free on a
-- host: placement prefers a host where one does.
ALTER TABLE fleet_rooms ADD COLUMN IF NOT EXISTS warm_free INTEGER NOT NULL DEFAULT 0;
