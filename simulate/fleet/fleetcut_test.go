package fleet_test

import (
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// pgProxy is a TCP proxy in front of the test server's unix socket: one
// host reaches the database through it, and cutting it cuts that host
// from the database alone (connections dropped, new ones refused) while
// it lives on and reaches GitHub.
type pgProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newPGProxy proxies to the unix socket of srv; it closes when t ends.
func newPGProxy(t *testing.T, srv *pgtest.Server) *pgProxy {
	t.Helper()
	socks, err := filepath.Glob(filepath.Join(srv.SocketDir(), ".s.PGSQL.*"))
	require.NoError(t, err)
	var target string
	for _, s := range socks {
		if !strings.HasSuffix(s, ".lock") {
			target = s
		}
	}
	require.NotEmpty(t, target, "the server's socket in %s", srv.SocketDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &pgProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// url is database db's URL through the proxy.
func (p *pgProxy) url(srv *pgtest.Server, db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(pgtest.User, srv.Password()), Host: p.ln.Addr().String(),
		Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

func (p *pgProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close() // refused: the database is out of reach
			continue
		}
		p.mu.Unlock()
		up, err := net.Dial("unix", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, up) {
			continue
		}
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// track keeps a connection's two ends, unless the proxy was cut since.
func (p *pgProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *pgProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// setCut cuts the proxy (every connection dropped, new ones refused) or
// restores it.
func (p *pgProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

func (p *pgProxy) close() {
	p.setCut(true)
	_ = p.ln.Close()
	p.wg.Wait()
}

// sessionCallRe finds a scale set's message session in a call's path: its
// polls, acknowledgements and refreshes.
var sessionCallRe = regexp.MustCompile(`/runnerscalesets/(\d+)/sessions/([^/]+)`)

// sessionUse is when a message session of the fake was used: the first
// and last call on it other than its deletion.
type sessionUse struct {
	id          string
	first, last time.Time
}

// sessionsUsed are the shared scale set's message sessions in the order
// they were first used, from the fake's call log.
func (f *fleet) sessionsUsed(t *testing.T) []sessionUse {
	t.Helper()
	ss, ok := f.sharedScaleSet()
	require.True(t, ok)
	var out []sessionUse
	at := map[string]int{}
	for _, c := range f.fake.CallLog() {
		if c.Route == fakegithub.RouteDeleteSession {
			continue // the next holder deletes the last one's by its id
		}
		m := sessionCallRe.FindStringSubmatch(c.Path)
		if m == nil || m[1] != strconv.Itoa(ss.ID) {
			continue
		}
		i, seen := at[m[2]]
		if !seen {
			at[m[2]] = len(out)
			out = append(out, sessionUse{id: m[2], first: c.At, last: c.At})
			continue
		}
		if c.At.After(out[i].last) {
			out[i].last = c.At
		}
	}
	return out
}

// logLineRe finds a daemon's log line's time and message (slog's text).
var logLineRe = regexp.MustCompile(`(?m)^time=(\S+) level=\S+ msg="([^"]*)"`)

// logTime is when the host first logged msg after since.
func logTime(t *testing.T, h *host, since time.Time, msg string) time.Time {
	t.Helper()
	b, err := os.ReadFile(h.logPath)
	require.NoError(t, err)
	for _, m := range logLineRe.FindAllStringSubmatch(string(b), -1) {
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err == nil && m[2] == msg && !at.Before(since.Truncate(time.Millisecond)) {
			return at
		}
	}
	t.Fatalf("%s never logged %q after %s", h.name, msg, since.Format(time.StampMilli))
	return time.Time{}
}

// TestFleetPolicyHolderCut: the holder of a fleet policy's session cut
// from the database but alive (a network cut: its connections dropped,
// new ones refused) stops serving the session before another host takes
// the lease: no call on its session reaches GitHub after the takeover,
// and the sessions GitHub saw never overlap. The other host serves on: no
// job lost or run twice. Restored, the cut host concludes what its
// runners did meanwhile and takes jobs again.
func TestFleetPolicyHolderCut(t *testing.T) {
	const max = 4
	srv := pgtest.Shared(t)
	db := srv.CreateDatabase(t)
	proxy := newPGProxy(t, srv)
	f := newSharedFleetOn(t, srv.URL(db), max, []string{"--spare", "0"}, "alpha", "beta")
	t.Cleanup(func() { proxy.setCut(false) }) // before the fleet stops: a cut host could not
	cutHost, other := f.hosts[0], f.hosts[1]
	cutHost.env = append(cutHost.env, "RUNNER_MANAGER_STORE="+proxy.url(srv, db))
	// beta takes 2 jobs at once, so that alpha, back, must be given some.
	other.env = append(other.env, "RUNNER_MANAGER_MAX_JOBS=2")
	st := f.open()

	// alpha alone first: it holds the lease and runs jobs, and they still
	// run when it is cut.
	cutHost.start()
	f.waitFor(time.Minute, "alpha holds the fleet's lease", func() bool { h, _ := f.holderOf(t, st); return h == cutHost })
	const first = 6
	f.enqueueNamed(max, "before-cut", 4*time.Second, 4<<20)
	f.waitFor(time.Minute, "alpha runs jobs", func() bool { return len(cutHost.runnerProcesses()) > 0 })
	other.start()
	f.waitFor(time.Minute, "both hosts published their rooms", func() bool { return len(f.rooms(t, st)) == 2 })
	f.enqueueNamed(first-max, "before-cut", time.Second, 4<<20)
	_, before := f.holderOf(t, st)

	proxy.setCut(true)
	cut := time.Now()
	const during = 3
	f.enqueueNamed(during, "during-cut", time.Second, 4<<20)
	var after store.FleetLease
	f.waitFor(30*time.Second, "beta holds the lease", func() bool {
		h, l := f.holderOf(t, st)
		after = l
		return h == other
	})
	t.Logf("lease taken over %s after the cut (token %d → %d)", time.Since(cut).Round(10*time.Millisecond), before.Token, after.Token)
	require.Greater(t, after.Token, before.Token, "the new holder's token fences the old one")
	f.waitFor(time.Minute, "every job completed with alpha cut", func() bool { all, _ := f.jobsDone(""); return all == first+during })
	require.True(t, cutHost.alive(), "the cut host lives on")
	betaAfterCut := 0
	for _, j := range f.fake.Jobs() {
		if j.StartedAt.After(after.AcquiredAt) && f.runnerHostName(t, st, j.RunnerName) == other.name {
			betaAfterCut++
		}
	}
	assert.Positive(t, betaAfterCut, "beta served on after the takeover")

	// What GitHub saw: the cut holder's session was used last before the
	// takeover, and no two sessions were used at once.
	var used, old []sessionUse
	f.waitFor(30*time.Second, "beta used a session of its own", func() bool {
		used, old = f.sessionsUsed(t), nil
		for _, u := range used {
			if u.first.Before(after.AcquiredAt) {
				old = append(old, u)
			}
		}
		return len(used) > len(old)
	})
	require.NotEmpty(t, old, "alpha used a session before the cut")
	for _, u := range old {
		assert.True(t, u.last.Before(after.AcquiredAt), "session %s (alpha's) used at %s, after beta took the lease at %s",
			u.id, u.last.Format(time.StampMicro), after.AcquiredAt.Format(time.StampMicro))
	}
	for i := 1; i < len(used); i++ {
		assert.True(t, used[i-1].last.Before(used[i].first), "session %s used until %s, after %s began at %s",
			used[i-1].id, used[i-1].last.Format(time.StampMicro), used[i].id, used[i].first.Format(time.StampMicro))
	}
	// And what alpha says: it stopped serving before the takeover (a
	// margin of TTL/4, 1.5 s by default, before its lease would expire).
	stopped := logTime(t, cutHost, cut, "stopped serving the fleet's scale set")
	assert.True(t, stopped.Before(after.AcquiredAt), "alpha stopped serving at %s, after beta took the lease at %s",
		stopped.Format(time.StampMilli), after.AcquiredAt.Format(time.StampMilli))
	t.Logf("alpha stopped serving %s before beta took the lease; its session's last call %s before; beta's first %s after",
		after.AcquiredAt.Sub(stopped).Round(time.Millisecond), after.AcquiredAt.Sub(old[len(old)-1].last).Round(time.Millisecond),
		used[len(old)].first.Sub(after.AcquiredAt).Round(time.Millisecond))

	// Restored, it is heard from again and takes jobs.
	proxy.setCut(false)
	restored := time.Now()
	f.waitFor(time.Minute, "alpha published its room again, its runners' attempts concluded", func() bool {
		r, ok := f.rooms(t, st)[cutHost.name]
		return ok && r.Busy == 0 && r.Capacity > 0 && r.UpdatedAt.After(restored)
	})
	// beta leaves (its lease given up at once): alpha takes the lease back
	// and serves the jobs.
	require.NoError(t, other.stop(30*time.Second))
	left := time.Now()
	const second = 4
	ids := f.enqueueNamed(second, "after-cut", time.Second, 4<<20)
	f.waitFor(time.Minute, "every job completed", func() bool { all, _ := f.jobsDone(""); return all == first+during+second })
	holder, _ := f.holderOf(t, st)
	assert.Same(t, cutHost, holder, "alpha holds the lease again")
	for id, on := range f.ranOn(t, st, ids) {
		assert.Equal(t, cutHost.name, on, "job %d, queued after beta left", id)
	}
	t.Logf("alpha served the %d jobs queued after beta left within %s", second, time.Since(left).Round(10*time.Millisecond))
	require.NoError(t, cutHost.stop(30*time.Second))
	perHost := checkFleetServed(t, f, max)
	t.Logf("jobs per host: %v", perHost)
	assert.Equal(t, first+during+second, completedInJournal(t, f, st), "each job's attempt concluded CompletedJob in the journal")
}
