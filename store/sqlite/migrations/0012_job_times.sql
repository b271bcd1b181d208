-- 0012: when GitHub queued an attempt's job and when it assigned it to the
-- scale set (unix nanoseconds, NULL when not told): with the attempt's idle_at
-- and busy_at they split the job's start into GitHub's part, the manager's
-- and the runner's (`attempt show`).

ALTER TABLE attempts ADD COLUMN job_queued_at INTEGER;
ALTER TABLE attempts ADD COLUMN job_assigned_at INTEGER;
