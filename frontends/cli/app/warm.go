package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/warm"
)

// WarmCmd groups the commands on workspace slots.
type WarmCmd struct {
	List  WarmListCmd  `cmd:"" aliases:"ls" help:"List the workspace slots: size, uses, hits, last use, holder."`
	Prune WarmPruneCmd `cmd:"" help:"Evict the least recently used free slots down to a size (default: the cap)."`
	Rm    WarmRmCmd    `cmd:"" aliases:"remove" help:"Remove a repository's free slots, or every free slot (--all)."`
}

// Help is the long help of warm.
func (c *WarmCmd) Help() string {
	return `A repository's policy runs its jobs in workspace slots kept between the
repository's jobs: the checkout, the runner's tool cache and the tools'
caches stay warm (docs/warm.md). The daemon evicts the least recently used
free slots past [warm] cap after every job, and before admission refuses a
launch for disk. An evicted slot is a cold start, nothing more.

list works at any time. prune and rm evict with no daemon running: which
attempt holds a slot is the daemon's to know, so they take the data
directory's lock and refuse while a daemon holds it (stop it, or lower
[warm] cap and restart it). A slot a live attempt of the journal names is
never evicted.`
}

// warmPool is the slots of this host's data directory, with the
// configured cap.
func (a *App) warmPool() (*warm.Pool, datadir.Dir, error) {
	c, err := a.Config()
	if err != nil {
		return nil, datadir.Dir{}, err
	}
	if err := dataDirProblem(c.DataDir); err != nil {
		return nil, datadir.Dir{}, err
	}
	d := datadir.New(c.DataDir)
	return warm.NewPool(d, warm.WithCap(int64(c.Warm.Cap.Bytes()))), d, nil
}

// warmJournal reads this host's live attempts and the policies for the
// slots they hold; a data directory with no journal yet has none.
func (a *App) warmJournal(ctx context.Context) warm.Journal {
	return func() ([]rm.Attempt, []rm.Policy, error) {
		c, err := a.Config()
		if err != nil {
			return nil, nil, err
		}
		d := datadir.New(c.DataDir)
		if !daemon.StoreConfigOf(c).Postgres() {
			if _, err := os.Stat(d.Journal()); errors.Is(err, fs.ErrNotExist) {
				return nil, nil, nil
			}
		}
		st, err := a.ReadStore(ctx)
		if err != nil {
			return nil, nil, err
		}
		host, err := d.LoadOrCreateHostID()
		if err != nil {
			return nil, nil, err
		}
		live, err := st.LiveAttempts(ctx, host)
		if err != nil {
			return nil, nil, err
		}
		ps, err := st.Policies(ctx)
		return live, ps, err
	}
}

// exclusivePool is the slots for a command that evicts them: refused while
// a daemon runs (warm.Exclusive).
func (a *App) exclusivePool(ctx context.Context) (*warm.Pool, func(), error) {
	c, err := a.Config()
	if err != nil {
		return nil, nil, err
	}
	if err := dataDirProblem(c.DataDir); err != nil {
		return nil, nil, err
	}
	p, release, err := warm.Exclusive(datadir.New(c.DataDir), a.warmJournal(ctx), warm.WithCap(int64(c.Warm.Cap.Bytes())), warm.WithLogger(a.Logger()))
	var locked *datadir.LockedError
	if errors.As(err, &locked) {
		who := "a daemon"
		if locked.PID > 0 {
			who = fmt.Sprintf("a daemon (pid %d)", locked.PID)
		}
		return nil, nil, fmt.Errorf("%s runs on data dir %s: it alone knows which slot an attempt is taking, so slots are evicted by hand only with it stopped. It evicts the least recently used free slots past [warm] cap (%s) itself after every job: lower the cap and restart it, or stop it (`runner-manager status` shows it) and run this again",
			who, c.DataDir, c.Warm.Cap)
	}
	return p, release, err
}

// WarmListCmd lists the slots.
type WarmListCmd struct {
	JSON bool `help:"Print JSON (docs/json.md)."`
}

// warmSlotJSON is the stable JSON form of a slot (docs/json.md).
type warmSlotJSON struct {
	Slot      string  `json:"slot"`
	Repo      string  `json:"repo"`
	N         int     `json:"n"`
	Backend   string  `json:"backend"`
	Bytes     int64   `json:"bytes"`
	Uses      int     `json:"uses"`
	Hits      int     `json:"hits"`
	CreatedAt string  `json:"created_at"`
	LastUsed  string  `json:"last_used"`
	HeldBy    *string `json:"held_by"`
	LeftOpen  bool    `json:"left_open"`
	Dir       string  `json:"dir"`
}

// Run lists the slots.
func (c *WarmListCmd) Run(ctx context.Context, a *App) error {
	p, _, err := a.warmPool()
	if err != nil {
		return err
	}
	list, err := p.List()
	if err != nil {
		return err
	}
	if len(list) > 0 {
		if live, ps, err := a.warmJournal(ctx)(); err != nil {
			fmt.Fprintf(a.Stderr, "runner-manager: which attempts hold slots is not shown: %v\n", err)
		} else {
			p.HoldLive(live, ps)
			if list, err = p.List(); err != nil {
				return err
			}
		}
	}
	if c.JSON {
		out := make([]warmSlotJSON, 0, len(list))
		for _, s := range list {
			j := warmSlotJSON{Slot: s.Name(), Repo: s.Repo, N: s.N, Backend: string(s.Backend.OrDefault()), Bytes: s.Bytes,
				Uses: s.Uses, Hits: s.Hits, CreatedAt: jsonTime(s.Created), LastUsed: jsonTime(s.LastUsed),
				LeftOpen: leftOpen(s), Dir: s.Dir()}
			if !s.HeldBy.IsZero() {
				j.HeldBy = new(s.HeldBy.String())
			}
			out = append(out, j)
		}
		return writeJSON(a.Stdout, out)
	}
	if len(list) == 0 {
		a.printf("no workspace slots (cap %s): a repository's policy makes them as its jobs run (docs/warm.md)\n", bytesize.Format(uint64(p.Cap())))
		return nil
	}
	now := time.Now()
	var total int64
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tBACKEND\tSIZE\tUSES\tHITS\tLAST USE\tHELD BY")
	for _, s := range list {
		total += s.Bytes
		held := "-"
		switch {
		case !s.HeldBy.IsZero():
			held = s.HeldBy.String()
		case leftOpen(s):
			held = "- (left open by a crash: emptied before its next use)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", s.Name(), s.Backend.OrDefault(), bytesize.Format(uint64(max(s.Bytes, 0))),
			s.Uses, s.Hits, lastUse(now, s.LastUsed), held)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	a.printf("%d slot(s), %s of the %s cap\n", len(list), bytesize.Format(uint64(max(total, 0))), bytesize.Format(uint64(p.Cap())))
	return nil
}

// leftOpen: a slot whose last attempt never gave it back, and that no live
// attempt holds.
func leftOpen(s warm.Info) bool { return s.Open != "" && s.HeldBy.IsZero() }

func jsonTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func lastUse(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.DateTime) + " (" + ago(now, t) + ")"
}

// WarmPruneCmd evicts the least recently used free slots.
type WarmPruneCmd struct {
	To *configfile.Size `help:"The size the slots must fit in (default: [warm] cap); 0 evicts every free slot." placeholder:"SIZE"`
}

// Run prunes the slots.
func (c *WarmPruneCmd) Run(ctx context.Context, a *App) error {
	p, release, err := a.exclusivePool(ctx)
	if err != nil {
		return err
	}
	defer release()
	to := p.Cap()
	if c.To != nil {
		to = int64(c.To.Bytes())
	}
	evicted, err := p.Prune(to)
	a.printEvicted(evicted)
	if err != nil {
		return err
	}
	size, err := p.Size()
	if err != nil {
		return err
	}
	if size > to {
		a.printf("the slots take %s, more than %s: the rest are held by live attempts\n", bytesize.Format(uint64(size)), bytesize.Format(uint64(to)))
	} else {
		a.printf("the slots take %s (at most %s)\n", bytesize.Format(uint64(max(size, 0))), bytesize.Format(uint64(to)))
	}
	return nil
}

func (a *App) printEvicted(evicted []warm.Info) {
	var freed int64
	for _, s := range evicted {
		freed += s.Bytes
		a.printf("evicted %s (%s, %s, last used %s)\n", s.Name(), s.Backend.OrDefault(), bytesize.Format(uint64(max(s.Bytes, 0))), lastUse(time.Now(), s.LastUsed))
	}
	if len(evicted) == 0 {
		a.printf("no slot evicted\n")
		return
	}
	a.printf("evicted %d slot(s), %s\n", len(evicted), bytesize.Format(uint64(max(freed, 0))))
}

// WarmRmCmd removes a repository's free slots, or every free slot.
type WarmRmCmd struct {
	Repo string `arg:"" optional:"" help:"The repository whose slots go (OWNER/REPO)." placeholder:"OWNER/REPO"`
	All  bool   `help:"Remove every free slot of every repository."`
}

// Run removes the slots.
func (c *WarmRmCmd) Run(ctx context.Context, a *App) error {
	switch {
	case c.All && c.Repo != "":
		return usagef("give a repository or --all, not both")
	case !c.All && c.Repo == "":
		return usagef("give the repository whose slots go (OWNER/REPO), or --all")
	case c.Repo != "":
		if _, err := rm.Repository(c.Repo); err != nil {
			return invalid("%v", err)
		}
	}
	p, release, err := a.exclusivePool(ctx)
	if err != nil {
		return err
	}
	defer release()
	removed, held, err := p.Remove(c.Repo)
	a.printEvicted(removed)
	if held > 0 {
		a.printf("%d slot(s) left: held by live attempts (`runner-manager warm list` shows which)\n", held)
	}
	if err == nil && len(removed) == 0 && held == 0 && c.Repo != "" {
		a.printf("%s has no workspace slots\n", strings.ToLower(c.Repo))
	}
	return err
}
