-- 0002: the message sessions of scale sets this journal's managers opened,
-- one per scale set (GitHub allows no more), so a manager killed without
-- closing its session finds and deletes it at its next start instead of
-- waiting on a session conflict.

CREATE TABLE scale_set_sessions (
	scale_set_id INTEGER PRIMARY KEY,
	session_id   TEXT NOT NULL,
	owner        TEXT NOT NULL,
	host_id      TEXT NOT NULL DEFAULT '',
	scope        TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX scale_set_sessions_host ON scale_set_sessions (host_id);
