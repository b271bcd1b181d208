-- 0003: the host lease. One daemon runs a host at a time: it takes its
-- host's row here at start, renews it every few seconds and drops it when
-- it stops. A second daemon of the same host (a copied data directory, two
-- data directories over one journal) finds the row held and refuses.
-- Number 0002 belongs to another step; this one applies on top of either.

CREATE TABLE host_leases (
	host_id       TEXT PRIMARY KEY,
	-- a random token per daemon run
	holder        TEXT NOT NULL,
	pid           INTEGER NOT NULL,
	-- the holder's process start stamp, so a reused pid is not taken for it
	process_start INTEGER NOT NULL DEFAULT 0,
	hostname      TEXT NOT NULL DEFAULT '',
	-- the machine's boot (Linux: /proc/sys/kernel/random/boot_id)
	boot_id       TEXT NOT NULL DEFAULT '',
	acquired_at   INTEGER NOT NULL,
	renewed_at    INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL
) STRICT;
