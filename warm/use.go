package warm

import (
	"slices"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// HoldLive marks held the slots the journal's live attempts of this host
// name (rm.Attempt.Slot), each under its policy's backend (policies, by
// id; an unknown policy's attempt under the default backend): what a
// restarted daemon does before its first lease, and what the commands
// that prune or remove slots without a daemon do first, so that a runner
// a crash left running keeps the work folder it runs in.
func (p *Pool) HoldLive(live []rm.Attempt, policies []rm.Policy) {
	backend := map[rm.PolicyID]rm.Backend{}
	for _, pol := range policies {
		backend[pol.ID] = pol.Backend.OrDefault()
	}
	for _, a := range live {
		if a.Slot == "" {
			continue
		}
		b, ok := backend[a.Policy]
		if !ok {
			b = rm.DefaultBackend
		}
		p.Hold(b, a.ID, a.Slot)
	}
}

// Reclaim evicts free slots, least recently used first, until need bytes
// are freed or no free slot is left, and returns what it freed as the
// slots' records say: admission's hook (reconcile.Admission.Reclaim) when
// the disk is below its floor, so that a job is not refused for space
// that cold caches hold.
func (p *Pool) Reclaim(need uint64) uint64 {
	size, err := p.Size()
	if err != nil || size <= 0 || need == 0 {
		return 0
	}
	target := size - int64(min(need, uint64(size)))
	evicted, err := p.Prune(target)
	if err != nil {
		p.log.Warn("workspace slots not all evicted for disk space", "err", err)
	}
	var freed uint64
	for _, s := range evicted {
		freed += uint64(max(s.Bytes, 0))
	}
	if freed > 0 {
		p.log.Info("evicted workspace slots: the disk was below admission's floor", "slots", len(evicted), "bytes", freed)
	}
	return freed
}

// Status is the slots as the read model shows them (status.Warm): their
// size against the cap, and one line per repository and backend, most
// recently used first.
func (p *Pool) Status() (*status.Warm, error) {
	list, err := p.List()
	if err != nil {
		return nil, err
	}
	return Summary(list, p.cap), nil
}

// Summary sums slots by repository and backend for the read model.
func Summary(list []Info, cap int64) *status.Warm {
	out := &status.Warm{CapBytes: cap, Repos: []status.WarmRepo{}}
	at := map[[2]string]int{}
	for _, s := range list {
		key := [2]string{string(s.Backend.OrDefault()), strings.ToLower(s.Repo)}
		i, ok := at[key]
		if !ok {
			i = len(out.Repos)
			at[key] = i
			out.Repos = append(out.Repos, status.WarmRepo{Repo: s.Repo, Backend: key[0]})
		}
		r := &out.Repos[i]
		r.Slots++
		if !s.HeldBy.IsZero() {
			r.Held++
		}
		r.Bytes += s.Bytes
		r.Uses += s.Uses
		r.Hits += s.Hits
		if s.LastUsed.After(r.LastUsed) {
			r.LastUsed = s.LastUsed
		}
		out.Slots++
		out.Bytes += s.Bytes
	}
	slices.SortStableFunc(out.Repos, func(a, b status.WarmRepo) int { return b.LastUsed.Compare(a.LastUsed) })
	return out
}

