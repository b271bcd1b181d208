package fakegithub

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/google/uuid"
	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

var (
	runnerKeyOnce sync.Once
	runnerKeyVal  *rsa.PrivateKey
)

// runnerKey is the RSA key of every runner's credentials, made once per
// process (a 2048-bit key per runner would cost a tenth of a second each).
func runnerKey() *rsa.PrivateKey {
	runnerKeyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(fmt.Sprintf("fakegithub: generating the runner key: %v", err))
		}
		runnerKeyVal = k
	})
	return runnerKeyVal
}

// verifyAppJWT checks a GitHub App JWT (RS256, issuer the app id or its
// client id, not expired) and returns the app id. s.mu is held.
func (s *Server) verifyAppJWT(r *http.Request) (int64, error) {
	tok := bearer(r, "Bearer")
	var appID int64
	claims := &jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(tok, claims, func(t *jwt.Token) (any, error) {
		if t.Method.Alg() != jwt.SigningMethodRS256.Alg() {
			return nil, errors.New("an app JWT is signed with RS256")
		}
		iss := strings.TrimPrefix(claims.Issuer, "Iv1.fake")
		id, err := strconv.ParseInt(iss, 10, 64)
		if err != nil || s.apps[id] == nil {
			return nil, errors.New("unknown app")
		}
		appID = id
		return s.apps[id].key, nil
	})
	if err != nil {
		return 0, err
	}
	if claims.ExpiresAt == nil || claims.ExpiresAt.Sub(time.Now()) > 10*time.Minute+time.Minute {
		return 0, errors.New("an app JWT expires within 10 minutes")
	}
	s.ledger.note(CredAppJWT, tok)
	return appID, nil
}

type adminClaims struct {
	Scope string `json:"scope"`
	jwt.RegisteredClaims
}

// adminToken signs the Actions service token for scope.
func (s *Server) adminToken(sc rm.Scope) (string, error) {
	now := s.now()
	claims := adminClaims{Scope: sc.String(), RegisteredClaims: jwt.RegisteredClaims{
		Issuer:    "fakegithub",
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(s.cfg.adminTokenLifetime)),
		ID:        uuid.NewString(),
	}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.adminKey)
}

func (s *Server) verifyAdminToken(tok string) (rm.Scope, error) {
	claims := &adminClaims{}
	_, err := jwt.ParseWithClaims(tok, claims, func(t *jwt.Token) (any, error) {
		if t.Method.Alg() != jwt.SigningMethodHS256.Alg() {
			return nil, errors.New("not ours")
		}
		return s.adminKey, nil
	}, jwt.WithoutClaimsValidation()) // checked on the fake's clock below
	if err != nil {
		return rm.Scope{}, err
	}
	if claims.ExpiresAt == nil || !s.now().Before(claims.ExpiresAt.Time) {
		return rm.Scope{}, errors.New("expired")
	}
	return rm.ParseScope(claims.Scope)
}

// newRunner registers a JIT runner and returns it with its encoded
// configuration. s.mu is held.
func (s *Server) newRunner(sc rm.Scope, name string, groupID int64, labels []string, scaleSetID int, workFolder string) (*runner, string) {
	s.nextID++
	r := &runner{
		id: s.nextID, name: name, scope: sc, groupID: groupID, labels: slices.Clone(labels),
		scaleSet: scaleSetID, ephemeral: true, createdAt: s.now(), clientID: uuid.NewString(),
	}
	s.runners[r.id] = r
	s.runnerByClient[r.clientID] = r.id
	if workFolder == "" {
		workFolder = "_work"
	}
	pool, poolName := groupID, rm.DefaultRunnerGroup
	if g := s.groupByID(sc, groupID); g != nil {
		poolName = g.name
	}
	if scaleSetID != 0 {
		pool, poolName = int64(scaleSetID), s.scaleSets[scaleSetID].name
	}
	runnerFile, _ := json.Marshal(runnerproto.RunnerFile{
		AgentID: r.id, AgentName: name, PoolID: pool, PoolName: poolName, Ephemeral: true, DisableUpd: true,
		ServerURL: s.actionsURL(), GitHubURL: sc.ConfigURL(s.URL()), WorkFolder: workFolder,
		FakeBootDelayMS: s.cfg.bootDelay.Milliseconds(),
	})
	creds, _ := json.Marshal(runnerproto.Credentials{Scheme: "OAuth", Data: runnerproto.CredentialsData{
		ClientID: r.clientID, AuthorizationURL: s.actionsURL() + "_apis/oauth2/token", RequireFipsCryptography: "True",
	}})
	k := s.runnerKey
	b64 := func(i *big.Int) string { return base64.StdEncoding.EncodeToString(i.Bytes()) }
	s.ledger.note(CredRunnerKey, b64(k.D))
	params, _ := json.Marshal(runnerproto.RSAParams{
		D: b64(k.D), DP: b64(k.Precomputed.Dp), DQ: b64(k.Precomputed.Dq), Exponent: b64(big.NewInt(int64(k.E))),
		InverseQ: b64(k.Precomputed.Qinv), Modulus: b64(k.N), P: b64(k.Primes[0]), Q: b64(k.Primes[1]),
	})
	return r, runnerproto.EncodeJITConfig(map[string][]byte{
		runnerproto.FileRunner: runnerFile, runnerproto.FileCredentials: creds, runnerproto.FileRSAParams: params,
	})
}

// installationTurn alternates the installation token's form across every
// fake of the process (InstallationTokensBoth).
var installationTurn atomic.Uint64

// installationClaims are what GitHub's stateless installation token tells
// about itself: the app, the installation, when it expires. A client must
// not read them; the fake never does either (it looks tokens up whole).
type installationClaims struct {
	App          int64 `json:"app_id"`
	Installation int64 `json:"installation_id"`
	jwt.RegisteredClaims
}

// installationToken mints an installation token for app's installation in
// the form the options and the request's X-GitHub-Stateless-S2S-Token
// header ask: ghs_ + 36 hex characters, or GitHub's stateless form of
// 2026, ghs_APPID_JWT (about 520 characters: an RS256 JWT). s.mu is held.
func (s *Server) installationToken(r *http.Request, app, installation int64, exp time.Time) (string, error) {
	stateless := false
	switch s.cfg.installationTokens {
	case InstallationTokensStateless:
		stateless = true
	case InstallationTokensBoth:
		stateless = installationTurn.Add(1)%2 == 1
	}
	switch r.Header.Get("X-GitHub-Stateless-S2S-Token") { // other values are ignored, as on GitHub
	case "enabled":
		stateless = true
	case "disabled":
		stateless = false
	}
	if !stateless {
		return randomToken("ghs_"), nil
	}
	now := s.now()
	claims := installationClaims{App: app, Installation: installation, RegisteredClaims: jwt.RegisteredClaims{
		Issuer: "fakegithub", Subject: "installation", IssuedAt: jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp), ID: uuid.NewString(),
	}}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(s.runnerKey)
	if err != nil {
		return "", err
	}
	return "ghs_" + strconv.FormatInt(app, 10) + "_" + signed, nil
}
