-- 0011: fleet policies, served by every host sharing this database
-- (rm.Policy.Fleet, as the SQLite journal's step 0014 adds the column,
-- which that journal keeps false), and what their hosts share
-- (store.FleetSets): the lease of each policy's message session, each
-- host's room, the holder's shares of the demand and the job events it
-- passes on. Their times are the database's clock (clock_timestamp()), in
-- unix nanoseconds as every time here: hosts' clocks never meet. A purged
-- policy takes its rows along; a removed one keeps them until then.

ALTER TABLE policies ADD COLUMN IF NOT EXISTS fleet BOOLEAN NOT NULL DEFAULT false;

-- One row per policy ever leased, kept when released (holder '') so that
-- the next holder's token is greater than every one before.
CREATE TABLE IF NOT EXISTS fleet_leases (
	policy_id   TEXT PRIMARY KEY REFERENCES policies (id) ON DELETE CASCADE,
	holder      TEXT NOT NULL,
	token       BIGINT NOT NULL CHECK (token > 0),
	acquired_at BIGINT NOT NULL,
	renewed_at  BIGINT NOT NULL,
	expires_at  BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS fleet_rooms (
	policy_id   TEXT NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
	host_id     TEXT NOT NULL,
	capacity    INTEGER NOT NULL CHECK (capacity >= 0),
	busy        INTEGER NOT NULL CHECK (busy >= 0),
	idle        INTEGER NOT NULL CHECK (idle >= 0),
	free_memory BIGINT NOT NULL,
	updated_at  BIGINT NOT NULL,
	PRIMARY KEY (policy_id, host_id)
);

CREATE TABLE IF NOT EXISTS fleet_shares (
	policy_id  TEXT NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
	host_id    TEXT NOT NULL,
	wanted     INTEGER NOT NULL CHECK (wanted >= 0),
	spares     INTEGER NOT NULL CHECK (spares >= 0),
	-- []store.FleetPlacement
	placed     JSONB NOT NULL DEFAULT '[]',
	token      BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (policy_id, host_id)
);

-- Queued for a host until it takes them, oldest (lowest id) first.
CREATE TABLE IF NOT EXISTS fleet_events (
	id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	policy_id  TEXT NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
	host_id    TEXT NOT NULL,
	-- rm.JobEvent
	event      JSONB NOT NULL,
	created_at BIGINT NOT NULL
);

CREATE INDEX IF NOT EXISTS fleet_events_host ON fleet_events (policy_id, host_id, id);
