package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/moby/moby/client"
)

// Engine is one connection to a Docker Engine API: Docker's daemon, or
// Podman's Docker-compatible service. A host shares one among its
// container policies' launchers. The API version is negotiated at the
// first call (Podman 4.3 speaks v1.41; the client speaks v1.40 and later).
type Engine struct {
	cli  *client.Client
	host string
	log  *slog.Logger
}

// EngineOption configures an Engine.
type EngineOption func(*Engine)

// WithEngineLogger sets where the engine and its launchers note what they
// could not do perfectly (a runner not metered, a container not removed).
func WithEngineLogger(log *slog.Logger) EngineOption {
	return func(e *Engine) { e.log = log }
}

// Connect returns an engine at host ("unix:///run/podman/podman.sock",
// "tcp://…", "npipe://…"). With host "", DOCKER_HOST (and DOCKER_TLS_VERIFY,
// DOCKER_CERT_PATH, DOCKER_API_VERSION) are used, else the first socket of
// DefaultHosts that exists. It does not dial: Ping does.
func Connect(host string, opts ...EngineOption) (*Engine, error) {
	e := &Engine{log: slog.Default()}
	for _, o := range opts {
		o(e)
	}
	copts := []client.Opt{client.FromEnv}
	switch {
	case host != "":
		copts = append(copts, client.WithHost(host))
	case os.Getenv(client.EnvOverrideHost) == "":
		if found := findSocket(); found != "" {
			copts = append(copts, client.WithHost(found))
		}
	}
	cli, err := client.New(copts...)
	if err != nil {
		return nil, fmt.Errorf("container engine %q: %w", host, err)
	}
	e.cli, e.host = cli, cli.DaemonHost()
	return e, nil
}

// DefaultHosts are the engine sockets Connect tries, in order, when
// neither its host nor DOCKER_HOST names one: Docker's, rootful Podman's,
// then the rootless ones of this user ($XDG_RUNTIME_DIR).
func DefaultHosts() []string {
	if runtime.GOOS == "windows" {
		return []string{client.DefaultDockerHost}
	}
	hosts := []string{"unix:///var/run/docker.sock", "unix:///run/podman/podman.sock"}
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); xdg != "" {
		hosts = append(hosts, "unix://"+filepath.Join(xdg, "podman", "podman.sock"), "unix://"+filepath.Join(xdg, "docker.sock"))
	}
	return hosts
}

func findSocket() string {
	for _, h := range DefaultHosts() {
		if p, ok := strings.CutPrefix(h, "unix://"); ok {
			if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
				return h
			}
		}
	}
	return ""
}

// Host is the engine's address.
func (e *Engine) Host() string { return e.host }

// Close releases the engine's idle connections.
func (e *Engine) Close() error { return e.cli.Close() }

// Version is what an engine says of itself.
type Version struct {
	// Product is "Docker Engine - Community", "Podman Engine", …
	Product string
	// Version is the engine's own version; APIVersion the API version
	// negotiated with it.
	Version, APIVersion string
	OS, Arch            string
}

// Ping checks the engine answers and says what it is; ErrEngineDown when
// it does not answer.
func (e *Engine) Ping(ctx context.Context) (Version, error) {
	if _, err := e.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return Version{}, engineErr("container engine at "+e.host, err)
	}
	v, err := e.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return Version{}, engineErr("container engine at "+e.host, err)
	}
	product := v.Platform.Name
	for _, c := range v.Components {
		if strings.HasSuffix(c.Name, "Engine") {
			product = c.Name
		}
	}
	return Version{Product: product, Version: v.Version, APIVersion: e.cli.ClientVersion(), OS: v.Os, Arch: v.Arch}, nil
}

// CheckImage reports whether the engine has image: nil, or an error
// wrapping ErrImageMissing or ErrEngineDown.
func (e *Engine) CheckImage(ctx context.Context, image string) error {
	_, err := e.cli.ImageInspect(ctx, image)
	switch {
	case err == nil:
		return nil
	case isNotFound(err):
		return fmt.Errorf("image %s: %w on the engine at %s", image, ErrImageMissing, e.host)
	default:
		return engineErr("image "+image, err)
	}
}

// pull pulls image, reading the engine's progress to its end: a pull
// fails in that stream, not in the first answer.
func (e *Engine) pull(ctx context.Context, image string) error {
	resp, err := e.cli.ImagePull(ctx, image, client.ImagePullOptions{})
	if err == nil {
		err = resp.Wait(ctx)
		_ = resp.Close()
	}
	if err == nil {
		return nil
	}
	if isDown(err) {
		return engineErr("pull "+image, err)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("pull %s: %w", image, err)
	}
	return fmt.Errorf("pull %s: %w: %w", image, ErrPullFailed, err)
}
