-- 0002: what the hosts of a fleet know of each other: each host's version
-- and first registration, and the weight of every job an attempt completed
-- on any host, from which every host admits.

ALTER TABLE hosts ADD COLUMN version TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN registered_at BIGINT;

-- Kept apart from attempts (no foreign key): a job's weight outlives its
-- attempt's row and its policy.
CREATE TABLE job_weights (
	attempt_id          TEXT PRIMARY KEY,
	policy_id           TEXT NOT NULL,
	host_id             TEXT NOT NULL DEFAULT '',
	repository          TEXT COLLATE "C" NOT NULL DEFAULT '',
	workflow            TEXT COLLATE "C" NOT NULL DEFAULT '',
	job_name            TEXT COLLATE "C" NOT NULL DEFAULT '',
	peak_rss_bytes      BIGINT NOT NULL DEFAULT 0,
	cpu_avg_millicores  BIGINT NOT NULL DEFAULT 0,
	cpu_peak_millicores BIGINT NOT NULL DEFAULT 0,
	samples             BIGINT NOT NULL DEFAULT 0,
	duration_ns         BIGINT NOT NULL DEFAULT 0,
	ended_at            BIGINT NOT NULL
);

CREATE INDEX job_weights_policy ON job_weights (policy_id, ended_at);
CREATE INDEX job_weights_job ON job_weights (repository, workflow, job_name, ended_at);
