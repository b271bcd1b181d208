-- 0009: when GitHub queued an attempt's job and assigned it to the scale
-- set, as the SQLite journal's step 0012 adds them.

ALTER TABLE attempts ADD COLUMN IF NOT EXISTS job_queued_at BIGINT;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS job_assigned_at BIGINT;
