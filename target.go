package runnermanager

import (
	"regexp"
	"slices"
	"strings"
)

// ScopeKind says where runners register.
type ScopeKind int

// The scopes GitHub knows. The zero value is no scope.
const (
	ScopeRepository ScopeKind = iota + 1
	ScopeOrganization
	ScopeEnterprise
)

func (k ScopeKind) String() string {
	switch k {
	case ScopeRepository:
		return "repo"
	case ScopeOrganization:
		return "org"
	case ScopeEnterprise:
		return "enterprise"
	}
	return "none"
}

// Scope is a repository ("owner/repo"), an organization or an enterprise.
type Scope struct {
	Kind ScopeKind
	// Name is "owner/repo" for a repository, the login of an organization,
	// the slug of an enterprise.
	Name string
}

var (
	ownerName   = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	repoName    = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	labelChars  = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	scaleSetChr = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// Repository returns the scope of one repository, "owner/repo".
func Repository(ownerRepo string) (Scope, error) {
	owner, repo, ok := strings.Cut(ownerRepo, "/")
	if !ok || strings.Contains(repo, "/") {
		return Scope{}, invalidf("repository %q is not owner/repo (for example octo-org/app)", ownerRepo)
	}
	if !ownerName.MatchString(owner) {
		return Scope{}, invalidf("repository %q: owner %q must be 1-39 letters, digits or hyphens, not starting with a hyphen", ownerRepo, owner)
	}
	if !repoName.MatchString(repo) || repo == "." || repo == ".." {
		return Scope{}, invalidf("repository %q: name %q must be 1-100 letters, digits, '.', '-' or '_'", ownerRepo, repo)
	}
	return Scope{Kind: ScopeRepository, Name: ownerRepo}, nil
}

// Organization returns the scope of an organization.
func Organization(login string) (Scope, error) {
	if !ownerName.MatchString(login) {
		return Scope{}, invalidf("organization %q must be 1-39 letters, digits or hyphens, not starting with a hyphen", login)
	}
	return Scope{Kind: ScopeOrganization, Name: login}, nil
}

// Enterprise returns the scope of an enterprise, by its slug.
func Enterprise(slug string) (Scope, error) {
	if !ownerName.MatchString(slug) {
		return Scope{}, invalidf("enterprise %q must be a slug of letters, digits and hyphens", slug)
	}
	return Scope{Kind: ScopeEnterprise, Name: slug}, nil
}

// ParseScope parses the String form ("repo:owner/repo", "org:acme",
// "enterprise:acme").
func ParseScope(s string) (Scope, error) {
	kind, name, _ := strings.Cut(s, ":")
	switch kind {
	case "repo":
		return Repository(name)
	case "org":
		return Organization(name)
	case "enterprise":
		return Enterprise(name)
	}
	return Scope{}, invalidf("scope %q is not repo:OWNER/REPO, org:ORG or enterprise:SLUG", s)
}

// Validate checks a scope built by hand.
func (s Scope) Validate() error {
	_, err := ParseScope(s.String())
	return err
}

// String is "repo:owner/repo", "org:acme" or "enterprise:acme".
func (s Scope) String() string { return s.Kind.String() + ":" + s.Name }

// Path is the REST path prefix of the scope: "repos/owner/repo",
// "orgs/acme" or "enterprises/acme".
func (s Scope) Path() string {
	switch s.Kind {
	case ScopeRepository:
		return "repos/" + s.Name
	case ScopeOrganization:
		return "orgs/" + s.Name
	case ScopeEnterprise:
		return "enterprises/" + s.Name
	}
	return ""
}

// ConfigURL is the web URL runners are configured for, under webURL (for
// example https://github.com): webURL/owner/repo, webURL/org or
// webURL/enterprises/slug.
func (s Scope) ConfigURL(webURL string) string {
	webURL = strings.TrimRight(webURL, "/")
	if s.Kind == ScopeEnterprise {
		return webURL + "/enterprises/" + s.Name
	}
	return webURL + "/" + s.Name
}

// Mode says how a target learns demand and registers runners.
type Mode int

// Scale-set mode is the default; classic mode serves arbitrary label sets.
const (
	ModeScaleSet Mode = iota + 1
	ModeClassic
)

func (m Mode) String() string {
	switch m {
	case ModeScaleSet:
		return "scale-set"
	case ModeClassic:
		return "classic"
	}
	return "none"
}

// DefaultRunnerGroup is the runner group GitHub creates in every scope.
const DefaultRunnerGroup = "Default"

// ScaleTarget is where runners register and which jobs they serve: a scope,
// a runner group, and either a scale set name (scale-set mode) or a label set
// (classic mode). Policies with the same Key share one reconcile loop.
type ScaleTarget struct {
	Scope       Scope
	RunnerGroup string
	// ScaleSet is the scale set's name; it is also the label jobs use.
	ScaleSet string
	// Labels are the classic runner labels, sorted and without duplicates,
	// both without case (FoldLabels).
	Labels []string
}

// NewScaleSetTarget returns a scale-set mode target. An empty group is the
// default group.
func NewScaleSetTarget(scope Scope, group, scaleSet string) (ScaleTarget, error) {
	t := ScaleTarget{Scope: scope, RunnerGroup: group, ScaleSet: scaleSet}
	return t.normalized()
}

// NewLabelTarget returns a classic mode target for labels. An empty group is
// the default group.
func NewLabelTarget(scope Scope, group string, labels []string) (ScaleTarget, error) {
	t := ScaleTarget{Scope: scope, RunnerGroup: group, Labels: slices.Clone(labels)}
	return t.normalized()
}

func (t ScaleTarget) normalized() (ScaleTarget, error) {
	if t.RunnerGroup == "" {
		t.RunnerGroup = DefaultRunnerGroup
	}
	if len(t.Labels) > 0 {
		t.Labels = FoldLabels(t.Labels)
	}
	return t, t.Validate()
}

// FoldLabels returns labels trimmed, without duplicates by GitHub's rule
// that labels ignore case ("Linux,linux" is one label, kept as first
// spelled), then sorted. The official runner keeps its labels in a set that
// ignores case (actions/runner v2.316.1-395-g258d6c85,
// src/Runner.Listener/CommandSettings.cs:346,
// StringComparer.OrdinalIgnoreCase), and GitHub matches runs-on without
// case: its docs name the default labels "linux" and "x64" while the runner
// registers "Linux" and "X64" (src/Runner.Common/Util/VarUtil.cs:24,42).
func FoldLabels(labels []string) []string {
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		l = strings.TrimSpace(l)
		if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, l) }) {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// DuplicateLabels lists the labels of labels that FoldLabels drops: each a
// later spelling of a label given before (without case), in input order.
func DuplicateLabels(labels []string) []string {
	var seen, dups []string
	for _, l := range labels {
		l = strings.TrimSpace(l)
		if slices.ContainsFunc(seen, func(s string) bool { return strings.EqualFold(s, l) }) {
			dups = append(dups, l)
			continue
		}
		seen = append(seen, l)
	}
	return dups
}

// Validate checks the target: a valid scope, a runner group, and exactly one
// of a scale set name or a label set of labels GitHub accepts.
func (t ScaleTarget) Validate() error {
	if err := t.Scope.Validate(); err != nil {
		return err
	}
	if t.RunnerGroup == "" || len(t.RunnerGroup) > 100 {
		return invalidf("runner group %q must be 1-100 characters", t.RunnerGroup)
	}
	switch {
	case t.ScaleSet != "" && len(t.Labels) > 0:
		return invalidf("a target has either a scale set name or labels, not both")
	case t.ScaleSet != "":
		if len(t.ScaleSet) > 45 || !scaleSetChr.MatchString(t.ScaleSet) {
			return invalidf("scale set name %q must be 1-45 letters, digits, '.', '-' or '_'", t.ScaleSet)
		}
	case len(t.Labels) == 0:
		return invalidf("a target needs a scale set name or at least one label")
	default:
		if len(t.Labels) > 100 {
			return invalidf("%d labels: GitHub accepts at most 100", len(t.Labels))
		}
		for _, l := range t.Labels {
			if err := ValidateLabel(l); err != nil {
				return err
			}
		}
	}
	return nil
}

// ValidateLabel checks one runner label as GitHub would.
func ValidateLabel(l string) error {
	switch {
	case l == "":
		return invalidf("a label is empty")
	case len(l) > 100:
		return invalidf("label %q is longer than 100 characters", l)
	case !labelChars.MatchString(l):
		return invalidf("label %q may hold only letters, digits, '.', '-' and '_'", l)
	}
	return nil
}

// Mode is scale-set mode when the target names a scale set, else classic.
func (t ScaleTarget) Mode() Mode {
	if t.ScaleSet != "" {
		return ModeScaleSet
	}
	return ModeClassic
}

// String is stable and readable: "repo:octo/app group=Default scale-set=home"
// or "org:acme group=Default labels=gpu,linux".
func (t ScaleTarget) String() string {
	var b strings.Builder
	b.WriteString(t.Scope.String())
	b.WriteString(" group=")
	b.WriteString(t.RunnerGroup)
	if t.ScaleSet != "" {
		b.WriteString(" scale-set=")
		b.WriteString(t.ScaleSet)
	} else {
		b.WriteString(" labels=")
		b.WriteString(strings.Join(t.Labels, ","))
	}
	return b.String()
}

// Short is the target as logs name it, without spaces: a repository's
// "owner/repo", else "org:acme" or "enterprise:acme"; then "@group" unless
// the group is the default one; then "#scale-set" or "[label,label]":
// "octo/app#home", "org:acme@gpu[linux,cuda]".
func (t ScaleTarget) Short() string {
	var b strings.Builder
	if t.Scope.Kind == ScopeRepository {
		b.WriteString(t.Scope.Name)
	} else {
		b.WriteString(t.Scope.String())
	}
	if t.RunnerGroup != "" && t.RunnerGroup != DefaultRunnerGroup {
		b.WriteString("@" + t.RunnerGroup)
	}
	if t.ScaleSet != "" {
		b.WriteString("#" + t.ScaleSet)
	} else {
		b.WriteString("[" + strings.Join(t.Labels, ",") + "]")
	}
	return b.String()
}

// Key identifies the target for grouping policies into one loop. Labels
// compare without case, as GitHub matches them, folded again so that a
// label set stored before FoldLabels ignored case has the same key.
func (t ScaleTarget) Key() string {
	if len(t.Labels) > 0 {
		t.Labels = FoldLabels(strings.Split(strings.ToLower(strings.Join(t.Labels, ",")), ","))
	}
	return strings.ToLower(t.String())
}
