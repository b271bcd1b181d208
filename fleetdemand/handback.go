package fleetdemand

import (
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// short is a host whose share wants more jobs run than its room shows
// runners (busy and listening or starting): it has not started what was
// placed on it. Spares are left out: a host short of spares serves its
// jobs.
type short struct {
	since time.Time // when the holder first saw it short
	room  time.Time // its room's UpdatedAt then
	// back: it stayed short for Config.HandBack without publishing a new
	// room, so its jobs were handed back: it counts as gone (its busy
	// jobs count, nothing new is placed on it) until it publishes again.
	back bool
}

// handBack reports whether r's host is handed back now, noting hosts as
// they fall short of their written shares and forgetting them when they
// catch up or publish a new room (h.mu held).
func (h *holder) handBack(r store.FleetRoom, now time.Time) bool {
	if h.shorts == nil {
		h.shorts = make(map[rm.HostID]short)
	}
	sh, ok := h.shorts[r.Host]
	if ok && !sh.room.Equal(r.UpdatedAt) {
		delete(h.shorts, r.Host) // heard from since: its room is news
		ok = false
	}
	if ok && sh.back {
		return true
	}
	if wanted(h.written, r.Host) <= r.Busy+r.Idle {
		delete(h.shorts, r.Host)
		return false
	}
	if !ok {
		h.shorts[r.Host] = short{since: now, room: r.UpdatedAt}
		return false
	}
	if now.Sub(sh.since) < h.s.cfg.HandBack {
		return false
	}
	sh.back = true
	h.shorts[r.Host] = sh
	h.s.log.Warn("a host has not started the jobs placed on it; placing them elsewhere until it publishes its room again",
		"host", r.Host.String(), "wanted", wanted(h.written, r.Host), "busy", r.Busy, "idle", r.Idle, "for", now.Sub(sh.since).Round(time.Second))
	return true
}

// nextHandBack is how long until a host short of its share would be
// handed back, if one is (h.mu held).
func (h *holder) nextHandBack(now time.Time) (time.Duration, bool) {
	var next time.Duration
	found := false
	for _, sh := range h.shorts {
		if sh.back {
			continue
		}
		d := max(sh.since.Add(h.s.cfg.HandBack).Sub(now), 0)
		if !found || d < next {
			next, found = d, true
		}
	}
	return next, found
}

// wanted is host's Wanted in shares.
func wanted(shares []store.FleetShare, host rm.HostID) int {
	for _, sh := range shares {
		if sh.Host == host {
			return sh.Wanted
		}
	}
	return 0
}
