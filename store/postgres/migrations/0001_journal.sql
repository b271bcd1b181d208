-- 0001: the journal, as the SQLite journal keeps it: hosts, policies, every
-- runner attempt, scale-set message sessions and host leases.
-- Times are unix nanoseconds (UTC); NULL means "not yet". uint64 quantities
-- (bytes, process start stamps) are stored as their int64 bit pattern.
-- Names sort by bytes (COLLATE "C"), as SQLite sorts them.

CREATE TABLE hosts (
	id           TEXT PRIMARY KEY,
	name         TEXT COLLATE "C" NOT NULL,
	memory_bytes BIGINT NOT NULL DEFAULT 0,
	cpus         INTEGER NOT NULL DEFAULT 0,
	os           TEXT NOT NULL DEFAULT '',
	arch         TEXT NOT NULL DEFAULT '',
	seen_at      BIGINT
);

CREATE TABLE policies (
	id              TEXT PRIMARY KEY,
	name            TEXT COLLATE "C" NOT NULL UNIQUE,
	host_id         TEXT NOT NULL,
	scope_kind      TEXT NOT NULL CHECK (scope_kind IN ('repo', 'org', 'enterprise')),
	scope_name      TEXT NOT NULL,
	runner_group    TEXT NOT NULL,
	scale_set       TEXT NOT NULL DEFAULT '',
	labels          TEXT[] NOT NULL DEFAULT '{}',
	backend         TEXT NOT NULL DEFAULT '',
	runner_dir      TEXT NOT NULL DEFAULT '',
	min_idle        INTEGER NOT NULL DEFAULT 0,
	max_runners     INTEGER NOT NULL,
	memory_estimate BIGINT NOT NULL DEFAULT 0,
	paused          BOOLEAN NOT NULL DEFAULT false,
	created_at      BIGINT NOT NULL,
	updated_at      BIGINT NOT NULL
);

CREATE INDEX policies_host ON policies (host_id);

CREATE TABLE attempts (
	-- insertion order, to break ties of created_at (SQLite's rowid)
	seq                 BIGINT GENERATED ALWAYS AS IDENTITY,
	id                  TEXT PRIMARY KEY,
	policy_id           TEXT NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
	state               TEXT NOT NULL CHECK (state IN ('pending', 'registering', 'starting', 'idle', 'busy', 'finished', 'failed')),
	runner_name         TEXT NOT NULL DEFAULT '',
	github_runner_id    BIGINT NOT NULL DEFAULT 0,
	pid                 BIGINT NOT NULL DEFAULT 0,
	process_start       BIGINT NOT NULL DEFAULT 0,
	job_id              BIGINT NOT NULL DEFAULT 0,
	job_run_id          BIGINT NOT NULL DEFAULT 0,
	job_workflow        TEXT NOT NULL DEFAULT '',
	job_name            TEXT NOT NULL DEFAULT '',
	exit_code           BIGINT,
	peak_rss_bytes      BIGINT NOT NULL DEFAULT 0,
	cpu_avg_millicores  BIGINT NOT NULL DEFAULT 0,
	cpu_peak_millicores BIGINT NOT NULL DEFAULT 0,
	samples             BIGINT NOT NULL DEFAULT 0,
	outcome_kind        TEXT NOT NULL DEFAULT '',
	outcome_reason      TEXT NOT NULL DEFAULT '',
	outcome_detail      TEXT NOT NULL DEFAULT '',
	created_at          BIGINT NOT NULL,
	register_at         BIGINT,
	started_at          BIGINT,
	idle_at             BIGINT,
	busy_at             BIGINT,
	ended_at            BIGINT,
	updated_at          BIGINT,
	last_message        TEXT NOT NULL DEFAULT ''
);

-- The live attempts of a policy, without touching history: only rows that
-- have not ended are in this index, so its size is the number of live
-- runners, whatever the journal's age. Queries must state the same
-- condition for the planner to use it.
CREATE INDEX attempts_live ON attempts (policy_id, created_at, seq)
	WHERE state NOT IN ('finished', 'failed');

-- Listing: a policy's history, and everything by time (read backwards for
-- newest first).
CREATE INDEX attempts_policy_created ON attempts (policy_id, created_at, seq);
CREATE INDEX attempts_created ON attempts (created_at, seq);

-- The message sessions of scale sets this journal's managers opened, one per
-- scale set (GitHub allows no more).
CREATE TABLE scale_set_sessions (
	scale_set_id BIGINT PRIMARY KEY,
	session_id   TEXT NOT NULL,
	owner        TEXT NOT NULL,
	host_id      TEXT NOT NULL DEFAULT '',
	scope        TEXT NOT NULL DEFAULT '',
	created_at   BIGINT NOT NULL
);

CREATE INDEX scale_set_sessions_host ON scale_set_sessions (host_id);

-- The host lease: one daemon runs a host at a time.
CREATE TABLE host_leases (
	host_id       TEXT PRIMARY KEY,
	holder        TEXT NOT NULL,
	pid           BIGINT NOT NULL,
	process_start BIGINT NOT NULL DEFAULT 0,
	hostname      TEXT NOT NULL DEFAULT '',
	boot_id       TEXT NOT NULL DEFAULT '',
	acquired_at   BIGINT NOT NULL,
	renewed_at    BIGINT NOT NULL,
	expires_at    BIGINT NOT NULL
);
