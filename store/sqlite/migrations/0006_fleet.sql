-- 0006: what the hosts of a fleet know of each other (the single host of a
-- SQLite journal answers the same queries): each host's version and first
-- registration, and the weight of every job an attempt completed.
-- Numbers 0004 and 0005 are left to steps written elsewhere; this one
-- applies on top of either.

ALTER TABLE hosts ADD COLUMN version TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN registered_at INTEGER;

-- Kept apart from attempts (no foreign key): a job's weight outlives its
-- attempt's row and its policy.
CREATE TABLE job_weights (
	attempt_id          TEXT PRIMARY KEY,
	policy_id           TEXT NOT NULL,
	host_id             TEXT NOT NULL DEFAULT '',
	repository          TEXT NOT NULL DEFAULT '',
	workflow            TEXT NOT NULL DEFAULT '',
	job_name            TEXT NOT NULL DEFAULT '',
	peak_rss_bytes      INTEGER NOT NULL DEFAULT 0,
	cpu_avg_millicores  INTEGER NOT NULL DEFAULT 0,
	cpu_peak_millicores INTEGER NOT NULL DEFAULT 0,
	samples             INTEGER NOT NULL DEFAULT 0,
	duration_ns         INTEGER NOT NULL DEFAULT 0,
	ended_at            INTEGER NOT NULL
) STRICT;

CREATE INDEX job_weights_policy ON job_weights (policy_id, ended_at);
CREATE INDEX job_weights_job ON job_weights (repository, workflow, job_name, ended_at);
