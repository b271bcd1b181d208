-- 0011: the scale sets this journal's managers created at GitHub, so that
-- removing a policy deletes the scale set it made (and never one it found),
-- and doctor can list those no policy uses any more.

CREATE TABLE IF NOT EXISTS created_scale_sets (
	scale_set_id INTEGER PRIMARY KEY,
	name         TEXT NOT NULL,
	scope        TEXT NOT NULL,
	host_id      TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX IF NOT EXISTS created_scale_sets_scope_name ON created_scale_sets (scope, name);
