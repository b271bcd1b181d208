// Package datadir owns the data directory: where everything under it is
// (Dir), the lock a daemon holds on it, the host's id and the memory peaks
// kept in its state/, the kept logs of ended attempts, and the file
// operations its trees need (atomic writes of small files, removal of what
// a job left read-only, a probe of whether it can be written). Every other
// package asks a Dir for a path instead of joining names, so the layout is
// read in one place:
//
//	journal.db (+ -wal, -shm)   the SQLite journal
//	manager.lock                the daemon's lock (Lock)
//	manager.sock                the local API's socket
//	daemon.log                  the daemon's output under launchd
//	state/host-id               the host's id (LoadOrCreateHostID)
//	state/memory-peaks.toml     the memory peaks (LoadPeaks, SavePeaks)
//	runners/<version>/          an installed runner
//	runners/.bad/<version>      a release that failed its trial
//	runners/.trial-<version>/   a release being staged for its trial
//	attempts/<id>/              a native attempt's root (runner.log)
//	attempts/.failed/<id>/      a failed native attempt's root, kept a while
//	attempts/.spare/            roots prepared for the next launches
//	attempts/failed-containers/ a failed container attempt's output
//	logs/<id>/                  an ended attempt's kept logs (KeepLogs)
//	vm/<id>/                    a VM attempt's directory
//	vm/.failed/<id>/            a failed VM attempt's console, kept a while
//	vm/.overlays/               the VM disks' templates
//	credentials/github          GitHub's credentials in the OS store on Linux
//	                            (0600, the directory 0700; .dpapi on Windows)
//	slots/, caches/             reserved: per-repository workspace slots and
//	                            caches (Slots, Caches), not used yet
//
// The default location is the configuration's (configfile.DefaultDataDir):
// the file format decides where data_dir is when it names none.
package datadir
