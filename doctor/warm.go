package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/warm"
)

// warm checks the workspace slots (docs/warm.md): their size against
// [warm] cap and what the disk can give them above admission's floor,
// slots a crash left open, and the fresh HOME's settings.
func (r *run) warm(ctx context.Context, st store.Store, host rm.Host, policies []rm.Policy) {
	w := configfile.DefaultWarm()
	if r.Config != nil {
		w = r.Config.Warm
	}
	pool := warm.NewPool(datadir.New(r.DataDir), warm.WithCap(int64(w.Cap.Bytes())))
	if live, err := st.LiveAttempts(ctx, host.ID); err == nil {
		pool.HoldLive(live, policies)
	}
	list, err := pool.List()
	if err != nil {
		r.add(warn("warm-slots", "workspace slots", err.Error()))
		return
	}
	r.add(slotsCheck(list, w, pool.Cap(), r.DiskFloor, func() (uint64, error) { return platform.DiskFree(r.DataDir) }))
	if c, ok := openCheck(list); ok {
		r.add(c)
	}
	home, _ := os.UserHomeDir()
	r.add(homeCheck(w, home))
}

// slotsCheck weighs the slots against the cap and the disk: free is the
// data directory's free disk.
func slotsCheck(list []warm.Info, w configfile.Warm, cap int64, floor uint64, free func() (uint64, error)) Check {
	var size, evictable int64
	for _, s := range list {
		size += s.Bytes
		if s.HeldBy.IsZero() {
			evictable += s.Bytes
		}
	}
	const name = "warm-slots"
	if !w.Enabled && len(list) == 0 {
		return ok(name, "workspace slots: off ([warm] enabled = false)")
	}
	what := fmt.Sprintf("workspace slots: %d, %s of the %s cap", len(list), bytesize.Format(uint64(size)), bytesize.Format(uint64(cap)))
	if !w.Enabled {
		return warn(name, what+", left from when warm jobs were on ([warm] enabled = false)",
			"nothing uses them now: `runner-manager warm rm --all` (daemon stopped) frees "+bytesize.Format(uint64(evictable)))
	}
	if size > cap {
		return warn(name, what+": over the cap, held slots counted",
			"the daemon evicts the least recently used free slots after the next job; `runner-manager warm prune` (daemon stopped) does now")
	}
	disk, err := free()
	if err != nil {
		return warn(name, what, "the disk's free space is not known: "+err.Error())
	}
	if disk < floor && evictable > 0 {
		return warn(name, fmt.Sprintf("%s; the disk has %s free, below the floor of %s", what, bytesize.Format(disk), bytesize.Format(floor)),
			fmt.Sprintf("the daemon evicts free slots (%s) before it refuses a job for disk; `runner-manager warm prune --to SIZE` (daemon stopped) frees them now", bytesize.Format(uint64(evictable))))
	}
	// The slots may grow to the cap: can the disk give that above the floor?
	if room := int64(disk) + size - int64(floor); room < cap {
		return warn(name, fmt.Sprintf("%s; the disk can give them %s at most above the floor of %s (%s free)", what,
			bytesize.Format(uint64(max(room, 0))), bytesize.Format(floor), bytesize.Format(disk)),
			"admission evicts free slots before it refuses a job for disk, so jobs still start, colder; lower [warm] cap to what the disk holds")
	}
	return ok(name, what)
}

// openCheck reports the slots a crash left open: their last attempt never
// gave them back and no live attempt holds them.
func openCheck(list []warm.Info) (Check, bool) {
	var open []string
	for _, s := range list {
		if s.Open != "" && s.HeldBy.IsZero() {
			open = append(open, s.Name()+" (attempt "+s.Open+")")
		}
	}
	if len(open) == 0 {
		return Check{}, false
	}
	return warn("warm-open", "workspace slots left open by a crash: "+strings.Join(open, ", "),
		"each is emptied before its next use (what its job wrote was never vouched for); `runner-manager warm rm REPO` (daemon stopped) removes them now"), true
}

// homeCheck says what a native attempt's fresh HOME gets of the manager's
// HOME (home, "" when unknown).
func homeCheck(w configfile.Warm, home string) Check {
	const name = "warm-home"
	if w.SharedHome {
		return warn(name, "native runners share the manager's HOME ([warm] shared_home = true): every job of every repository reads and writes the same one",
			"set [warm] shared_home = false: each attempt gets a fresh HOME")
	}
	if home == "" {
		return warn(name, "fresh HOMEs: the manager's HOME is not known, so nothing is copied or linked into them", "set HOME for the daemon")
	}
	var present, absent, missing []string
	for _, f := range w.HomeFiles {
		if fi, err := os.Stat(filepath.Join(home, f)); err == nil && fi.Mode().IsRegular() {
			present = append(present, f)
		} else {
			absent = append(absent, f)
		}
	}
	for _, l := range w.HomeLinks {
		if _, err := os.Stat(filepath.Join(home, l)); err == nil {
			present = append(present, l+" (linked)")
		} else {
			missing = append(missing, l)
		}
	}
	detail := "fresh HOMEs get " + orNone(present)
	if len(absent) > 0 {
		detail += "; not in " + home + ", so not given: " + strings.Join(absent, ", ")
	}
	if len(missing) > 0 {
		return warn(name, detail+"; [warm] home_links not in "+home+": "+strings.Join(missing, ", "),
			"create them, or take them out of [warm] home_links")
	}
	return ok(name, detail)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing of the manager's HOME"
	}
	return strings.Join(s, ", ")
}
