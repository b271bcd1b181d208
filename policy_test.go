package runnermanager_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
)

func validPolicy(t *testing.T) rm.Policy {
	t.Helper()
	tg, err := rm.NewScaleSetTarget(mustRepo(t, "acme/repo"), "", "home")
	require.NoError(t, err)
	return rm.Policy{ID: rm.NewPolicyID(), Name: "home", Host: rm.NewHostID(), Target: tg, Max: 2}
}

func TestPolicyValidate(t *testing.T) {
	require.NoError(t, validPolicy(t).Validate())

	tests := map[string]struct {
		edit func(p *rm.Policy)
		want string
	}{
		"NoName":         {func(p *rm.Policy) { p.Name = "" }, `policy name "" must be 1-63 letters`},
		"NameSpace":      {func(p *rm.Policy) { p.Name = "my policy" }, `policy name "my policy"`},
		"NameHyphen":     {func(p *rm.Policy) { p.Name = "-home" }, "starting with a letter or digit"},
		"NameLong":       {func(p *rm.Policy) { p.Name = strings.Repeat("p", 64) }, "1-63"},
		"NoHost":         {func(p *rm.Policy) { p.Host = rm.HostID{} }, `policy "home" has no host`},
		"BadTarget":      {func(p *rm.Policy) { p.Target.Scope.Name = "acme" }, `invalid: policy "home": repository "acme" is not owner/repo`},
		"NoTarget":       {func(p *rm.Policy) { p.Target = rm.ScaleTarget{} }, `invalid: policy "home": scope "none:"`},
		"Backend":        {func(p *rm.Policy) { p.Backend = "docker" }, `backend "docker" is not supported (want "native", "container" or "vm")`},
		"VMNoImage":      {func(p *rm.Policy) { p.Backend = rm.BackendVM }, `backend "vm" needs an image`},
		"VMRelImage":     {vmPolicy(rm.VMSettings{Image: "images/runner"}), `VM image "images/runner": want a clean absolute path`},
		"NativeVMImage":  {func(p *rm.Policy) { p.VM.Image = "/images/runner" }, `VM settings (image "/images/runner") need backend "vm"`},
		"NativeVMFwd":    {func(p *rm.Policy) { p.VM.Forward = []string{"10.1.2.3:80"} }, `VM settings (forward "10.1.2.3:80") need backend "vm"`},
		"VMFwdNoPort":    {vmPolicy(rm.VMSettings{Image: "/i", Forward: []string{"cache.lan"}}), `VM forward "cache.lan": want host:port`},
		"VMFwdPort":      {vmPolicy(rm.VMSettings{Image: "/i", Forward: []string{"cache.lan:0"}}), `VM forward "cache.lan:0": port "0" is not 1-65535`},
		"VMFwdIPv6":      {vmPolicy(rm.VMSettings{Image: "/i", Forward: []string{"[::1]:80"}}), "IPv6 is not supported"},
		"VMFwdGuestNet":  {vmPolicy(rm.VMSettings{Image: "/i", Forward: []string{"10.0.2.2:80"}}), "10.0.2.0/24 is the guest's own network"},
		"VMFwdHost":      {vmPolicy(rm.VMSettings{Image: "/i", Forward: []string{"a_b:80"}}), `"a_b" is neither an IPv4 address nor a host name`},
		"VMContainer":    {func(p *rm.Policy) { vmPolicy(rm.VMSettings{Image: "/i"})(p); p.Container.Image = "runner" }, `need backend "container"`},
		"NoImage":        {func(p *rm.Policy) { p.Backend = rm.BackendContainer }, `backend "container" needs an image`},
		"BadImage":       {container(rm.ContainerSettings{Image: "Has Space"}), `image "Has Space" is not an image reference`},
		"CPUs":           {container(rm.ContainerSettings{Image: "runner", CPUs: -1}), "cpus -1: want 0 (no limit)"},
		"Network":        {container(rm.ContainerSettings{Image: "runner", Network: "a b"}), `network "a b"`},
		"Env":            {container(rm.ContainerSettings{Image: "runner", Env: []string{"A=B"}}), `environment name "A=B"`},
		"VolumeNoDst":    {container(rm.ContainerSettings{Image: "runner", Volumes: []string{"/cache"}}), `volume "/cache": want SRC:DST`},
		"VolumeRelDst":   {container(rm.ContainerSettings{Image: "runner", Volumes: []string{"cache:rel"}}), `target "rel"`},
		"VolumeMode":     {container(rm.ContainerSettings{Image: "runner", Volumes: []string{"/c:/c:rx"}}), `mode "rx"`},
		"NativeImage":    {func(p *rm.Policy) { p.Container.Image = "runner" }, `need backend "container"`},
		"MaxZero":        {func(p *rm.Policy) { p.Max = 0 }, "max 0 must be at least 1"},
		"MaxNegative":    {func(p *rm.Policy) { p.Max = -1 }, "max -1 must be at least 1"},
		"MinIdleBelow":   {func(p *rm.Policy) { p.MinIdle = -1 }, "min idle -1 must not be negative"},
		"MaxBelowIdle":   {func(p *rm.Policy) { p.Max, p.MinIdle = 2, 3 }, "max 2 is below min idle 3"},
		"MemoryLimitLow": {func(p *rm.Policy) { p.MemoryLimit = 64 << 20 }, "memory limit 67108864 bytes is below the least a runner needs"},
		"SpareBelow":     {func(p *rm.Policy) { p.Spare = rm.SpareAuto - 1 }, "spare -2 must be auto (-1: sized by the day) or between 0 (no warm spares) and 64"},
		"SpareAbove":     {func(p *rm.Policy) { p.Spare = rm.MaxSpare + 1 }, "spare 65 must be auto (-1: sized by the day) or between 0"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			p := validPolicy(t)
			tt.edit(&p)
			requireInvalid(t, p.Validate(), tt.want)
		})
	}

	ok := map[string]func(p *rm.Policy){
		"Native":       func(p *rm.Policy) { p.Backend = rm.BackendNative },
		"MaxEqualIdle": func(p *rm.Policy) { p.Max, p.MinIdle = 3, 3 },
		"Paused":       func(p *rm.Policy) { p.Paused = true },
		"Dots":         func(p *rm.Policy) { p.Name = "home.linux_x64-2" },
		"MemoryLimit":  func(p *rm.Policy) { p.MemoryLimit = rm.MinMemoryLimit },
		"LimitPeaks":   func(p *rm.Policy) { p.MemoryLimit = rm.MemoryLimitFromPeaks },
		"NoSpares":     func(p *rm.Policy) { p.Spare = 0 },
		"MaxSpares":    func(p *rm.Policy) { p.Spare = rm.MaxSpare },
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
			require.NoError(t, p.Validate())
		})
	}
}

// container makes the policy a container policy with settings c.
func container(c rm.ContainerSettings) func(p *rm.Policy) {
	return func(p *rm.Policy) { p.Backend, p.Container = rm.BackendContainer, c }
}

// vmPolicy makes the policy a VM policy with settings v.
func vmPolicy(v rm.VMSettings) func(p *rm.Policy) {
	return func(p *rm.Policy) { p.Backend, p.VM = rm.BackendVM, v }
}

func TestPolicyOwnerAndActive(t *testing.T) {
	p := validPolicy(t)
	assert.True(t, p.IsOwnedBy(p.Host))
	assert.False(t, p.IsOwnedBy(rm.NewHostID()))
	assert.True(t, p.Active())
	p.Paused = true
	assert.False(t, p.Active())

	var none rm.Policy
	assert.False(t, none.IsOwnedBy(rm.HostID{}), "the zero host owns nothing, even a policy without host")
}

func TestPolicySpares(t *testing.T) {
	scope, err := rm.Repository("acme/app")
	require.NoError(t, err)
	set, err := rm.NewScaleSetTarget(scope, "", "home")
	require.NoError(t, err)
	labels, err := rm.NewLabelTarget(scope, "", []string{"linux"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name       string
		target     rm.ScaleTarget
		max, spare int
		want       int
		auto       bool
	}{
		{"auto: twice max", set, 2, rm.SpareAuto, 4, true},
		{"auto: at most MaxAutoSpares", set, 10, rm.SpareAuto, rm.MaxAutoSpares, true},
		{"fixed", set, 10, 3, 3, false},
		{"none", set, 10, 0, 0, false},
		{"classic keeps none", labels, 10, rm.SpareAuto, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := rm.Policy{Target: tc.target, Max: tc.max, Spare: tc.spare}
			assert.Equal(t, tc.want, p.Spares())
			assert.Equal(t, tc.auto, p.SparesAuto())
		})
	}
	assert.Equal(t, rm.SpareAuto, rm.DefaultSpare, "front ends size spares by the day unless told")
}

// One memory-limit rule serves every backend: twice the expected peak, at
// least MinMemoryLimit, none when nothing is expected or twice it overflows.
func TestMemoryLimitFor(t *testing.T) {
	tests := map[string]struct {
		limit, expected, want uint64
	}{
		"None":            {0, 1 << 30, 0},
		"Fixed":           {3 << 30, 1 << 30, 3 << 30},
		"FixedIgnores":    {3 << 30, 0, 3 << 30},
		"FromPeaks":       {rm.MemoryLimitFromPeaks, 1 << 30, 2 << 30},
		"FromSmallPeaks":  {rm.MemoryLimitFromPeaks, 10 << 20, rm.MinMemoryLimit},
		"AtMinimum":       {rm.MemoryLimitFromPeaks, rm.MinMemoryLimit / 2, rm.MinMemoryLimit},
		"NothingExpected": {rm.MemoryLimitFromPeaks, 0, 0},
		"LargestDoubled":  {rm.MemoryLimitFromPeaks, 1<<63 - 1, 1<<64 - 2},
		"Overflow":        {rm.MemoryLimitFromPeaks, 1 << 63, 0},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, rm.Policy{MemoryLimit: tt.limit}.MemoryLimitFor(tt.expected))
			if tt.limit == rm.MemoryLimitFromPeaks {
				assert.Equal(t, tt.want, rm.PeakMemoryLimit(tt.expected))
			}
		})
	}
}
