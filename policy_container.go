package runnermanager

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"
)

// ContainerSettings are a container policy's own: what each attempt's
// container runs and may use. Its memory limit is the policy's
// MemoryLimit. The container launcher checks them again, with the engine's
// rules, when it is built.
type ContainerSettings struct {
	// Image is the image reference holding the runner (see
	// docs/containers.md for the contract it meets).
	Image string
	// CPUs limits the container's CPU time, in CPUs (1.5: one and a half);
	// 0: no limit.
	CPUs float64
	// Network is the engine network the container joins ("host", "none",
	// "bridge" or a network's name); "" is the engine's default.
	Network string
	// Env names variables of the manager's environment passed to every
	// container (a trailing "*" makes a name a prefix). Jobs read them.
	Env []string
	// Volumes are mounted in every container, "source:target[:ro|rw]":
	// source an absolute host path or a volume name. For caches.
	Volumes []string
}

// IsZero reports whether no container setting is set.
func (c ContainerSettings) IsZero() bool {
	return c.Image == "" && c.CPUs == 0 && c.Network == "" && len(c.Env) == 0 && len(c.Volumes) == 0
}

var (
	imageRef      = regexp.MustCompile(`^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._-]+[a-z0-9]+)*(?:/[a-z0-9]+(?:[._-]+[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$`)
	containerNet  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	envPassName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\*?$`)
	volumeNameRef = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// validateBackend checks the backend and the settings it takes.
func (p Policy) validateBackend() error {
	if p.Backend != BackendContainer && !p.Container.IsZero() {
		return invalidf("policy %q: container settings (image %q) need backend %q", p.Name, p.Container.Image, BackendContainer)
	}
	if p.Backend != BackendVM && !p.VM.IsZero() {
		what := fmt.Sprintf("image %q", p.VM.Image)
		if p.VM.Image == "" {
			what = fmt.Sprintf("forward %q", strings.Join(p.VM.Forward, ","))
		}
		return invalidf("policy %q: VM settings (%s) need backend %q", p.Name, what, BackendVM)
	}
	switch p.Backend {
	case "", BackendNative:
		return nil
	case BackendContainer:
		if err := p.Container.validate(); err != nil {
			return invalidf("policy %q: %v", p.Name, err)
		}
		return nil
	case BackendVM:
		if err := p.VM.validate(); err != nil {
			return invalidf("policy %q: %v", p.Name, err)
		}
		return nil
	default:
		return invalidf("policy %q: backend %q is not supported (want %q, %q or %q)", p.Name, p.Backend, BackendNative, BackendContainer, BackendVM)
	}
}

func (c ContainerSettings) validate() error {
	if c.Image == "" {
		return fmt.Errorf("backend %q needs an image: name the image holding the runner (e.g. ghcr.io/actions/actions-runner:latest)", BackendContainer)
	}
	if !imageRef.MatchString(c.Image) {
		return fmt.Errorf("image %q is not an image reference (lower-case name, optional :tag or @sha256:digest)", c.Image)
	}
	if math.IsNaN(c.CPUs) || math.IsInf(c.CPUs, 0) || c.CPUs < 0 || (c.CPUs > 0 && c.CPUs < 0.01) || c.CPUs > 1<<20 {
		return fmt.Errorf("cpus %v: want 0 (no limit) or a number of CPUs from 0.01", c.CPUs)
	}
	if c.Network != "" && !containerNet.MatchString(c.Network) {
		return fmt.Errorf("network %q: want host, none, bridge or a network's name", c.Network)
	}
	for _, n := range c.Env {
		if !envPassName.MatchString(n) {
			return fmt.Errorf("environment name %q: want letters, digits and _, optionally ending in * for a prefix", n)
		}
	}
	for _, v := range c.Volumes {
		if err := validateVolume(v); err != nil {
			return err
		}
	}
	return nil
}

// validateVolume checks "source:target[:ro|rw]".
func validateVolume(v string) error {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf("volume %q: want SRC:DST or SRC:DST:ro", v)
	}
	src, dst := parts[0], parts[1]
	switch {
	case src == "":
		return fmt.Errorf("volume %q: no source", v)
	case strings.HasPrefix(src, "/"):
		if path.Clean(src) != src {
			return fmt.Errorf("volume %q: source %q is not a clean absolute path", v, src)
		}
	case !volumeNameRef.MatchString(src):
		return fmt.Errorf("volume %q: source %q is neither an absolute host path nor a volume name", v, src)
	}
	if !path.IsAbs(dst) || path.Clean(dst) != dst || dst == "/" {
		return fmt.Errorf("volume %q: target %q: want a clean absolute path other than /", v, dst)
	}
	if len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw" {
		return fmt.Errorf("volume %q: mode %q: want ro or rw", v, parts[2])
	}
	return nil
}
