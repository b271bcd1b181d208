package fakegithub

import (
	"slices"
	"sync"
)

// The kinds of credential the ledger records.
const (
	CredPAT               = "personal access token"
	CredAppJWT            = "app JWT"
	CredInstallationToken = "installation token"
	CredRegistrationToken = "registration token"
	CredRemoveToken       = "remove token"
	CredAdminToken        = "admin token"
	CredQueueToken        = "queue token"
	CredRunnerAssertion   = "runner client assertion"
	CredRunnerToken       = "runner access token"
	CredRunnerKey         = "runner key"
	CredJITConfig         = "JIT config"
)

// Credential is one secret the fake handed out or accepted, and its kind.
type Credential struct {
	Kind  string
	Value string
}

// ledger remembers every credential the fake mints or accepts, so a test
// can search what the manager wrote (logs, journal, files) for each of
// them. It has a lock of its own: it is written where s.mu is held.
type ledger struct {
	mu     sync.Mutex
	seen   map[string]bool
	byTime []Credential
}

// note records value as a credential of kind (once; empty values are not
// credentials).
func (l *ledger) note(kind, value string) {
	if value == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[value] {
		return
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[value] = true
	l.byTime = append(l.byTime, Credential{Kind: kind, Value: value})
}

// CredentialLedger returns every credential the fake has minted or
// accepted, oldest first: personal access tokens (WithToken, AddToken),
// App JWTs and runners' client assertions it accepted, installation,
// registration, remove, admin, message queue and runner access tokens, the
// runners' RSA private key (its
// private exponent, as .credentials_rsaparams holds it) and every encoded
// JIT configuration of either JIT route. A restart does not clear it.
func (s *Server) CredentialLedger() []Credential {
	s.ledger.mu.Lock()
	defer s.ledger.mu.Unlock()
	return slices.Clone(s.ledger.byTime)
}

// Credentials returns the values of CredentialLedger.
func (s *Server) Credentials() []string {
	l := s.CredentialLedger()
	out := make([]string, len(l))
	for i, c := range l {
		out[i] = c.Value
	}
	return out
}
