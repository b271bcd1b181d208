package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
)

// FromConfig is the daemon's Config as the program's configuration c says:
// the data directory, GitHub and its credentials (read now), admission's
// memory reserve and disk floor, the webhook listener with its secret (read
// from the variable [webhook] secret_env names) and the metrics address.
// The journal is the one [store] names (StoreConfig). Store, Host, Logger, Drain and Version are the caller's to set. It
// returns an error wrapping configfile.ErrNoCredentials when no credentials
// are configured.
func FromConfig(c *configfile.File, userAgent string) (Config, error) {
	if total, _, err := hostMemory(); err == nil {
		if err := c.CheckMemoryReserve(total); err != nil {
			return Config{}, err
		}
	}
	gc, err := GitHubConfig(c, userAgent)
	if err != nil {
		return Config{}, err
	}
	machine := platform.NewMachine()
	cfg := Config{
		DataDir: c.DataDir,
		GitHub:  gc,
		Admission: &reconcile.Admission{
			Memory: machine, Reserve: c.Admission.MemoryReserve.Bytes(),
			DiskFree: machine.DiskFree, DiskPath: c.DataDir, DiskFloor: c.Admission.DiskFloor.Bytes(),
			MaxSpares: c.Admission.MaxSpares, MaxJobs: c.Host.MaxJobs,
		},
		StoreConfig:   StoreConfigOf(c),
		MetricsAddr:   c.Daemon.MetricsAddr,
		ContainerHost: c.Container.Host,
		VM: VMConfig{Accel: vm.Accel(c.VM.Accel), MemoryMiB: int(c.VM.Memory.Bytes() >> 20), CPUs: c.VM.CPUs,
			Network: vm.Network(c.VM.Network), Forward: c.VM.Forward, SlotDiskBytes: c.VM.SlotDisk.Bytes()},
		HostName:         c.Host.Name,
		HeartbeatEvery:   time.Duration(c.Fleet.Heartbeat),
		Logs:             &datadir.LogRetention{MaxAge: time.Duration(c.Logs.MaxAge), MaxBytes: int64(c.Logs.MaxSize.Bytes())},
		AutoUpdateRunner: c.Runner.AutoUpdate,
		JobReport:        c.Runner.JobReport,
		Warm: Warm{Enabled: c.Warm.Enabled, Cap: int64(c.Warm.Cap.Bytes()), HomeFiles: c.Warm.HomeFiles,
			HomeLinks: c.Warm.HomeLinks, HomeSet: true, SharedHome: c.Warm.SharedHome},
		Loop: reconcile.LoopOptions{HungGrace: time.Duration(c.Daemon.HungGrace)},
	}
	if c.Webhook.Listen != "" {
		secret := os.Getenv(c.Webhook.SecretEnv)
		if secret == "" {
			return Config{}, fmt.Errorf("%w: [webhook] listen is set but $%s (secret_env) is empty: set it to the webhook's secret",
				rm.ErrInvalid, c.Webhook.SecretEnv)
		}
		cfg.Webhook = Webhook{Listen: c.Webhook.Listen, Secret: []byte(secret), MaxBody: int64(c.Webhook.MaxBody.Bytes())}
	}
	return cfg, nil
}

// hostMemory is the machine's memory (platform.HostMemory); tests replace
// it.
var hostMemory = platform.HostMemory

// GitHubConfig is the GitHub client's configuration as c's [github] says,
// with its credentials read now (an error wrapping configfile.ErrNoCredentials
// when there are none).
func GitHubConfig(c *configfile.File, userAgent string) (github.Config, error) {
	creds, err := Credentials(c)
	if err != nil {
		return github.Config{}, err
	}
	return GitHubConfigWith(c, creds, userAgent), nil
}

// GitHubConfigWith is the GitHub client's configuration for c's [github]
// with creds as its credentials (auth login checks them before it keeps
// them).
func GitHubConfigWith(c *configfile.File, creds configfile.Credentials, userAgent string) github.Config {
	gc := github.Config{WebURL: c.GitHub.URL, APIURL: c.GitHub.APIURL, Token: creds.Token, UserAgent: userAgent}
	if creds.PrivateKeyPEM != nil {
		gc.Token = ""
		gc.App = &github.App{AppID: creds.AppID, ClientID: creds.ClientID, InstallationID: creds.InstallationID, PrivateKeyPEM: creds.PrivateKeyPEM}
	}
	return gc
}

// NewGitHubClient is a client of the GitHub c's [github] says, logging to
// logger (nil: nowhere), for the commands that talk to GitHub without
// running the daemon; quiet logs its retries at debug
// (github.RetryPolicy.Quiet), as a one-shot command wants.
func NewGitHubClient(c *configfile.File, userAgent string, logger *slog.Logger, quiet bool) (*github.Client, error) {
	creds, err := Credentials(c)
	if err != nil {
		return nil, err
	}
	return NewGitHubClientWith(c, creds, userAgent, logger, quiet)
}

// NewGitHubClientWith is NewGitHubClient with creds as its credentials.
func NewGitHubClientWith(c *configfile.File, creds configfile.Credentials, userAgent string, logger *slog.Logger, quiet bool) (*github.Client, error) {
	gc := GitHubConfigWith(c, creds, userAgent)
	gc.Logger, gc.Retry.Quiet = logger, quiet
	client, err := github.New(gc)
	if err != nil {
		return nil, fmt.Errorf("%w: [github]: %v", rm.ErrInvalid, err)
	}
	return client, nil
}
