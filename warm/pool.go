package warm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
)

// DefaultCap bounds the slots of a host when the configuration says
// nothing: room for a few repositories' checkouts, toolchains and
// dependencies, small beside a disk that holds runners and their jobs.
const DefaultCap int64 = 20 << 30

// workName is the slot's work folder under its directory; metaName the
// slot's record beside it.
const (
	workName = "work"
	metaName = "slot.json"
)

// Pool is a host's workspace slots under <data>/slots/<backend>/<owner>/
// <name>/<n>/: which attempt holds which (in memory: the journal's live
// attempts re-hold theirs after a restart, Hold), and each slot's record
// (slot.json: uses, hits, size, last use). One Pool serves every loop of
// a host; its methods are safe for concurrent use.
type Pool struct {
	root string
	cap  int64
	now  func() time.Time
	log  *slog.Logger

	mu   sync.Mutex
	held map[rm.AttemptID]string // attempt → slot directory
}

// Option configures a Pool.
type Option func(*Pool)

// WithCap sets the host-wide cap on the slots' size; 0 or less keeps
// DefaultCap.
func WithCap(bytes int64) Option {
	return func(p *Pool) {
		if bytes > 0 {
			p.cap = bytes
		}
	}
}

// WithClock sets the clock of last uses (tests).
func WithClock(now func() time.Time) Option { return func(p *Pool) { p.now = now } }

// WithLogger sets where the pool says what it evicted or could not do.
func WithLogger(l *slog.Logger) Option { return func(p *Pool) { p.log = l } }

// NewPool is the slots of data directory d.
func NewPool(d datadir.Dir, opts ...Option) *Pool {
	p := &Pool{root: d.Slots(), cap: DefaultCap, now: time.Now, log: slog.Default(), held: map[rm.AttemptID]string{}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Cap is the host-wide cap on the slots' size.
func (p *Pool) Cap() int64 { return p.cap }

// Info is what a slot's record says of it.
type Info struct {
	Backend rm.Backend `json:"backend"`
	Repo    string     `json:"repo"`
	N       int        `json:"n"`
	// Bytes is the slot's size on disk when its last attempt ended.
	Bytes int64 `json:"bytes"`
	// Uses counts the attempts that ran in it; Hits those that found it
	// warm (not Fresh).
	Uses     int       `json:"uses"`
	Hits     int       `json:"hits"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
	// Open names the attempt that leased the slot until its Release kept
	// what it wrote: a slot still open when no attempt holds it was left
	// by a crash, its job's writes never vouched for, and is emptied
	// before its next lease.
	Open string `json:"open,omitempty"`
	// HeldBy is the attempt that holds it now; zero when free.
	HeldBy rm.AttemptID `json:"-"`
	dir    string
}

// Name is "owner/name#n".
func (i Info) Name() string { return rm.WarmSlot{Repo: i.Repo, N: i.N}.String() }

// Dir is the slot's directory.
func (i Info) Dir() string { return i.dir }

// repoDir is where repo's slots of backend live. Names are kept as GitHub
// spells them, folded to lower case: GitHub's names ignore case.
func (p *Pool) repoDir(backend rm.Backend, repo string) (string, error) {
	scope, err := rm.Repository(repo)
	if err != nil {
		return "", err
	}
	owner, name, _ := strings.Cut(strings.ToLower(scope.Name), "/")
	if backend == "" {
		backend = rm.DefaultBackend
	}
	return filepath.Join(p.root, string(backend), owner, name), nil
}

// Lease gives attempt a slot of repo for backend: the most recently used
// free one (so a stream of one repository's jobs keeps finding the same
// warm slot), else a new one numbered after the last. The slot is the
// attempt's until Release.
func (p *Pool) Lease(backend rm.Backend, repo string, attempt rm.AttemptID) (rm.WarmSlot, error) {
	if attempt.IsZero() {
		return rm.WarmSlot{}, errors.New("lease a slot: no attempt")
	}
	dir, err := p.repoDir(backend, repo)
	if err != nil {
		return rm.WarmSlot{}, fmt.Errorf("lease a slot: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if d, ok := p.held[attempt]; ok {
		return rm.WarmSlot{}, fmt.Errorf("lease a slot: attempt %s already holds %s", attempt, d)
	}
	slots, err := p.readRepo(dir)
	if err != nil {
		return rm.WarmSlot{}, fmt.Errorf("lease a slot of %s: %w", repo, err)
	}
	var pick *Info
	used := map[int]bool{}
	for i := range slots {
		s := &slots[i]
		used[s.N] = true
		if p.heldLocked(s.dir) {
			continue
		}
		if pick == nil || s.LastUsed.After(pick.LastUsed) {
			pick = s
		}
	}
	if pick == nil {
		n := 1
		for used[n] {
			n++
		}
		now := p.now()
		pick = &Info{Backend: backend, Repo: repo, N: n, Created: now, dir: filepath.Join(dir, strconv.Itoa(n))}
	}
	pick.Backend, pick.Repo = backend, repo
	work := filepath.Join(pick.dir, workName)
	fresh := pick.Uses == 0
	if pick.Open != "" {
		// Left open by a crash: what its job wrote was never vouched for.
		p.log.Info("emptying a workspace slot its last attempt left unchecked", "slot", pick.Name(), "attempt", pick.Open)
		if err := datadir.RemoveAll(work); err != nil {
			return rm.WarmSlot{}, fmt.Errorf("lease a slot of %s: empty slot %d: %w", repo, pick.N, err)
		}
		fresh = true
	}
	if _, err := os.Stat(work); err != nil {
		fresh = true
	}
	if err := os.MkdirAll(work, 0o700); err != nil {
		return rm.WarmSlot{}, fmt.Errorf("lease a slot of %s: %w", repo, err)
	}
	pick.Uses++
	if !fresh {
		pick.Hits++
	}
	pick.LastUsed = p.now()
	pick.Open = attempt.String()
	if err := writeMeta(pick); err != nil {
		return rm.WarmSlot{}, fmt.Errorf("lease a slot of %s: %w", repo, err)
	}
	p.held[attempt] = pick.dir
	return rm.WarmSlot{Repo: repo, N: pick.N, Dir: work, Fresh: fresh}, nil
}

// Free counts repo's slots of backend that no attempt holds and a crash
// did not leave open: the warm ones a lease would find.
func (p *Pool) Free(backend rm.Backend, repo string) int {
	dir, err := p.repoDir(backend, repo)
	if err != nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	slots, err := p.readRepo(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, s := range slots {
		if !p.heldLocked(s.dir) && s.Open == "" && s.Uses > 0 {
			n++
		}
	}
	return n
}

// Hold marks slot (as the journal names it, "owner/name#n") held by
// attempt again: a live attempt re-adopted after a restart keeps its slot.
// Unknown or malformed names are ignored.
func (p *Pool) Hold(backend rm.Backend, attempt rm.AttemptID, slot string) {
	repo, n, ok := ParseSlot(slot)
	if !ok || attempt.IsZero() {
		return
	}
	dir, err := p.repoDir(backend, repo)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.held[attempt] = filepath.Join(dir, strconv.Itoa(n))
	p.mu.Unlock()
}

// ParseSlot reads a slot's name, "owner/name#n".
func ParseSlot(s string) (repo string, n int, ok bool) {
	repo, num, ok := strings.Cut(s, "#")
	if !ok {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return "", 0, false
	}
	if _, err := rm.Repository(repo); err != nil {
		return "", 0, false
	}
	return repo, n, true
}

// Release ends attempt's hold on its slot (nothing when it holds none):
// Scrub removes what must not outlive the job; discard empties the slot
// instead (a run whose writes a trusted run must never read). Then the
// slots over the cap are evicted, least recently used first.
func (p *Pool) Release(attempt rm.AttemptID, discard bool) error {
	p.mu.Lock()
	dir, ok := p.held[attempt]
	p.mu.Unlock()
	if !ok {
		return nil
	}
	var err error
	if discard {
		err = datadir.RemoveAll(dir)
	} else {
		err = Scrub(filepath.Join(dir, workName))
		if info, rerr := readMeta(dir); rerr == nil {
			info.Bytes = DiskUsage(dir)
			info.LastUsed = p.now()
			info.Open = ""
			err = errors.Join(err, writeMeta(&info))
		}
	}
	p.mu.Lock()
	delete(p.held, attempt)
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("release the slot of attempt %s: %w", attempt, err)
	}
	_, perr := p.Prune(p.cap)
	return perr
}

// List is every slot of the host, the held ones marked, most recently used
// first.
func (p *Pool) List() ([]Info, error) {
	var out []Info
	backends, err := os.ReadDir(p.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list slots: %w", err)
	}
	for _, b := range backends {
		owners, _ := os.ReadDir(filepath.Join(p.root, b.Name()))
		for _, o := range owners {
			names, _ := os.ReadDir(filepath.Join(p.root, b.Name(), o.Name()))
			for _, n := range names {
				slots, err := p.readRepo(filepath.Join(p.root, b.Name(), o.Name(), n.Name()))
				if err != nil {
					return nil, err
				}
				out = append(out, slots...)
			}
		}
	}
	p.mu.Lock()
	for i := range out {
		for a, d := range p.held {
			if d == out[i].dir {
				out[i].HeldBy = a
			}
		}
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b Info) int { return b.LastUsed.Compare(a.LastUsed) })
	return out, nil
}

// Size is the slots' size on disk as their records say (each measured when
// its last attempt ended).
func (p *Pool) Size() (int64, error) {
	list, err := p.List()
	var n int64
	for _, s := range list {
		n += s.Bytes
	}
	return n, err
}

// Prune evicts whole slots, least recently used first, until the slots
// fit in bytes; a held slot is never evicted. It returns what it evicted.
func (p *Pool) Prune(bytes int64) ([]Info, error) {
	list, err := p.List()
	if err != nil {
		return nil, err
	}
	var total int64
	for _, s := range list {
		total += s.Bytes
	}
	var evicted []Info
	for i := len(list) - 1; i >= 0 && total > bytes; i-- {
		s := list[i]
		if !s.HeldBy.IsZero() {
			continue
		}
		if err := p.evict(s); err != nil {
			return evicted, err
		}
		total -= s.Bytes
		evicted = append(evicted, s)
		p.log.Info("evicted a workspace slot over the cap", "slot", s.Name(), "backend", string(s.Backend), "bytes", s.Bytes)
	}
	return evicted, nil
}

// Remove evicts every free slot of repo (of any backend); "" removes every
// free slot. It returns what it removed and how many it left because an
// attempt holds them.
func (p *Pool) Remove(repo string) (removed []Info, held int, err error) {
	list, err := p.List()
	if err != nil {
		return nil, 0, err
	}
	for _, s := range list {
		if repo != "" && !strings.EqualFold(s.Repo, repo) {
			continue
		}
		if !s.HeldBy.IsZero() {
			held++
			continue
		}
		if err := p.evict(s); err != nil {
			return removed, held, err
		}
		removed = append(removed, s)
	}
	return removed, held, nil
}

// evict removes a free slot, checking under the lock that no lease took it
// meanwhile: it is renamed aside first, so a Lease never finds half of one.
func (p *Pool) evict(s Info) error {
	p.mu.Lock()
	if p.heldLocked(s.dir) {
		p.mu.Unlock()
		return nil
	}
	aside := filepath.Join(filepath.Dir(s.dir), ".evict-"+filepath.Base(s.dir))
	err := os.Rename(s.dir, aside)
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("evict slot %s: %w", s.Name(), err)
	}
	if err := datadir.RemoveAll(aside); err != nil {
		return fmt.Errorf("evict slot %s: %w", s.Name(), err)
	}
	return nil
}

func (p *Pool) heldLocked(dir string) bool {
	for _, d := range p.held {
		if d == dir {
			return true
		}
	}
	return false
}

// readRepo reads the slots of one repository directory; leftovers of an
// interrupted eviction are removed, a slot without a readable record is
// taken as empty (and made anew by its next lease).
func (p *Pool) readRepo(dir string) ([]Info, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if strings.HasPrefix(e.Name(), ".evict-") {
			_ = datadir.RemoveAll(filepath.Join(dir, e.Name()))
			continue
		}
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 1 {
			continue
		}
		info, err := readMeta(filepath.Join(dir, e.Name()))
		if err != nil {
			info = Info{N: n, dir: filepath.Join(dir, e.Name())}
		}
		out = append(out, info)
	}
	return out, nil
}

func readMeta(dir string) (Info, error) {
	b, err := os.ReadFile(filepath.Join(dir, metaName))
	if err != nil {
		return Info{}, err
	}
	var i Info
	if err := json.Unmarshal(b, &i); err != nil {
		return Info{}, err
	}
	i.dir = dir
	return i, nil
}

func writeMeta(i *Info) error {
	b, err := json.MarshalIndent(i, "", "  ")
	if err != nil {
		return err
	}
	return datadir.WriteFileAtomic(filepath.Join(i.dir, metaName), append(b, '\n'), 0o600)
}
