// Package attempts answers what people ask of the journal about runner
// attempts: listings filtered as a user writes the filter ("live",
// "--since 7d", a policy's name), one attempt by the id a user typed, and
// an attempt's runner log, printed once or followed until the attempt
// ends. Programs parse their flags into a Query and print what comes back.
package attempts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/policyedit"
	"github.com/runner-manager/runner-manager/store"
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", rm.ErrInvalid, fmt.Sprintf(format, args...))
}

// Query is a listing as a user asks for it; zero fields do not filter.
type Query struct {
	// Policy is a policy's name.
	Policy string
	// States are state names, or "live" for every live state.
	States []string
	// Since is a duration ago (90m, 24h, 7d) or a time (2025-03-01,
	// RFC 3339).
	Since string
	// Limit caps the listing, newest first; 0 lists all.
	Limit int
}

// Filter turns q into a store filter, at now; errors wrap rm.ErrInvalid
// and say what a valid value looks like.
func (q Query) Filter(ctx context.Context, st store.Store, now time.Time) (store.AttemptFilter, error) {
	f := store.AttemptFilter{Limit: q.Limit}
	if q.Limit < 0 {
		return f, invalid("--limit %d must not be negative", q.Limit)
	}
	for _, s := range q.States {
		if s == "live" {
			for _, st := range rm.AttemptStates {
				if st.Live() {
					f.States = append(f.States, st)
				}
			}
			continue
		}
		st, err := rm.ParseAttemptState(strings.TrimSpace(s))
		if err != nil {
			return f, err
		}
		f.States = append(f.States, st)
	}
	if q.Since != "" {
		t, err := ParseSince(q.Since, now)
		if err != nil {
			return f, err
		}
		f.Since = t
	}
	if q.Policy != "" {
		p, err := policyedit.ByName(ctx, st, q.Policy)
		if err != nil {
			// A removed policy's history: the last removed of that name.
			removed, rerr := st.RemovedPolicies(ctx)
			if rerr != nil {
				return f, rerr
			}
			var last *rm.Policy
			for i, r := range removed {
				if r.Name == q.Policy && (last == nil || r.RemovedAt.After(last.RemovedAt)) {
					last = &removed[i]
				}
			}
			if last == nil {
				return f, err
			}
			p = *last
		}
		f.Policy = p.ID
	}
	return f, nil
}

// ParseSince reads "90m", "24h", "7d", a date or an RFC 3339 time (local
// time when it names no zone), as of now.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(n, "%d", &days); err == nil && fmt.Sprint(days) == n && days >= 0 {
			return now.Add(-time.Duration(days) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	// "-5h" reads as "5 hours ago" to some: say the form that works, once
	// it does.
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		if _, err := ParseSince(rest, now); err == nil {
			return time.Time{}, invalid("--since %q: give how long ago without a sign (--since %s)", s, rest)
		}
	}
	return time.Time{}, invalid("--since %q is not a duration (90m, 24h, 7d) or a time (2025-03-01, 2025-03-01T15:04:05Z)", s)
}

// PolicyNames maps the journal's policies' ids to their names, the
// removed policies' (kept for their history) included.
func PolicyNames(ctx context.Context, st store.Store) (map[rm.PolicyID]string, error) {
	ps, err := Policies(ctx, st)
	if err != nil {
		return nil, err
	}
	names := make(map[rm.PolicyID]string, len(ps))
	for id, p := range ps {
		names[id] = p.Name
	}
	return names, nil
}

// Policies maps the ids of the journal's policies, in force and removed
// (RemovedAt set), to them: what an attempt's history names.
func Policies(ctx context.Context, st store.Store) (map[rm.PolicyID]rm.Policy, error) {
	ps, err := st.Policies(ctx)
	if err != nil {
		return nil, err
	}
	removed, err := st.RemovedPolicies(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[rm.PolicyID]rm.Policy, len(ps)+len(removed))
	for _, p := range append(ps, removed...) {
		out[p.ID] = p
	}
	return out, nil
}

// Find reads the attempt whose id a user typed, whole or a unique prefix
// of it (listings and the TUI show ids shortened); an id that does not
// parse, that the journal does not know or, as a prefix, names several
// attempts is an error wrapping rm.ErrInvalid that says where ids are
// listed (and, for several, which).
func Find(ctx context.Context, st store.Store, id string) (rm.Attempt, error) {
	if p := strings.ToLower(strings.TrimSpace(id)); p != "" && len(p) < idLen && isIDPrefix(p) {
		return findPrefix(ctx, st, p)
	}
	aid, err := rm.ParseAttemptID(id)
	if err != nil {
		return rm.Attempt{}, err
	}
	if aid.IsZero() {
		return rm.Attempt{}, invalid("give an attempt id (`runner-manager attempts` lists them)")
	}
	at, err := st.Attempt(ctx, aid)
	if errors.Is(err, store.ErrNotFound) {
		return at, rm.WithClass(rm.ClassNotFound, invalid("no attempt %s in the journal: `runner-manager attempts` lists them", aid))
	}
	return at, err
}

// idLen is how long an id is written.
const idLen = 26

// idAlphabet is the letters an id is written in (rm's id encoding).
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

func isIDPrefix(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune(idAlphabet, r) {
			return false
		}
	}
	return true
}

// maxCandidates is how many attempts an ambiguous prefix's error names.
const maxCandidates = 8

// findPrefix reads the one attempt whose id starts with prefix.
func findPrefix(ctx context.Context, st store.Store, prefix string) (rm.Attempt, error) {
	all, err := st.Attempts(ctx, store.AttemptFilter{})
	if err != nil {
		return rm.Attempt{}, err
	}
	var found []rm.Attempt
	for _, at := range all {
		if strings.HasPrefix(at.ID.String(), prefix) {
			found = append(found, at)
		}
	}
	switch len(found) {
	case 0:
		return rm.Attempt{}, rm.WithClass(rm.ClassNotFound, invalid("no attempt id starts with %q in the journal: `runner-manager attempts` lists them", prefix))
	case 1:
		return found[0], nil
	}
	ids := make([]string, 0, maxCandidates)
	for i, at := range found {
		if i == maxCandidates {
			ids = append(ids, fmt.Sprintf("and %d more", len(found)-maxCandidates))
			break
		}
		ids = append(ids, at.ID.String())
	}
	return rm.Attempt{}, invalid("%d attempts' ids start with %q: %s; give more of the id", len(found), prefix, strings.Join(ids, ", "))
}
