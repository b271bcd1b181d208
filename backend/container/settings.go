package container

import (
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"

	"github.com/distribution/reference"
)

// DefaultRunnerDir is where the image contract expects the installed
// runner: the directory GitHub's actions-runner image uses.
const DefaultRunnerDir = "/home/runner"

// MinMemory is the smallest memory limit accepted: engines refuse less
// (Docker's floor is 6 MiB), and a runner needs far more.
const MinMemory = 6 << 20

// PullPolicy says whether a missing image is pulled.
type PullPolicy string

const (
	// PullMissing pulls the image when the engine does not have it (the
	// default).
	PullMissing PullPolicy = "missing"
	// PullNever never pulls: a missing image fails the launch with
	// ErrImageMissing. For images built on the host or pulled beforehand.
	PullNever PullPolicy = "never"
)

// Settings is how one policy's runners run in containers.
type Settings struct {
	// Image is the image reference (required), e.g.
	// ghcr.io/actions/actions-runner:latest.
	Image string
	// RunnerDir is the runner's directory in the image (absolute);
	// DefaultRunnerDir when empty.
	RunnerDir string
	// User runs the runner as this user ("name", "uid" or "uid:gid");
	// the image's USER when empty.
	User string
	// MemoryBytes limits the container's memory (swap included: none is
	// given). 0: no fixed limit (see WithMemoryFor); else at least
	// MinMemory.
	MemoryBytes uint64
	// CPUs limits the container's CPU time, in CPUs (1.5 = one and a half);
	// 0: no limit.
	CPUs float64
	// Network is the engine network the container joins: "host", "none",
	// "bridge" or a network's name; the engine's default when empty.
	Network string
	// Volumes are mounted into every container of the policy, as
	// "source:target[:ro|rw]": source is a host path (absolute) or a named
	// volume, target an absolute path in the container. For caches: every
	// concurrent container of the policy shares them.
	Volumes []string
	// PassEnv names variables of the manager's environment that every
	// container gets (a name ending in "*" is a prefix), besides the proxy
	// variables. Only what jobs may read: a job reads all of its runner's.
	PassEnv []string
	// Init runs the engine's init process (docker-init, catatonit) as the
	// container's PID 1, in front of the runner: it reaps the orphans a
	// job leaves. The engine must have one installed.
	Init bool
	// Pull says whether a missing image is pulled; PullMissing when empty.
	Pull PullPolicy
}

var (
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\*?$`)
	volumeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	netName    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	userSpec   = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$`)
)

// Validate checks every field and says what is wrong with the first bad
// one, in words for the person who wrote it.
func (s Settings) Validate() error {
	var errs []error
	if s.Image == "" {
		errs = append(errs, errors.New("no image: name the image holding the runner (e.g. ghcr.io/actions/actions-runner:latest)"))
	} else if _, err := reference.ParseNormalizedNamed(s.Image); err != nil {
		errs = append(errs, fmt.Errorf("image %q is not an image reference: %w", s.Image, err))
	}
	if s.RunnerDir != "" && (!path.IsAbs(s.RunnerDir) || path.Clean(s.RunnerDir) == "/") {
		errs = append(errs, fmt.Errorf("runner directory %q: want an absolute path in the image other than /", s.RunnerDir))
	}
	if s.User != "" && !userSpec.MatchString(s.User) {
		errs = append(errs, fmt.Errorf("user %q: want a name or uid, optionally :group", s.User))
	}
	if s.MemoryBytes != 0 && s.MemoryBytes < MinMemory {
		errs = append(errs, fmt.Errorf("memory limit %d bytes is below the engines' floor of %d (6 MiB)", s.MemoryBytes, MinMemory))
	}
	if s.MemoryBytes > math.MaxInt64 {
		errs = append(errs, fmt.Errorf("memory limit %d bytes is too large", s.MemoryBytes))
	}
	if math.IsNaN(s.CPUs) || math.IsInf(s.CPUs, 0) || s.CPUs < 0 || (s.CPUs > 0 && s.CPUs < 0.01) || s.CPUs > 1<<20 {
		errs = append(errs, fmt.Errorf("cpus %v: want 0 (no limit) or a number of CPUs from 0.01", s.CPUs))
	}
	if s.Network != "" && !netName.MatchString(s.Network) {
		errs = append(errs, fmt.Errorf("network %q: want host, none, bridge or a network's name", s.Network))
	}
	for _, v := range s.Volumes {
		dst, err := parseVolume(v)
		if err != nil {
			errs = append(errs, err)
		} else if rd := s.runnerDir(); dst == rd || strings.HasPrefix(rd, dst+"/") {
			errs = append(errs, fmt.Errorf("volume %q would hide the runner in %s: mount it elsewhere (e.g. under %s/_work)", v, rd, rd))
		}
	}
	for _, n := range s.PassEnv {
		if !envName.MatchString(n) {
			errs = append(errs, fmt.Errorf("environment name %q: want letters, digits and _, optionally ending in * for a prefix", n))
		} else if ownEnv(strings.TrimSuffix(n, "*")) {
			errs = append(errs, fmt.Errorf("environment name %q is the launcher's own: it cannot be passed", n))
		}
	}
	switch s.Pull {
	case "", PullMissing, PullNever:
	default:
		errs = append(errs, fmt.Errorf("pull policy %q: want %q or %q", s.Pull, PullMissing, PullNever))
	}
	return errors.Join(errs...)
}

func (s Settings) runnerDir() string {
	if s.RunnerDir == "" {
		return DefaultRunnerDir
	}
	return path.Clean(s.RunnerDir)
}

// parseVolume checks "source:target[:ro|rw]" and returns its target.
func parseVolume(v string) (string, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return "", fmt.Errorf("volume %q: want source:target or source:target:ro", v)
	}
	src, dst := parts[0], parts[1]
	switch {
	case src == "":
		return "", fmt.Errorf("volume %q: no source", v)
	case strings.HasPrefix(src, "/"):
		if path.Clean(src) != src {
			return "", fmt.Errorf("volume %q: source %q is not a clean absolute path", v, src)
		}
	case !volumeName.MatchString(src):
		return "", fmt.Errorf("volume %q: source %q is neither an absolute host path nor a volume name", v, src)
	}
	if !path.IsAbs(dst) || path.Clean(dst) != dst || dst == "/" {
		return "", fmt.Errorf("volume %q: target %q: want a clean absolute path other than /", v, dst)
	}
	if len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw" {
		return "", fmt.Errorf("volume %q: mode %q: want ro or rw", v, parts[2])
	}
	return dst, nil
}
