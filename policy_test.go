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
		"MaxEqualIdle": func(p *rm.Policy) { p.Max, p.MinIdle = 3, 3 },
		"Paused":       func(p *rm.Policy) { p.Paused = true },
		"Dots":         func(p *rm.Policy) { p.Name = "home.linux_x64-2" },
		"MemoryLimit":  func(p *rm.Policy) { p.MemoryLimit = rm.MinMemoryLimit },
		"LimitPeaks":   func(p *rm.Policy) { p.MemoryLimit = rm.MemoryLimitFromPeaks },
		"NoSpares":     func(p *rm.Policy) { p.Spare = 0 },
		"MaxSpares":    func(p *rm.Policy) { p.Spare = rm.MaxSpare },
	}
	for name, edit := range ok {
		t.Run(name, func(t *testing.T) {
			p := validPolicy(t)
			edit(&p)
			require.NoError(t, p.Validate())
		})
	}
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
