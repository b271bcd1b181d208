-- 0001: hosts, policies and the journal of attempts.
-- Times are unix nanoseconds (UTC); NULL means "not yet". uint64 quantities
-- (bytes, process start stamps) are stored as their int64 bit pattern.

CREATE TABLE hosts (
	id           TEXT PRIMARY KEY,
	name         TEXT NOT NULL,
	memory_bytes INTEGER NOT NULL DEFAULT 0,
	cpus         INTEGER NOT NULL DEFAULT 0,
	os           TEXT NOT NULL DEFAULT '',
	arch         TEXT NOT NULL DEFAULT '',
	seen_at      INTEGER
) STRICT;

CREATE TABLE policies (
	id              TEXT PRIMARY KEY,
	name            TEXT NOT NULL UNIQUE,
	host_id         TEXT NOT NULL,
	scope_kind      TEXT NOT NULL CHECK (scope_kind IN ('repo', 'org', 'enterprise')),
	scope_name      TEXT NOT NULL,
	runner_group    TEXT NOT NULL,
	scale_set       TEXT NOT NULL DEFAULT '',
	-- classic labels as a comma list (a valid label holds no comma)
	labels          TEXT NOT NULL DEFAULT '',
	backend         TEXT NOT NULL DEFAULT '',
	runner_dir      TEXT NOT NULL DEFAULT '',
	min_idle        INTEGER NOT NULL DEFAULT 0,
	max_runners     INTEGER NOT NULL,
	memory_estimate INTEGER NOT NULL DEFAULT 0,
	paused          INTEGER NOT NULL DEFAULT 0,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX policies_host ON policies (host_id);

CREATE TABLE attempts (
	id                  TEXT PRIMARY KEY,
	policy_id           TEXT NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
	state               TEXT NOT NULL CHECK (state IN ('pending', 'registering', 'starting', 'idle', 'busy', 'finished', 'failed')),
	runner_name         TEXT NOT NULL DEFAULT '',
	github_runner_id    INTEGER NOT NULL DEFAULT 0,
	pid                 INTEGER NOT NULL DEFAULT 0,
	process_start       INTEGER NOT NULL DEFAULT 0,
	job_id              INTEGER NOT NULL DEFAULT 0,
	job_run_id          INTEGER NOT NULL DEFAULT 0,
	job_workflow        TEXT NOT NULL DEFAULT '',
	job_name            TEXT NOT NULL DEFAULT '',
	exit_code           INTEGER,
	peak_rss_bytes      INTEGER NOT NULL DEFAULT 0,
	cpu_avg_millicores  INTEGER NOT NULL DEFAULT 0,
	cpu_peak_millicores INTEGER NOT NULL DEFAULT 0,
	samples             INTEGER NOT NULL DEFAULT 0,
	outcome_kind        TEXT NOT NULL DEFAULT '',
	outcome_reason      TEXT NOT NULL DEFAULT '',
	outcome_detail      TEXT NOT NULL DEFAULT '',
	created_at          INTEGER NOT NULL,
	register_at         INTEGER,
	started_at          INTEGER,
	idle_at             INTEGER,
	busy_at             INTEGER,
	ended_at            INTEGER,
	updated_at          INTEGER,
	last_message        TEXT NOT NULL DEFAULT ''
) STRICT;

-- The live attempts of a policy, without touching history: only rows that
-- have not ended are in this index, so its size is the number of live
-- runners, whatever the journal's age. The state list must match the
-- queries' WHERE clause word for word for the planner to use it.
CREATE INDEX attempts_live ON attempts (policy_id, created_at)
	WHERE state NOT IN ('finished', 'failed');

-- Listing: a policy's history, and everything by time.
CREATE INDEX attempts_policy_created ON attempts (policy_id, created_at);
CREATE INDEX attempts_created ON attempts (created_at);
