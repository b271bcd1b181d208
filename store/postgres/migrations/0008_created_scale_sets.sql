-- 0008: the scale sets this journal's managers created at GitHub, as the
-- SQLite journal's step 0011 adds them.

CREATE TABLE IF NOT EXISTS created_scale_sets (
	scale_set_id BIGINT PRIMARY KEY,
	name         TEXT NOT NULL,
	scope        TEXT NOT NULL,
	host_id      TEXT NOT NULL DEFAULT '',
	created_at   BIGINT NOT NULL
);

CREATE INDEX IF NOT EXISTS created_scale_sets_scope_name ON created_scale_sets (scope, name);
