package fakegithub

import (
	"crypto/rsa"
	"fmt"
	"slices"
	"strconv"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// AddToken makes the fake accept token as a classic personal access token
// with every scope the manager needs (repo, admin:org,
// manage_runners:enterprise).
func (s *Server) AddToken(token string) {
	s.AddTokenWithScopes(token, ScopeRepo, ScopeAdminOrg, ScopeManageRunnersEnterprise)
}

// The OAuth scopes of a classic personal access token that the runner
// endpoints need, by where the runners register.
const (
	ScopeRepo                    = "repo"
	ScopeAdminOrg                = "admin:org"
	ScopeManageRunnersEnterprise = "manage_runners:enterprise"
)

// AddTokenWithScopes makes the fake accept token as a classic personal
// access token with only these scopes (sent back in X-OAuth-Scopes):
// repository endpoints need "repo", organization ones "admin:org",
// enterprise ones "manage_runners:enterprise"; without it they answer 403.
func (s *Server) AddTokenWithScopes(token string, scopes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = tokenInfo{scopes: slices.Clone(scopes), pat: true}
	s.ledger.note(CredPAT, token)
}

// RevokeToken makes the fake refuse token (401 Bad credentials), a personal
// access token or an installation token.
func (s *Server) RevokeToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, token)
}

// AddApp registers a GitHub App by its id and public key, installed as
// installationID: a JWT signed with its private key (issuer the app id or
// AppClientID) exchanges for an installation token that then works like a
// personal access token.
func (s *Server) AddApp(appID int64, key *rsa.PublicKey, installationID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.apps[appID]
	if a == nil {
		a = &app{id: appID, installations: map[int64]bool{}}
		s.apps[appID] = a
	}
	a.key = key
	a.installations[installationID] = true
}

// AppClientID is the client ID the fake gives app appID (either it or the
// app id works as a JWT issuer).
func AppClientID(appID int64) string { return "Iv1.fake" + strconv.FormatInt(appID, 10) }

// AddOrg adds an organization. It panics on a malformed login (a programming
// error).
func (s *Server) AddOrg(login string) {
	sc, err := rm.Organization(login)
	if err != nil {
		panic(fmt.Sprintf("fakegithub: %v", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addOrg(sc.Name)
}

func (s *Server) addOrg(login string) *org {
	o := s.orgs[strings.ToLower(login)]
	if o == nil {
		o = &org{login: login}
		s.orgs[strings.ToLower(login)] = o
	}
	return o
}

// AddRepo adds the repository "owner/repo" and its owner as an
// organization. It panics on a malformed name (a programming error).
func (s *Server) AddRepo(ownerRepo string) {
	sc, err := rm.Repository(ownerRepo)
	if err != nil {
		panic(fmt.Sprintf("fakegithub: %v", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addRepo(sc.Name)
}

func (s *Server) addRepo(fullName string) *repo {
	r := s.repos[strings.ToLower(fullName)]
	if r == nil {
		owner, _, _ := strings.Cut(fullName, "/")
		s.addOrg(owner)
		s.nextID++
		r = &repo{id: s.nextID, fullName: fullName}
		s.repos[strings.ToLower(fullName)] = r
	}
	return r
}

// AddEnterprise adds an enterprise holding orgs (added if new). It panics
// on a malformed name (a programming error).
func (s *Server) AddEnterprise(slug string, orgs ...string) {
	if _, err := rm.Enterprise(slug); err != nil {
		panic(fmt.Sprintf("fakegithub: %v", err))
	}
	for _, o := range orgs {
		if _, err := rm.Organization(o); err != nil {
			panic(fmt.Sprintf("fakegithub: %v", err))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enterprises[strings.ToLower(slug)] = slug
	for _, o := range orgs {
		s.addOrg(o).enterprise = slug
	}
}

// AddRunnerGroup adds a runner group to an organization or enterprise and
// returns its id (every scope also has "Default", id 1). It panics when the
// scope is unknown or a repository (a programming error).
func (s *Server) AddRunnerGroup(scope rm.Scope, name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if scope.Kind == rm.ScopeRepository || !s.scopeExists(scope) {
		panic(fmt.Sprintf("fakegithub: runner groups live in a known organization or enterprise, not %s", scope))
	}
	if g := s.groupByName(scope, name); g != nil {
		return g.id
	}
	s.nextID++
	g := &runnerGroup{id: s.nextID, name: name}
	k := scopeKey(scope)
	s.groups[k] = append(s.groups[k], g)
	return g.id
}
