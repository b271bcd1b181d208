-- 0009: a job has two ids, kept apart. job_key is the id the job's source
-- gave (runnermanager.Job.ID): a scale-set message's jobId, an opaque
-- string (a UUID on github.com), or in classic mode the REST job number in
-- decimal; '' while no job is known. job_id stays the REST job number (0
-- when not known). A row written before this step held only job_id: a
-- classic job's number, or a scale-set job's jobId where it read as a
-- number (0 where it did not, which is no job known). Its key is that
-- number in decimal.

ALTER TABLE attempts ADD COLUMN job_key TEXT NOT NULL DEFAULT '';
UPDATE attempts SET job_key = CAST(job_id AS TEXT) WHERE job_id <> 0;
