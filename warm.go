package runnermanager

import (
	"context"
	"fmt"
)

// WarmSlot is the workspace slot an attempt runs in: the n-th slot of its
// repository on this host, a work folder kept between the repository's
// jobs (its checkout, the runner's tool cache, the ecosystems' caches) and
// leased to one attempt at a time (docs/warm.md). A launcher makes Dir the
// runner's work folder: the native one links its root's _work to it, the
// container one mounts it there, the vm one gives the guest the slot's
// disk. Everything else of the attempt (its root, runner files, JIT
// configuration, credentials, HOME) stays its own and goes with it.
type WarmSlot struct {
	// Repo is the repository, "owner/name".
	Repo string
	// N numbers the repository's slots on this host, from 1.
	N int
	// Dir is the slot's work folder on this host (for a vm slot, the
	// directory holding its disk).
	Dir string
	// Fresh says the slot was made for this attempt: nothing in it yet,
	// the job starts cold.
	Fresh bool
}

// String is the slot's name as the journal and the front ends write it:
// "owner/name#n".
func (s WarmSlot) String() string { return fmt.Sprintf("%s#%d", s.Repo, s.N) }

// Slots leases the workspace slots of a host's attempts (package warm's
// Pool). One serves every loop of a host.
type Slots interface {
	// Lease gives attempt a slot of repo for backend, its own until
	// Release.
	Lease(backend Backend, repo string, attempt AttemptID) (WarmSlot, error)
	// Hold marks slot (WarmSlot.String) held by a live attempt again,
	// after a restart.
	Hold(backend Backend, attempt AttemptID, slot string)
	// Release ends attempt's hold; discard empties the slot.
	Release(attempt AttemptID, discard bool) error
	// Free counts repo's slots for backend that no attempt holds.
	Free(backend Backend, repo string) int
}

// RunOrigins is a Registrar that can say whether a workflow run came from
// a fork (its head repository is not the repository it runs in): what a
// warm slot's writes are trusted by. GitHub's word, never the job's own.
type RunOrigins interface {
	ForkRun(ctx context.Context, repo string, runID int64) (bool, error)
}
