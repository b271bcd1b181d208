package container

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/warm"
)

var (
	_ rm.WarmLauncher = (*Launcher)(nil)
	_ rm.WarmLauncher = (*Backend)(nil)
)

// local reports whether the engine is this host's: a unix socket or a
// Windows named pipe. A slot's folder is a path of this host, which a
// remote engine's bind mount would look for on its own.
func (e *Engine) local() bool {
	return strings.HasPrefix(e.host, "unix://") || strings.HasPrefix(e.host, "npipe://")
}

// RunsWarm reports whether the backend's containers can run in workspace
// slots: when its engine is this host's (see Launcher.RunsWarm for a
// policy's own exception).
func (b *Backend) RunsWarm() bool {
	e, err := b.engine()
	return err == nil && e.local()
}

// launchSpec is spec as the policy's launcher l can run it: a slot it
// cannot use (the policy mounts a volume of its own on the work folder)
// is left out, and the attempt runs cold, said at WARN.
func (b *Backend) launchSpec(l *Launcher, spec rm.LaunchSpec) rm.LaunchSpec {
	if spec.Warm != nil && !l.RunsWarm() {
		b.log.Warn("the policy mounts a volume of its own on the runner's work folder: the attempt runs cold, its workspace slot unused",
			"attempt", spec.Attempt.String(), "policy", spec.Policy.Name, "slot", spec.Warm.String())
		spec.Warm = nil
	}
	return spec
}

// WorkFolder is the runner's work folder in the container: <runner
// directory>/_work, as the JIT configuration's .runner names it (its
// workFolder "_work", relative to the runner's root). A warm attempt's
// slot is mounted there.
func (s Settings) WorkFolder() string { return path.Join(s.runnerDir(), "_work") }

// RunsWarm reports whether the launcher can run an attempt in a workspace
// slot: when its engine is this host's (a unix socket or a Windows named
// pipe: a slot's folder is a path of this host, which a remote engine's
// bind mount would look for on its own), unless one of the policy's own
// volumes is mounted on the work folder (the operator's volume wins; a
// slot would hide it).
func (l *Launcher) RunsWarm() bool {
	if !l.e.local() {
		return false
	}
	wf := l.s.WorkFolder()
	for _, v := range l.s.Volumes {
		if dst, err := parseVolume(v); err == nil && dst == wf {
			return false
		}
	}
	return true
}

// warmOptions adds the attempt's slot to its container: the slot's
// folder bind-mounted at the work folder, and the cache variables
// (warm.Env) pointing into it, except those the container's environment
// (the manager's passed variables, the attempt's, the image's own) sets
// already: the operator's setting wins.
func (l *Launcher) warmOptions(opts *client.ContainerCreateOptions, slot *rm.WarmSlot, imageEnv []string) {
	wf := l.s.WorkFolder()
	set := map[string]bool{}
	for _, kv := range append(append([]string(nil), imageEnv...), opts.Config.Env...) {
		if name, _, ok := strings.Cut(kv, "="); ok {
			set[name] = true
		}
	}
	opts.Config.Env = append(opts.Config.Env, warm.Env(wf, true, func(name string) bool { return set[name] })...)
	opts.HostConfig.Mounts = append(opts.HostConfig.Mounts, mount.Mount{
		Type:   mount.TypeBind,
		Source: slot.Dir,
		Target: wf,
		// A job's files stay in its own slot: nothing mounted under
		// the slot on the host later shows in a container, nor the
		// other way.
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
	})
}

// warmLaunch readies a warm attempt's container: its slot checked, open
// to the runner's user, mounted, and the cache variables set.
func (l *Launcher) warmLaunch(ctx context.Context, opts *client.ContainerCreateOptions, slot *rm.WarmSlot) error {
	if !l.RunsWarm() {
		return fmt.Errorf("slot %s: the engine at %s is not this host's, or the policy mounts a volume of its own on the work folder %s", slot, l.e.host, l.s.WorkFolder())
	}
	if !filepath.IsAbs(slot.Dir) {
		return fmt.Errorf("slot %s: its folder %q is not an absolute path", slot, slot.Dir)
	}
	if fi, err := os.Stat(slot.Dir); err != nil {
		return fmt.Errorf("slot %s: %w", slot, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("slot %s: %s is no directory", slot, slot.Dir)
	}
	env, user := l.image(ctx)
	if l.s.User != "" {
		user = l.s.User
	}
	if err := openSlot(slot.Dir, user); err != nil {
		return err
	}
	l.warmOptions(opts, slot, env)
	return nil
}

// image is what a warm launch needs of the policy's image: its
// environment (a cache variable it sets is its own) and its user. The
// image is pulled first if missing and the settings allow, as the
// creation would; an image that still cannot be read gives a zero image
// (the creation then says what is wrong).
func (l *Launcher) image(ctx context.Context) (env []string, user string) {
	res, err := l.e.cli.ImageInspect(ctx, l.s.Image)
	if err != nil && isNotFound(err) && l.s.Pull != PullNever && ctx.Err() == nil {
		if l.e.pull(ctx, l.s.Image) == nil {
			res, err = l.e.cli.ImageInspect(ctx, l.s.Image)
		}
	}
	if err != nil || res.Config == nil {
		return nil, ""
	}
	return res.Config.Env, res.Config.User
}

// openSlot makes the slot's folder writable by the container's runner
// when it runs as another user than root: the runner must create its
// _temp, _actions and _tool there. The folder itself only: what the
// runner makes under it is its own. The host's other users still cannot
// reach it while a folder above it is closed to them (the data
// directory's slots/ is the manager's alone, 0700): without one, the slot
// is refused.
func openSlot(dir, user string) error {
	if isRoot(user) {
		return nil
	}
	if !closedAbove(dir) {
		return fmt.Errorf("slot %s: no folder above it is closed to the host's other users, so it cannot be opened to the container's user %q", dir, user)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return fmt.Errorf("slot %s: open it to the container's user %q: %w", dir, user, err)
	}
	return nil
}

// isRoot reports whether a container's user ("name", "uid", "uid:gid",
// "" for the image's default of root) is root.
func isRoot(user string) bool {
	u, _, _ := strings.Cut(user, ":")
	return u == "" || u == "0" || u == "root"
}

// closedAbove reports whether a folder above dir denies the host's other
// users passage (no x bit for others).
func closedAbove(dir string) bool {
	for d := filepath.Dir(filepath.Clean(dir)); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return true
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}
