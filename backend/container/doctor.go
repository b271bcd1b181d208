package container

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/doctor/check"
)

// doctorCallTimeout bounds each of the doctor's engine calls.
const doctorCallTimeout = 10 * time.Second

// Doctor checks the container backend, when a policy of this host uses
// it: the engine ([container] host) answers ("container-engine"), each
// container policy's image is on it ("container-image", one per image),
// and no runner container of this host is left that no live attempt owns
// ("container-leftovers"; Fix removes them).
func (Kind) Doctor(ctx context.Context, env check.Env) []check.Check {
	boxed := slices.DeleteFunc(slices.Clone(env.Policies), func(p rm.Policy) bool { return p.Backend != rm.BackendContainer })
	if len(boxed) == 0 {
		return nil
	}
	engine := ""
	if env.Config != nil {
		engine = env.Config.Container.Host
	}
	e, err := Connect(engine)
	if err != nil {
		return []check.Check{check.Failure("container-engine", "container engine", err.Error()+
			"\nset [container] host in the configuration (or DOCKER_HOST) to the engine's address, e.g. unix:///run/podman/podman.sock")}
	}
	defer e.Close()
	cctx, cancel := context.WithTimeout(ctx, doctorCallTimeout)
	v, err := e.Ping(cctx)
	cancel()
	if err != nil {
		return []check.Check{check.Failure("container-engine", fmt.Sprintf("container engine at %s does not answer (%d container policies need it)", e.Host(), len(boxed)),
			engineHint(e.Host(), err))}
	}
	out := []check.Check{check.Ok("container-engine", fmt.Sprintf("container engine %s %s at %s (API %s, %s/%s)", v.Product, v.Version, e.Host(), v.APIVersion, v.OS, v.Arch))}
	out = append(out, doctorImages(ctx, e, boxed)...)
	return append(out, doctorLeftovers(ctx, e, env))
}

// engineHint says how to get an engine that does not answer going.
func engineHint(host string, err error) string {
	hint := err.Error()
	switch {
	case strings.Contains(hint, "permission denied"):
		hint += "\nthe manager's user cannot open the socket: add it to the socket's group (docker), or use a rootless engine of that user"
	case strings.Contains(host, "podman"):
		hint += "\nstart it: systemctl enable --now podman.socket (rootless: systemctl --user enable --now podman.socket)"
	default:
		hint += "\nstart the engine (systemctl enable --now docker, or podman.socket), or point [container] host (DOCKER_HOST) at it"
	}
	return hint
}

// doctorImages checks that each container policy's image is on the
// engine. One that is missing is pulled at the first launch (a warning),
// except a localhost/ image, which no registry has (a failure: every
// launch fails image_missing until it is built).
func doctorImages(ctx context.Context, e *Engine, ps []rm.Policy) []check.Check {
	const name = "container-image"
	byImage := map[string][]string{}
	var order []string
	for _, p := range ps {
		if _, seen := byImage[p.Container.Image]; !seen {
			order = append(order, p.Container.Image)
		}
		byImage[p.Container.Image] = append(byImage[p.Container.Image], p.Name)
	}
	var out []check.Check
	for _, img := range order {
		what := fmt.Sprintf("image %s (policy %s)", img, strings.Join(byImage[img], ", "))
		cctx, cancel := context.WithTimeout(ctx, doctorCallTimeout)
		err := e.CheckImage(cctx, img)
		cancel()
		switch {
		case err == nil:
			out = append(out, check.Ok(name, what+": present"))
		case errors.Is(err, ErrImageMissing) && strings.HasPrefix(img, "localhost/"):
			out = append(out, check.Failure(name, what+": not on the engine, and a local image is never pulled",
				"build it on this host (podman build -t "+img+" .), or name a registry's image in the policy"))
		case errors.Is(err, ErrImageMissing):
			out = append(out, check.Warning(name, what+": not on the engine; the first launch pulls it",
				"pull it now to find out whether the pull works: podman pull "+img+" (or docker pull); a private registry needs the engine's credentials"))
		default:
			out = append(out, check.Warning(name, what, err.Error()))
		}
	}
	return out
}

// doctorLeftovers finds this host's runner containers that no live attempt
// owns (a crash between a container's creation and its journal record, a
// lost Cleanup); env.Fix removes them.
func doctorLeftovers(ctx context.Context, e *Engine, env check.Env) check.Check {
	const name = "container-leftovers"
	cctx, cancel := context.WithTimeout(ctx, doctorCallTimeout)
	list, err := e.Containers(cctx, env.Host.ID)
	cancel()
	if err != nil {
		return check.Warning(name, "runner containers", err.Error())
	}
	var left []string
	for _, c := range list {
		if c.Attempt.IsZero() || !env.Live(c.Attempt) {
			left = append(left, c.Name)
		}
	}
	what := fmt.Sprintf("runner containers: %d of this host, %d that no live attempt owns", len(list), len(left))
	switch {
	case len(left) == 0:
		return check.Ok(name, what)
	case env.DaemonUp:
		return check.Warning(name, what+": "+strings.Join(left, ", "),
			"the running daemon removes them at its next start; to remove them now: stop it and run doctor --fix")
	case !env.Fix:
		return check.Warning(name, what+": "+strings.Join(left, ", "),
			"remove them with doctor --fix (or podman rm -f NAME / docker rm -f NAME)")
	}
	cctx, cancel = context.WithTimeout(ctx, 3*doctorCallTimeout)
	removed, err := e.RemoveLeftovers(cctx, env.Host.ID, env.Live)
	cancel()
	if err != nil {
		return check.Warning(name, fmt.Sprintf("%s: removed %d", what, len(removed)), err.Error())
	}
	return check.Ok(name, fmt.Sprintf("%s: removed %d", what, len(removed)))
}
