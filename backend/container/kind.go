package container

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
)

// Kind is the container backend as the rest of the manager knows it: the
// rules of a policy's rm.ContainerSettings (an image reference, CPUs, a
// network, environment names, volumes), checked where a policy is made.
// The launcher checks its own Settings again when it is built.
type Kind struct{}

// Name is rm.BackendContainer.
func (Kind) Name() rm.Backend { return rm.BackendContainer }

// SettingsIn names a policy's container settings by its image.
func (Kind) SettingsIn(p rm.Policy) string {
	if p.Container.IsZero() {
		return ""
	}
	return fmt.Sprintf("container settings (image %q)", p.Container.Image)
}

// FromUser keeps the settings as written: they are the container
// backend's (but the VM forwards, refused by rm.Policy.ValidateWith).
func (Kind) FromUser(u rm.UserSettings) (rm.ContainerSettings, rm.VMSettings, error) {
	box, fwd := u.AsWritten()
	return box, fwd, nil
}

// imageRef is an image reference as a policy may name it: an optional
// registry, a lower-case path, an optional tag and digest.
var imageRef = regexp.MustCompile(`^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._-]+[a-z0-9]+)*(?:/[a-z0-9]+(?:[._-]+[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$`)

// ValidatePolicy checks p's container settings: an image reference, CPUs
// from 0.01 (or 0), a network's name, environment names (NAME or NAME*),
// volumes SRC:DST[:ro|rw].
func (Kind) ValidatePolicy(p rm.Policy) error {
	c := p.Container
	if c.Image == "" {
		return fmt.Errorf("backend %q needs an image: name the image holding the runner (e.g. ghcr.io/actions/actions-runner:latest)", rm.BackendContainer)
	}
	if !imageRef.MatchString(c.Image) {
		return fmt.Errorf("image %q is not an image reference (lower-case name, optional :tag or @sha256:digest)", c.Image)
	}
	if math.IsNaN(c.CPUs) || math.IsInf(c.CPUs, 0) || c.CPUs < 0 || (c.CPUs > 0 && c.CPUs < 0.01) || c.CPUs > 1<<20 {
		return fmt.Errorf("cpus %v: want 0 (no limit) or a number of CPUs from 0.01", c.CPUs)
	}
	if c.Network != "" && !netName.MatchString(c.Network) {
		return fmt.Errorf("network %q: want host, none, bridge or a network's name", c.Network)
	}
	for _, n := range c.Env {
		if !envName.MatchString(n) {
			return fmt.Errorf("environment name %q: want letters, digits and _, optionally ending in * for a prefix", n)
		}
	}
	for _, v := range c.Volumes {
		if err := policyVolume(v); err != nil {
			return err
		}
	}
	return nil
}

// policyVolume checks a policy's "source:target[:ro|rw]" (in a policy's
// words: SRC:DST), as parseVolume does the launcher's.
func policyVolume(v string) error {
	if n := strings.Count(v, ":"); n < 1 || n > 2 {
		return fmt.Errorf("volume %q: want SRC:DST or SRC:DST:ro", v)
	}
	_, err := parseVolume(v)
	return err
}

// CheckConfig accepts any [container] table: its host is the engine's
// address, checked when the engine is first dialled.
func (Kind) CheckConfig(*configfile.File) error { return nil }
