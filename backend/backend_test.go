package backend_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend"
)

func validPolicy(t *testing.T) rm.Policy {
	t.Helper()
	scope, err := rm.Repository("acme/repo")
	require.NoError(t, err)
	tg, err := rm.NewScaleSetTarget(scope, "", "home")
	require.NoError(t, err)
	return rm.Policy{ID: rm.NewPolicyID(), Name: "home", Host: rm.NewHostID(), Target: tg, Max: 2}
}

// Each backend's rules are its own, asked through the one list; the
// policy's own checks stay the root's (rm.Policy.Validate).
func TestValidateWith(t *testing.T) {
	require.NoError(t, validPolicy(t).ValidateWith(backend.All()))

	tests := map[string]struct {
		edit func(p *rm.Policy)
		want string
	}{
		"Backend":       {func(p *rm.Policy) { p.Backend = "docker" }, `backend "docker" is not supported (want "native", "container" or "vm")`},
		"VMNoImage":     {func(p *rm.Policy) { p.Backend = rm.BackendVM }, `backend "vm" needs an image`},
		"VMRelImage":    {vmPolicy(rm.VMSettings{Image: "images/runner"}), `VM image "images/runner": want a clean absolute path`},
		"NativeVMImage": {func(p *rm.Policy) { p.VM.Image = "/images/runner" }, `VM settings (image "/images/runner") need backend "vm"`},
		"NativeVMFwd":   {func(p *rm.Policy) { p.VM.Forward = []string{"10.1.2.3:80"} }, `VM settings (forward "10.1.2.3:80") need backend "vm"`},
		"VMFwdNoPort":   {vmPolicy(rm.VMSettings{Image: "/i", Forward: []string{"cache.lan"}}), `VM forward "cache.lan": want host:port`},
		"VMFwdPort":     {vmPolicy(rm.VMSettings{Image: "/i", Forward: []string{"cache.lan:0"}}), `VM forward "cache.lan:0": port "0" is not 1-65535`},
		"VMFwdIPv6":     {vmPolicy(rm.VMSettings{Image: "/i", Forward: []string{"[::1]:80"}}), "IPv6 is not supported"},
		"VMFwdGuestNet": {vmPolicy(rm.VMSettings{Image: "/i", Forward: []string{"10.0.2.2:80"}}), "10.0.2.0/24 is the guest's own network"},
		"VMFwdHost":     {vmPolicy(rm.VMSettings{Image: "/i", Forward: []string{"a_b:80"}}), `"a_b" is neither an IPv4 address nor a host name`},
		"VMContainer":   {func(p *rm.Policy) { vmPolicy(rm.VMSettings{Image: "/i"})(p); p.Container.Image = "runner" }, `need backend "container"`},
		"NoImage":       {func(p *rm.Policy) { p.Backend = rm.BackendContainer }, `backend "container" needs an image`},
		"BadImage":      {container(rm.ContainerSettings{Image: "Has Space"}), `image "Has Space" is not an image reference`},
		"CPUs":          {container(rm.ContainerSettings{Image: "runner", CPUs: -1}), "cpus -1: want 0 (no limit)"},
		"Network":       {container(rm.ContainerSettings{Image: "runner", Network: "a b"}), `network "a b"`},
		"Env":           {container(rm.ContainerSettings{Image: "runner", Env: []string{"A=B"}}), `environment name "A=B"`},
		"VolumeNoDst":   {container(rm.ContainerSettings{Image: "runner", Volumes: []string{"/cache"}}), `volume "/cache": want SRC:DST`},
		"VolumeRelDst":  {container(rm.ContainerSettings{Image: "runner", Volumes: []string{"cache:rel"}}), `target "rel"`},
		"VolumeMode":    {container(rm.ContainerSettings{Image: "runner", Volumes: []string{"/c:/c:rx"}}), `mode "rx"`},
		"NativeImage":   {func(p *rm.Policy) { p.Container.Image = "runner" }, `need backend "container"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			p := validPolicy(t)
			tt.edit(&p)
			err := p.ValidateWith(backend.All())
			require.ErrorIs(t, err, rm.ErrInvalid)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, 1, strings.Count(err.Error(), "invalid"), "one %q prefix: %s", "invalid", err)
			assert.Contains(t, err.Error(), `policy "home": `)
		})
	}

	ok := map[string]func(p *rm.Policy){
		"Native":  func(p *rm.Policy) { p.Backend = rm.BackendNative },
		"Default": func(p *rm.Policy) { p.Backend = "" },
		"Container": container(rm.ContainerSettings{Image: "ghcr.io/actions/actions-runner:2.330.0", CPUs: 1.5,
			Network: "bridge", Env: []string{"HTTP_PROXY", "CI_*"}, Volumes: []string{"/var/cache/go:/cache:ro", "npm:/npm"}}),
		"ContainerLocal": container(rm.ContainerSettings{Image: "localhost:5000/team/runner@sha256:" + strings.Repeat("a", 64)}),
		"VM":             vmPolicy(rm.VMSettings{Image: "/var/lib/runner-manager/images/debian"}),
		"VMForward":      vmPolicy(rm.VMSettings{Image: "/i", Forward: []string{"127.0.0.1:8080", "cache.lan:443"}}),
	}
	for name, edit := range ok {
		t.Run(name, func(t *testing.T) {
			p := validPolicy(t)
			edit(&p)
			require.NoError(t, p.ValidateWith(backend.All()))
		})
	}
}

// The backend's check takes its place among the policy's: a policy bad in
// both ways is refused for what comes first, as before the rules moved.
func TestValidateWithOrder(t *testing.T) {
	p := validPolicy(t)
	p.Backend, p.Max = "docker", 0
	require.ErrorContains(t, p.ValidateWith(backend.All()), `backend "docker" is not supported`)
	require.ErrorContains(t, p.Validate(), "max 0 must be at least 1", "Validate leaves backends to their kinds")
}

// container makes the policy a container policy with settings c.
func container(c rm.ContainerSettings) func(p *rm.Policy) {
	return func(p *rm.Policy) { p.Backend, p.Container = rm.BackendContainer, c }
}

// vmPolicy makes the policy a VM policy with settings v.
func vmPolicy(v rm.VMSettings) func(p *rm.Policy) {
	return func(p *rm.Policy) { p.Backend, p.VM = rm.BackendVM, v }
}
