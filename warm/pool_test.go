package warm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/warm"
)

func newPool(t *testing.T, opts ...warm.Option) (*warm.Pool, datadir.Dir) {
	t.Helper()
	d := datadir.New(t.TempDir())
	clock := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	opts = append([]warm.Option{warm.WithClock(func() time.Time { clock = clock.Add(time.Second); return clock })}, opts...)
	return warm.NewPool(d, opts...), d
}

func lease(t *testing.T, p *warm.Pool, repo string) (rm.WarmSlot, rm.AttemptID) {
	t.Helper()
	a := rm.NewAttemptID()
	s, err := p.Lease(rm.DefaultBackend, repo, a)
	if err != nil {
		t.Fatal(err)
	}
	return s, a
}

func write(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, n), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseReusesTheWarmSlotAndKeepsConcurrentJobsApart(t *testing.T) {
	p, _ := newPool(t)
	s1, a1 := lease(t, p, "octo/app")
	if !s1.Fresh || s1.N != 1 {
		t.Fatalf("first lease = %+v, want fresh slot 1", s1)
	}
	write(t, filepath.Join(s1.Dir, "app", "app", "main.go"), 10)
	s2, a2 := lease(t, p, "octo/app")
	if s2.N != 2 || s2.Dir == s1.Dir {
		t.Fatalf("a concurrent job of the repository got %+v while %+v is held", s2, s1)
	}
	if err := p.Release(a1, false); err != nil {
		t.Fatal(err)
	}
	if err := p.Release(a2, false); err != nil {
		t.Fatal(err)
	}
	// Slot 2 was used last: it is the warmest, and the next job gets it.
	s3, _ := lease(t, p, "octo/app")
	if s3.N != 2 || s3.Fresh {
		t.Fatalf("next lease = %+v, want warm slot 2", s3)
	}
	s4, _ := lease(t, p, "octo/app")
	if s4.N != 1 || s4.Fresh {
		t.Fatalf("lease beside it = %+v, want warm slot 1", s4)
	}
	if _, err := os.Stat(filepath.Join(s4.Dir, "app", "app", "main.go")); err != nil {
		t.Fatalf("the first job's checkout did not survive in its slot: %v", err)
	}
	other, _ := lease(t, p, "octo/other")
	if other.N != 1 || !other.Fresh || strings.HasPrefix(other.Dir, filepath.Dir(filepath.Dir(s1.Dir))+string(filepath.Separator)) {
		t.Fatalf("another repository's slot %+v shares a tree with %s", other, s1.Dir)
	}
}

func TestReleaseScrubsPerJobFoldersAndTheCheckoutToken(t *testing.T) {
	p, _ := newPool(t)
	s, a := lease(t, p, "octo/app")
	write(t, filepath.Join(s.Dir, "_temp", "_runner_file_commands", "set_env_1"), 5)
	write(t, filepath.Join(s.Dir, "_actions", "actions", "checkout", "v4", "action.yml"), 5)
	write(t, filepath.Join(s.Dir, "_tool", "go", "1.26.0", "x64.complete"), 0)
	write(t, filepath.Join(s.Dir, warm.CachesDir, "npm", "index"), 100)
	cfg := filepath.Join(s.Dir, "app", "app", ".git", "config")
	write(t, cfg, 0)
	os.WriteFile(cfg, []byte("[core]\n\tbare = false\n[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA==\n"), 0o600)
	sub := filepath.Join(s.Dir, "app", "app", ".git", "modules", "lib", "config")
	write(t, sub, 0)
	os.WriteFile(sub, []byte("[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n"), 0o600)
	if err := p.Release(a, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(sub); strings.Contains(string(b), "extraheader") {
		t.Errorf("a submodule's config kept the token:\n%s", b)
	}
	for _, gone := range []string{"_temp", "_actions"} {
		if _, err := os.Stat(filepath.Join(s.Dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s outlived its job: %v", gone, err)
		}
	}
	for _, kept := range []string{"_tool/go/1.26.0/x64.complete", warm.CachesDir + "/npm/index"} {
		if _, err := os.Stat(filepath.Join(s.Dir, kept)); err != nil {
			t.Errorf("%s was not kept: %v", kept, err)
		}
	}
	b, _ := os.ReadFile(cfg)
	if strings.Contains(string(b), "extraheader") || !strings.Contains(string(b), "bare = false") {
		t.Errorf(".git/config after scrub:\n%s", b)
	}
}

func TestDiscardEmptiesTheSlot(t *testing.T) {
	p, _ := newPool(t)
	s, a := lease(t, p, "octo/app")
	write(t, filepath.Join(s.Dir, warm.CachesDir, "npm", "poisoned"), 10)
	if err := p.Release(a, true); err != nil {
		t.Fatal(err)
	}
	s2, _ := lease(t, p, "octo/app")
	if !s2.Fresh {
		t.Fatalf("a discarded slot came back warm: %+v", s2)
	}
	if _, err := os.Stat(filepath.Join(s2.Dir, warm.CachesDir, "npm", "poisoned")); !os.IsNotExist(err) {
		t.Fatalf("what an untrusted run wrote reached the next run: %v", err)
	}
}

// Fifty repositories stream through one host with a cap of a few slots:
// the slots stay under the cap and a held slot is never evicted.
func TestCapEvictsLeastRecentlyUsedNeverAHeldSlot(t *testing.T) {
	const slotBytes = 64 << 10
	p, _ := newPool(t, warm.WithCap(5*slotBytes))
	pinned, pinnedAttempt := lease(t, p, "octo/long-job")
	write(t, filepath.Join(pinned.Dir, "big"), 3*slotBytes)
	for i := range 50 {
		s, a := lease(t, p, fmt.Sprintf("octo/repo-%d", i))
		write(t, filepath.Join(s.Dir, "data"), slotBytes-8<<10)
		if err := p.Release(a, false); err != nil {
			t.Fatal(err)
		}
		size, err := p.Size()
		if err != nil {
			t.Fatal(err)
		}
		if size > p.Cap() {
			t.Fatalf("after repository %d the slots hold %d bytes, over the cap %d", i, size, p.Cap())
		}
		if _, err := os.Stat(filepath.Join(pinned.Dir, "big")); err != nil {
			t.Fatalf("a held slot was evicted after repository %d: %v", i, err)
		}
	}
	list, _ := p.List()
	if len(list) < 2 || list[len(list)-1].Repo == "octo/repo-49" {
		t.Fatalf("eviction did not keep the most recent: %+v", list)
	}
	if err := p.Release(pinnedAttempt, false); err != nil {
		t.Fatal(err)
	}
}

// After a restart the pool holds nothing until the journal's live
// attempts hold theirs again.
func TestHoldAfterRestartKeepsALiveAttemptsSlot(t *testing.T) {
	p, d := newPool(t)
	s, a := lease(t, p, "octo/app")
	restarted := warm.NewPool(d)
	restarted.Hold(rm.DefaultBackend, a, s.String())
	s2, _ := lease(t, restarted, "octo/app")
	if s2.N == s.N {
		t.Fatalf("a restarted pool leased slot %d, held by live attempt %s", s.N, a)
	}
	if removed, held, err := restarted.Remove("octo/app"); err != nil || held != 2 || len(removed) != 0 {
		t.Fatalf("Remove = %v, %d held, %v; want nothing removed, 2 held", removed, held, err)
	}
}

func TestLeaseRefusesWhatIsNotARepository(t *testing.T) {
	p, _ := newPool(t)
	for _, repo := range []string{"", "octo", "../x", "octo/..", "a/b/c"} {
		if _, err := p.Lease(rm.DefaultBackend, repo, rm.NewAttemptID()); err == nil {
			t.Errorf("Lease(%q) = nil error", repo)
		}
	}
}

// A slot whose attempt never came back to release it (a crash) is emptied
// before it is leased again: its job's writes were never vouched for.
func TestASlotLeftOpenByACrashIsEmptied(t *testing.T) {
	p, d := newPool(t)
	s, _ := lease(t, p, "octo/app")
	write(t, filepath.Join(s.Dir, "unvouched"), 10)
	restarted := warm.NewPool(d)
	s2, _ := lease(t, restarted, "octo/app")
	if s2.N != s.N || !s2.Fresh {
		t.Fatalf("after a crash the slot came back as %+v", s2)
	}
	if _, err := os.Stat(filepath.Join(s2.Dir, "unvouched")); !os.IsNotExist(err) {
		t.Fatalf("what a job wrote before a crash reached the next: %v", err)
	}
}

func TestFreeCountsTheWarmSlotsALeaseWouldFind(t *testing.T) {
	p, _ := newPool(t)
	if n := p.Free(rm.DefaultBackend, "octo/app"); n != 0 {
		t.Fatalf("Free before any slot = %d", n)
	}
	_, a := lease(t, p, "octo/app")
	_, b := lease(t, p, "octo/app")
	if n := p.Free(rm.DefaultBackend, "octo/app"); n != 0 {
		t.Fatalf("Free with both slots held = %d", n)
	}
	if err := p.Release(a, false); err != nil {
		t.Fatal(err)
	}
	if err := p.Release(b, true); err != nil {
		t.Fatal(err)
	}
	if n := p.Free(rm.DefaultBackend, "octo/app"); n != 1 {
		t.Fatalf("Free after one kept and one emptied = %d, want 1", n)
	}
	if n := p.Free(rm.BackendContainer, "octo/app"); n != 0 {
		t.Fatalf("another backend's slots counted: %d", n)
	}
}
