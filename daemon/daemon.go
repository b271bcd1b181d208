// Package daemon owns the one entry point that runs a whole host: from a
// plain Config (journal, GitHub, backends' launchers, meters, admission,
// webhook listener, metrics, local API) New builds the supervisor and the
// one factory that turns a policy into its target (GitHub's registrar and
// demand, or the embedder's own: Config.Targets), and Run serves
// until its context ends: the data directory's lock, the local API socket
// (package localapi), the metrics and webhook servers and the supervisor,
// all stopped and joined before it returns.
//
// `runner-manager run` is: load the configuration file (package config),
// FromConfig, New, Run. The demo, the bench (package simulate) and the
// embedding example run the same code with a fake GitHub.
package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/meter/fleetweights"
	"github.com/runner-manager/runner-manager/metrics"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/runnerpkg"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/warm"
)

// Config is what a host is run from. DataDir and one of GitHub (with
// credentials) or Client are required; every other zero field takes the
// default its comment names, so that an embedder writes little.
type Config struct {
	// DataDir holds the journal, runners/, attempts/, state/ and the local
	// API socket. It is created (0700) if missing.
	DataDir string
	// Store is the journal; nil opens the one StoreConfig names (by
	// default DataDir/journal.db; Close closes it).
	Store store.Store
	// StoreConfig, when Store is nil, names the journal: the SQLite file
	// in DataDir (a zero value), or a PostgreSQL database a fleet shares.
	StoreConfig StoreConfig
	// HeartbeatEvery is how often a running daemon stamps its host's
	// heartbeat in the fleet (default DefaultHeartbeatEvery, 15 s); a
	// host is stale after status.StaleAfter(HeartbeatEvery) without one.
	HeartbeatEvery time.Duration
	// Fleet tunes the serving of fleet policies (their lease, how often a
	// host reads its share without a notice); zero fields take
	// fleetdemand's defaults.
	Fleet FleetConfig
	// Host is this host; a zero ID takes LocalHost(DataDir): the id kept
	// in DataDir/state/host-id and this machine's facts. New records it in
	// the journal.
	Host rm.Host
	// HostName names the host a zero Host takes ("": the machine's
	// hostname): two hosts of a fleet must not share a name.
	HostName string

	// GitHub is the client's configuration: New builds the client, its
	// calls counted by the metrics when they are on. Ignored when Client
	// is set.
	GitHub github.Config
	// Client is a ready GitHub client, used as it is.
	Client *github.Client
	// ClassicPoll is how often a classic-mode target polls its
	// repository's jobs (default: the github package's, 30 s).
	ClassicPoll time.Duration
	// Targets, when set, gives a policy's target a registrar or a demand
	// source of the embedder's own instead of GitHub's (an internal queue
	// as the demand of runners GitHub registers, say). It is asked each
	// time the policy's loop starts; a nil side is GitHub's, so (nil, nil,
	// nil) keeps GitHub's target whole. A source of its own replaces
	// GitHub's watch (no message session, no job polling, no webhooks for
	// that target); the daemon closes it when the loop ends. An error
	// fails that start, tried again at the next refresh. The GitHub client
	// is built all the same.
	Targets func(ctx context.Context, p rm.Policy) (rm.Registrar, rm.DemandSource, error)

	// Launchers start each policy's runners, by the policy's backend
	// (rm.DefaultBackend, native, for ""). Default: a native.Launcher
	// under DataDir for native, and each other backend's default
	// launcher. A backend added here serves the policies that name it.
	Launchers map[rm.Backend]rm.Launcher
	// ContainerHost is the container engine's address for the default
	// launcher of the container backend (Docker, or Podman's compatible
	// service: "unix:///run/podman/podman.sock"); "" takes DOCKER_HOST,
	// else the usual sockets. The engine is connected only once a policy
	// of that backend needs it.
	ContainerHost string
	// VM configures the default launcher of the vm backend (vm.go).
	VM VMConfig
	// Meters samples runners and banks their peaks; default a
	// meter.AttemptMeters keeping DataDir/state/memory-peaks.toml, wrapped
	// by fleetweights (job weights recorded in the store; with a store
	// other than SQLite, expected peaks from the fleet's weights).
	Meters rm.Meters
	// Admission decides every launch; default: the host's real memory
	// less configfile.DefaultMemoryReserve, and no runner started while
	// DataDir's filesystem has less than configfile.DefaultDiskFloor free.
	Admission *reconcile.Admission

	// Webhook serves workflow_job webhooks, which nudge classic targets.
	Webhook Webhook
	// MetricsAddr serves Prometheus metrics at http://MetricsAddr/metrics;
	// "" serves none. A port alone (":9464") listens on loopback only.
	MetricsAddr string
	// MetricsRegistry, when set, is given the daemon's collector (the
	// embedder serves it). The metrics run when it or MetricsAddr is set.
	MetricsRegistry prometheus.Registerer
	// NoLocalAPI turns off the local API on DataDir/manager.sock (which
	// `status` and the TUI read).
	NoLocalAPI bool
	// NoLock skips the data directory's lock (DataDir/manager.lock), which
	// keeps a second daemon off the same runners. Only for a data
	// directory nothing else can use.
	NoLock bool

	// Drain: when Run's context ends, remove idle runners and wait for
	// busy ones (at most DrainTimeout, when set). Without it, busy runners
	// keep their jobs and the next start re-adopts them.
	Drain        bool
	DrainTimeout time.Duration
	// RefreshEvery, SampleEvery and Loop tune the supervisor and its loops
	// (see reconcile.SupervisorConfig); zero values take their defaults.
	RefreshEvery time.Duration
	SampleEvery  time.Duration
	Loop         reconcile.LoopOptions
	// RunnerEnv is added to every runner's environment ("KEY=value").
	RunnerEnv []string
	// OnPass, OnJobStarted and OnJobEnded, when set, are told of every
	// loop's passes and of its jobs' starts and ends (see reconcile.Config),
	// beside the metrics.
	OnPass       func(targetKey string, took time.Duration, err error)
	OnJobStarted func(policy string, s rm.StartSplit)
	OnJobEnded   func(policy, result string, ran time.Duration)

	// Logger receives the daemon's logs (default: discarded).
	Logger *slog.Logger
	// Logs bounds the attempts' logs kept under <data>/logs/ (nil: 14
	// days, 1 GiB), enforced at start and every 10 minutes.
	Logs *datadir.LogRetention
	// AutoUpdateRunner keeps actions/runner's newest release installed,
	// proven on one attempt before every policy launches it, pruning
	// runners nothing uses (runnerpkg.Updater; [runner] auto_update, on by
	// default in the configuration file; false here leaves it off).
	AutoUpdateRunner bool
	// JobReport makes every job of the native backend report its own
	// footprint (peak memory, average and busiest CPU, duration, policy
	// and host) in its log and step summary, through the runner's job
	// hooks, and name its job in the journal where GitHub did not (package
	// jobreport; [runner] job_report, on by default in the configuration
	// file; false here leaves it off). It needs the default native
	// launcher and meters: with a launcher or meters of the embedder's own
	// it is off.
	JobReport bool
	// Warm runs repositories' jobs warm (docs/warm.md): zero leaves it
	// off here; the configuration file turns it on by default.
	Warm Warm
	// RunnerUpdateRetry is how often the update looks again while a
	// refused runner holds a policy's launches (default a minute: at most
	// 60 REST calls an hour, and only then).
	RunnerUpdateRetry time.Duration
	// Version is logged at start, published with the heartbeat and shown
	// in Status (default: runnermanager.ReadBuild()).
	Version string
}

// Warm configures warm jobs: workspace slots per repository (package
// warm) and each native attempt's fresh HOME.
type Warm struct {
	// Enabled runs each repository policy's attempts in its slots.
	Enabled bool
	// Cap bounds the slots' size (0: warm.DefaultCap).
	Cap int64
	// HomeFiles and HomeLinks fill a native attempt's fresh HOME
	// (native.WithHome); HomeSet says they are given (else the native
	// launcher's defaults). SharedHome gives runners the manager's HOME.
	HomeFiles, HomeLinks []string
	HomeSet, SharedHome  bool
}

// Webhook is the workflow_job receiver. Listen "" serves none.
type Webhook struct {
	Listen string
	// Secret verifies each delivery's signature; required with Listen.
	Secret []byte
	// MaxBody is the largest delivery read (0: github.MaxWebhookBody's
	// default of 1 MiB).
	MaxBody int64
}

// Daemon is a host, built and ready to Run. Status, StopAttempt and
// Refresh serve the local API (localapi.Daemon) and the TUI. Run and
// RunOnce may be called again once they returned (one at a time): each
// run starts afresh from the journal, re-adopting live runners as a
// restarted daemon does.
type Daemon struct {
	cfg     Config
	dir     datadir.Dir // cfg.DataDir
	log     *slog.Logger
	machine *platform.Machine // what the supervisor reads of this machine
	st      store.Store
	host    rm.Host
	client  *github.Client
	runner  *runnerpkg.Watch // runnerupdate.go
	scfg    reconcile.SupervisorConfig
	met     *metrics.Metrics // nil: no metrics
	targets *targets
	closers []func() error
	native  rm.Launcher        // the native backend's launcher (its cgroups feed the meters)
	slots   *warm.Pool         // the workspace slots; nil when warm jobs are off
	boxes   *container.Backend // the default container launcher; nil when the embedder gave one

	mu sync.Mutex
	// sup is the supervisor of the current (or last) run: each run has a
	// fresh one, as a restarted daemon would.
	sup   *reconcile.Supervisor
	addrs Addrs
	since time.Time // when the current run began; zero outside Run
}

// Addrs are where a running daemon listens; empty before Run listens.
type Addrs struct {
	Socket, Metrics, Webhook string
}

// New checks cfg, fills its defaults and builds the host's supervisor. It
// opens no socket and takes no lock: Run and RunOnce do. Close it when done.
func New(cfg Config) (_ *Daemon, err error) {
	if cfg.DataDir == "" {
		return nil, fmt.Errorf("%w: daemon: a DataDir is required", rm.ErrInvalid)
	}
	if cfg.Webhook.Listen != "" && len(cfg.Webhook.Secret) == 0 {
		return nil, fmt.Errorf("%w: daemon: webhooks on %s need a secret", rm.ErrInvalid, cfg.Webhook.Listen)
	}
	cfg.Version = cmp.Or(cfg.Version, rm.ReadBuild().String())
	dir := datadir.New(cfg.DataDir)
	cfg.DataDir = dir.Root()
	if err := dir.Create(); err != nil {
		return nil, fmt.Errorf("create the data directory: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Daemon{cfg: cfg, dir: dir, log: cfg.Logger, machine: platform.NewMachine()}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if err := d.openJournal(); err != nil {
		return nil, err
	}
	if cfg.MetricsAddr != "" || cfg.MetricsRegistry != nil {
		d.met = metrics.New(d.Status, d.st, d.log)
		if cfg.MetricsRegistry != nil {
			if err := cfg.MetricsRegistry.Register(d.met); err != nil {
				return nil, fmt.Errorf("register the metrics: %w", err)
			}
		}
	}
	if err := d.openGitHub(); err != nil {
		return nil, err
	}
	if d.met != nil {
		d.met.SetSecondaryHold(d.client.SecondaryHold)
	}
	d.runner = d.newRunnerWatch()
	d.targets = newTargets(d.client, d.host, d.st, d.log, cfg.ClassicPoll)
	d.targets.own = cfg.Targets
	d.targets.fleet, d.targets.heartbeat = cfg.Fleet, cfg.HeartbeatEvery
	if d.scfg, err = d.supervisorConfig(); err != nil {
		return nil, err
	}
	if _, err := d.newSupervisor(); err != nil {
		return nil, err
	}
	return d, nil
}

// newSupervisor makes the supervisor of a run: the one Status, StopAttempt
// and Refresh reach from now on.
func (d *Daemon) newSupervisor() (*reconcile.Supervisor, error) {
	sup, err := reconcile.NewSupervisor(d.scfg)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.sup = sup
	d.mu.Unlock()
	return sup, nil
}

func (d *Daemon) supervisor() *reconcile.Supervisor {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sup
}

// openJournal opens the journal and sets the host up, as cfg says.
func (d *Daemon) openJournal() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d.st = d.cfg.Store
	if d.st == nil {
		st, err := OpenStore(ctx, d.cfg.DataDir, d.cfg.StoreConfig, d.log)
		if err != nil {
			return err
		}
		d.st = st
		d.closers = append(d.closers, st.Close)
	}
	d.host = d.cfg.Host
	if d.host.ID.IsZero() {
		var err error
		if d.host, err = NamedLocalHost(d.cfg.DataDir, d.cfg.HostName); err != nil {
			return err
		}
	}
	if err := d.st.PutHost(ctx, d.host); err != nil {
		return fmt.Errorf("record this host in the journal: %w", err)
	}
	return nil
}

// openGitHub builds the GitHub client, unless cfg has one.
func (d *Daemon) openGitHub() error {
	if d.cfg.Client != nil {
		d.client = d.cfg.Client
		return nil
	}
	gc := d.cfg.GitHub
	if gc.Logger == nil {
		gc.Logger = d.log
	}
	if d.met != nil {
		gc.Transport = d.met.Transport(gc.Transport)
	}
	c, err := github.New(gc)
	if err != nil {
		return fmt.Errorf("%w: github: %v", rm.ErrInvalid, err)
	}
	d.client = c
	return nil
}

// supervisorConfig is the supervisor's configuration, with the defaults
// of launchers, meters and admission filled in.
func (d *Daemon) supervisorConfig() (reconcile.SupervisorConfig, error) {
	cfg := d.cfg
	launcher, others, err := d.launchers()
	if err != nil {
		return reconcile.SupervisorConfig{}, err
	}
	if cfg.Meters == nil {
		opts := []meter.Option{meter.WithLogger(d.log), meter.WithHostMemory(d.host.MemoryBytes)}
		if n, ok := d.native.(*native.Launcher); ok && d.cfg.JobReport {
			opts = append(opts, meter.WithObserver(jobReportObserver(n, d.log)))
		}
		ls := []rm.Launcher{d.native}
		for _, b := range slices.Sorted(maps.Keys(others)) {
			ls = append(ls, others[b])
		}
		for _, l := range ls {
			switch l := l.(type) {
			case rm.GroupMeter:
				// The native runners' and the VMs' attempts run in cgroups
				// where the host allows it: the meters read them instead of
				// walking /proc (and ask them for an OOM's peak).
				opts = append(opts, meter.WithGroups(l))
			case rm.MemoryContainer:
				// A container the OOM killer ended banks its limit as its peak.
				opts = append(opts, meter.WithGroupMemory(l))
			}
		}
		cfg.Meters = meter.New(d.dir.PeaksFile(), opts...)
		// Every job's weight is kept for the fleet; a shared store's
		// weights, not the peaks file, then set the expected peaks.
		_, local := d.st.(*sqlite.Store)
		cfg.Meters = fleetweights.Wrap(cfg.Meters, d.st, d.host.ID, fleetweights.Options{Admit: !local, Logger: d.log})
		cfg.Meters = d.withVMFloor(cfg.Meters)
	}
	if cfg.Admission == nil {
		cfg.Admission = &reconcile.Admission{
			Memory: d.machine, Reserve: configfile.DefaultMemoryReserve.Bytes(),
			DiskFree: d.machine.DiskFree, DiskPath: cfg.DataDir, DiskFloor: configfile.DefaultDiskFloor.Bytes(),
		}
	}
	{
		meters, adm := cfg.Meters, cfg.Admission
		fl, _ := d.st.(store.Fleet)
		d.targets.weigh = &jobWeigher{fleet: fl, expected: func(p rm.Policy) uint64 { return adm.ExpectedPeak(meters, p) }}
	}
	if d.boxes != nil {
		meters, adm := cfg.Meters, cfg.Admission
		d.boxes.SetExpectedPeak(func(p rm.Policy) uint64 { return adm.ExpectedPeak(meters, p) })
	}
	onPass, onJob, onEnd := cfg.OnPass, cfg.OnJobStarted, cfg.OnJobEnded
	if d.met != nil {
		onPass = func(target string, took time.Duration, err error) {
			d.met.ObservePass(target, took, err)
			if cfg.OnPass != nil {
				cfg.OnPass(target, took, err)
			}
		}
		onJob = func(policy string, s rm.StartSplit) {
			d.met.ObserveJobStart(policy, s)
			if cfg.OnJobStarted != nil {
				cfg.OnJobStarted(policy, s)
			}
		}
		onEnd = func(policy, result string, ran time.Duration) {
			d.met.ObserveJobEnd(policy, result, ran)
			if cfg.OnJobEnded != nil {
				cfg.OnJobEnded(policy, result, ran)
			}
		}
	}
	slots := d.slotsOrNil()
	if slots != nil && cfg.Admission.Reclaim == nil {
		cfg.Admission.Reclaim = d.slots.Reclaim // free slots go before a job waits for disk
	}
	return reconcile.SupervisorConfig{
		Store: d.st, Host: d.host, Launcher: launcher, Launchers: others, Meters: cfg.Meters,
		Targets: d.targets.make, Admission: cfg.Admission, Logger: d.log, AttemptsDir: d.dir.Attempts(),
		Machine: d.machine, Installs: runnerpkg.Installs{DataDir: cfg.DataDir, AutoUpdate: cfg.AutoUpdateRunner},
		Drain: cfg.Drain, DrainTimeout: cfg.DrainTimeout,
		RefreshEvery: cfg.RefreshEvery, SampleEvery: cfg.SampleEvery,
		Budget: d.client.Budget, Runner: d.runnerStatus,
		Loop: cfg.Loop, RunnerEnv: cfg.RunnerEnv, Slots: slots,
		OnPass: onPass, OnJobStarted: onJob, OnJobEnded: onEnd,
	}, nil
}

// launchers are the supervisor's launchers: the default backend's (the
// configured one, else a native launcher under DataDir) and the others by
// backend, each backend's default launcher where cfg gives none;
// reconcile routes each attempt to its policy's backend.
func (d *Daemon) launchers() (rm.Launcher, map[rm.Backend]rm.Launcher, error) {
	ls := make(map[rm.Backend]rm.Launcher, len(d.cfg.Launchers))
	for b, l := range d.cfg.Launchers {
		if l == nil {
			return nil, nil, fmt.Errorf("%w: daemon: the launcher of backend %q is nil", rm.ErrInvalid, b)
		}
		ls[b.OrDefault()] = l
	}
	nl := ls[rm.DefaultBackend]
	if nl == nil {
		opts := []native.Option{native.WithLogger(d.log)}
		if d.cfg.JobReport {
			opts = append(opts, native.WithJobReport(d.host.Name))
		}
		switch w := d.cfg.Warm; {
		case w.SharedHome:
			opts = append(opts, native.WithSharedHome())
		case w.HomeSet:
			opts = append(opts, native.WithHome(w.HomeFiles, w.HomeLinks))
		}
		n := native.NewLauncher(d.cfg.DataDir, opts...)
		d.closers = append(d.closers, n.Close)
		nl = n
	}
	delete(ls, rm.DefaultBackend)
	d.native = nl
	boxes, machines := container.Kind{}.Name(), vm.Kind{}.Name()
	if ls[boxes] == nil {
		d.boxes = container.NewBackend(container.BackendConfig{Engine: d.cfg.ContainerHost, Host: d.host.ID,
			FailedLogs: d.dir.FailedContainerLogs(), Logger: d.log})
		d.closers = append(d.closers, d.boxes.Close)
		ls[boxes] = d.boxes
	}
	if ls[machines] == nil {
		l, err := d.vmLauncher()
		if err != nil {
			return nil, nil, err
		}
		ls[machines] = l
	}
	return nl, ls, nil
}

// Close closes what New opened (the journal it opened, the default
// launcher's spare roots). Run must have returned.
func (d *Daemon) Close() error {
	var errs []error
	for i := len(d.closers) - 1; i >= 0; i-- {
		errs = append(errs, d.closers[i]())
	}
	d.closers = nil
	return errors.Join(errs...)
}

// Store is the journal.
func (d *Daemon) Store() store.Store { return d.st }

// Host is this host.
func (d *Daemon) Host() rm.Host { return d.host }

// DataDir is the data directory (absolute).
func (d *Daemon) DataDir() string { return d.cfg.DataDir }

// GitHub is the GitHub client.
func (d *Daemon) GitHub() *github.Client { return d.client }

// Status is the host's live figures (reconcile.Supervisor.Status).
func (d *Daemon) Status() status.Status {
	st := d.supervisor().Status()
	if d.client != nil {
		st.Registrations = registrations(d.client.RunnerLists())
	}
	d.mu.Lock()
	since := d.since
	d.mu.Unlock()
	if !since.IsZero() {
		st.Manager = &status.Manager{PID: os.Getpid(), Since: since, Version: d.cfg.Version, DataDir: d.cfg.DataDir}
	}
	if d.slots != nil {
		if w, err := d.slots.Status(); err == nil {
			st.Warm = w
		} else {
			d.log.Warn("workspace slots not shown in the status", "err", err)
		}
	}
	return st
}

// StopAttempt stops one attempt's runner (reconcile.Supervisor.StopAttempt).
func (d *Daemon) StopAttempt(ctx context.Context, id rm.AttemptID) error {
	return d.supervisor().StopAttempt(ctx, id)
}

// Refresh asks for the policies to be re-read now.
func (d *Daemon) Refresh() { d.supervisor().Refresh() }

// Addrs are where the daemon listens while it runs.
func (d *Daemon) Addrs() Addrs {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addrs
}

// OwnedPolicies counts the journal's policies of this host.
func (d *Daemon) OwnedPolicies(ctx context.Context) (int, error) {
	ps, err := d.st.Policies(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range ps {
		if p.IsOwnedBy(d.host.ID) {
			n++
		}
	}
	return n, nil
}

var _ localapi.Daemon = (*Daemon)(nil)

// The wiring states what meter fills of reconcile: meter, an adapter,
// does not import the core it serves.
var _ rm.Meters = (*meter.AttemptMeters)(nil)
