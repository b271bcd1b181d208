package runnermanager_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
)

// badInput is a refused input and words the message must contain.
type badInput struct {
	in   string
	want string
}

func requireInvalid(t *testing.T, err error, want string) {
	t.Helper()
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), want)
	assert.Equal(t, 1, strings.Count(err.Error(), "invalid"), "one %q prefix: %s", "invalid", err)
}

func TestRepository(t *testing.T) {
	for _, ok := range []string{"acme/repo", "octo-org/app.js", "a/b", "A1/x_y-z.2", strings.Repeat("o", 39) + "/" + strings.Repeat("r", 100)} {
		s, err := rm.Repository(ok)
		require.NoError(t, err, ok)
		assert.Equal(t, rm.Scope{Kind: rm.ScopeRepository, Name: ok}, s)
	}
	bad := map[string]badInput{
		"Empty":          {"", "is not owner/repo (for example octo-org/app)"},
		"NoSlash":        {"acme", "is not owner/repo"},
		"TwoSlashes":     {"acme/repo/x", "is not owner/repo"},
		"NoOwner":        {"/repo", `owner "" must be 1-39`},
		"NoName":         {"acme/", `name "" must be 1-100`},
		"OwnerHyphen":    {"-acme/repo", "not starting with a hyphen"},
		"OwnerTooLong":   {strings.Repeat("o", 40) + "/repo", "1-39"},
		"OwnerUnderline": {"ac_me/repo", "letters, digits or hyphens"},
		"NameSpace":      {"acme/my repo", `name "my repo"`},
		"NameTooLong":    {"acme/" + strings.Repeat("r", 101), "1-100"},
		"Dot":            {"acme/.", `name "."`},
		"DotDot":         {"acme/..", `name ".."`},
		"URL":            {"https://github.com/acme/repo", "is not owner/repo"},
	}
	for name, tt := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := rm.Repository(tt.in)
			requireInvalid(t, err, tt.want)
			assert.Contains(t, err.Error(), fmt.Sprintf("%q", tt.in), "the message quotes the input")
		})
	}
}

func TestOrganizationEnterprise(t *testing.T) {
	s, err := rm.Organization("acme")
	require.NoError(t, err)
	assert.Equal(t, rm.Scope{Kind: rm.ScopeOrganization, Name: "acme"}, s)
	s, err = rm.Enterprise("big-co")
	require.NoError(t, err)
	assert.Equal(t, rm.Scope{Kind: rm.ScopeEnterprise, Name: "big-co"}, s)

	for name, in := range map[string]string{"Empty": "", "Slash": "acme/repo", "Hyphen": "-acme", "Long": strings.Repeat("a", 40), "Space": "ac me"} {
		t.Run(name, func(t *testing.T) {
			_, err := rm.Organization(in)
			requireInvalid(t, err, "organization")
			_, err = rm.Enterprise(in)
			requireInvalid(t, err, "enterprise")
		})
	}
}

func TestParseScope(t *testing.T) {
	good := map[string]rm.Scope{
		"repo:acme/repo":  {Kind: rm.ScopeRepository, Name: "acme/repo"},
		"org:acme":        {Kind: rm.ScopeOrganization, Name: "acme"},
		"enterprise:acme": {Kind: rm.ScopeEnterprise, Name: "acme"},
	}
	for in, want := range good {
		got, err := rm.ParseScope(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
		assert.Equal(t, in, got.String(), "String and ParseScope round-trip")
		require.NoError(t, got.Validate())
	}
	bad := map[string]badInput{
		"Empty":       {"", "is not repo:OWNER/REPO, org:ORG or enterprise:SLUG"},
		"NoKind":      {"acme/repo", "is not repo:OWNER/REPO"},
		"UnknownKind": {"user:acme", "is not repo:OWNER/REPO"},
		"BadRepo":     {"repo:acme", "is not owner/repo"},
		"BadOrg":      {"org:acme/repo", "organization"},
		"NoName":      {"org:", "organization"},
	}
	for name, tt := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := rm.ParseScope(tt.in)
			requireInvalid(t, err, tt.want)
		})
	}
	requireInvalid(t, rm.Scope{}.Validate(), "none:")
	requireInvalid(t, rm.Scope{Kind: rm.ScopeRepository, Name: "x"}.Validate(), "owner/repo")
}

func TestScopePaths(t *testing.T) {
	tests := []struct {
		scope      rm.Scope
		path, conf string
	}{
		{rm.Scope{Kind: rm.ScopeRepository, Name: "acme/repo"}, "repos/acme/repo", "https://github.com/acme/repo"},
		{rm.Scope{Kind: rm.ScopeOrganization, Name: "acme"}, "orgs/acme", "https://github.com/acme"},
		{rm.Scope{Kind: rm.ScopeEnterprise, Name: "big"}, "enterprises/big", "https://github.com/enterprises/big"},
		{rm.Scope{}, "", "https://github.com/"},
	}
	for _, tt := range tests {
		t.Run(tt.scope.Kind.String(), func(t *testing.T) {
			assert.Equal(t, tt.path, tt.scope.Path())
			assert.Equal(t, tt.conf, tt.scope.ConfigURL("https://github.com/"), "a trailing slash is dropped")
		})
	}
}

func mustRepo(t *testing.T, s string) rm.Scope {
	t.Helper()
	sc, err := rm.Repository(s)
	require.NoError(t, err)
	return sc
}

func TestNewScaleSetTarget(t *testing.T) {
	repo := mustRepo(t, "acme/repo")
	got, err := rm.NewScaleSetTarget(repo, "", "home")
	require.NoError(t, err)
	assert.Equal(t, rm.ScaleTarget{Scope: repo, RunnerGroup: rm.DefaultRunnerGroup, ScaleSet: "home"}, got, "an empty group is the default group")
	assert.Equal(t, rm.ModeScaleSet, got.Mode())

	bad := map[string]struct {
		scope       rm.Scope
		group, name string
		want        string
	}{
		"NoScaleSet":    {repo, "", "", "needs a scale set name or at least one label"},
		"ScaleSetSpace": {repo, "", "my set", `scale set name "my set"`},
		"ScaleSetLong":  {repo, "", strings.Repeat("s", 46), "1-45"},
		"ScaleSetComma": {repo, "", "a,b", "letters, digits"},
		"GroupLong":     {repo, strings.Repeat("g", 101), "home", "runner group"},
		"NoScope":       {rm.Scope{}, "", "home", "scope"},
	}
	for name, tt := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := rm.NewScaleSetTarget(tt.scope, tt.group, tt.name)
			requireInvalid(t, err, tt.want)
		})
	}
}

func TestNewLabelTarget(t *testing.T) {
	org, err := rm.Organization("acme")
	require.NoError(t, err)
	got, err := rm.NewLabelTarget(org, "gpu-group", []string{" linux", "gpu", "linux", "x64 "})
	require.NoError(t, err)
	assert.Equal(t, []string{"gpu", "linux", "x64"}, got.Labels, "trimmed, sorted, without duplicates")
	assert.Equal(t, "gpu-group", got.RunnerGroup)
	assert.Equal(t, rm.ModeClassic, got.Mode())

	for name, tt := range map[string]struct{ in, want, dups []string }{
		"CaseOnce":     {[]string{"Linux", "linux"}, []string{"Linux"}, []string{"linux"}},
		"FirstSpelled": {[]string{"gpu", "LINUX", "Linux", "linux"}, []string{"LINUX", "gpu"}, []string{"Linux", "linux"}},
		"Trimmed":      {[]string{"x64", " X64 "}, []string{"x64"}, []string{"X64"}},
		"Distinct":     {[]string{"b", "a"}, []string{"a", "b"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := rm.NewLabelTarget(org, "", tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Labels, "one label without case, as first spelled")
			assert.Equal(t, tt.dups, rm.DuplicateLabels(tt.in))
		})
	}

	in := []string{"b", "a"}
	_, err = rm.NewLabelTarget(org, "", in)
	require.NoError(t, err)
	assert.Equal(t, []string{"b", "a"}, in, "the caller's slice is not sorted in place")

	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("l%d", i)
	}
	bad := map[string]struct {
		labels []string
		want   string
	}{
		"None":    {nil, "needs a scale set name or at least one label"},
		"Empty":   {[]string{"linux", ""}, "a label is empty"},
		"Blank":   {[]string{"  "}, "a label is empty"},
		"Space":   {[]string{"my label"}, `label "my label" may hold only letters, digits, '.', '-' and '_'`},
		"Comma":   {[]string{"a,b"}, `label "a,b"`},
		"Long":    {[]string{strings.Repeat("l", 101)}, "longer than 100"},
		"TooMany": {many, "101 labels: GitHub accepts at most 100"},
		"Unicode": {[]string{"линукс"}, "may hold only"},
		"Colon":   {[]string{"os:linux"}, "may hold only"},
	}
	for name, tt := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := rm.NewLabelTarget(org, "", tt.labels)
			requireInvalid(t, err, tt.want)
		})
	}
}

func TestTargetValidateBoth(t *testing.T) {
	tg := rm.ScaleTarget{Scope: mustRepo(t, "acme/repo"), RunnerGroup: "Default", ScaleSet: "home", Labels: []string{"linux"}}
	requireInvalid(t, tg.Validate(), "either a scale set name or labels, not both")
	tg.RunnerGroup = ""
	requireInvalid(t, tg.Validate(), "runner group")
}

func TestTargetStringKey(t *testing.T) {
	repo := mustRepo(t, "Acme/Repo")
	org, err := rm.Organization("acme")
	require.NoError(t, err)
	ss, err := rm.NewScaleSetTarget(repo, "", "Home")
	require.NoError(t, err)
	lt, err := rm.NewLabelTarget(org, "Builders", []string{"Linux", "gpu"})
	require.NoError(t, err)
	tests := []struct {
		name     string
		target   rm.ScaleTarget
		str, key string
		short    string
	}{
		{"ScaleSet", ss, "repo:Acme/Repo group=Default scale-set=Home", "repo:acme/repo group=default scale-set=home", "Acme/Repo#Home"},
		{"Labels", lt, "org:acme group=Builders labels=Linux,gpu", "org:acme group=builders labels=gpu,linux", "org:acme@Builders[Linux,gpu]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.str, tt.target.String())
			assert.Equal(t, tt.key, tt.target.Key())
			assert.Equal(t, tt.short, tt.target.Short(), "as logs name it")
		})
	}

	// The same target built twice, labels in another order, has one key:
	// its policies share one loop.
	a, err := rm.NewLabelTarget(org, "", []string{"x64", "linux", "gpu"})
	require.NoError(t, err)
	b, err := rm.NewLabelTarget(org, "", []string{"gpu", "x64", "linux", "gpu"})
	require.NoError(t, err)
	assert.Equal(t, a.Key(), b.Key())
	assert.Equal(t, a.String(), b.String())

	// Labels ignore case: a label set spelled otherwise, or one stored
	// before labels were folded without case, is the same loop.
	folded, err := rm.NewLabelTarget(org, "", []string{"X64", "Linux", "GPU"})
	require.NoError(t, err)
	assert.Equal(t, a.Key(), folded.Key())
	stored := rm.ScaleTarget{Scope: org, RunnerGroup: "Default", Labels: []string{"Linux", "gpu", "linux", "x64"}}
	assert.Equal(t, a.Key(), stored.Key())

	c, err := rm.NewLabelTarget(org, "", []string{"gpu", "linux"})
	require.NoError(t, err)
	assert.NotEqual(t, a.Key(), c.Key(), "another label set is another loop")
	d, err := rm.NewScaleSetTarget(org, "", "gpu")
	require.NoError(t, err)
	assert.NotEqual(t, d.Key(), c.Key(), "a scale set named like a label is another target")
}

func TestModeStrings(t *testing.T) {
	assert.Equal(t, "scale-set", rm.ModeScaleSet.String())
	assert.Equal(t, "classic", rm.ModeClassic.String())
	assert.Equal(t, "none", rm.Mode(0).String())
	assert.Equal(t, "repo", rm.ScopeRepository.String())
	assert.Equal(t, "none", rm.ScopeKind(0).String())
}
