package fakegithub_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/actions/scaleset"
	"github.com/actions/scaleset/listener"
	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// TestCredentialLedger runs a classic flow, a scale-set flow and an App's
// token exchange through the fake, and finds each credential the clients
// were given (and the runners used) in its ledger, under its kind.
func TestCredentialLedger(t *testing.T) {
	t.Parallel()
	install := githubtest.BuildFakeRunner(t)
	s := newServer(t)
	ctx := ctxT(t, 60*time.Second)
	handedOut := map[string]string{token: fakegithub.CredPAT} // value: kind

	// Classic: registration and remove tokens, a JIT runner that runs a job.
	c := restClient(t, s, token)
	reg, _, err := c.Actions.CreateRegistrationToken(ctx, owner, name)
	require.NoError(t, err)
	handedOut[reg.GetToken()] = fakegithub.CredRegistrationToken
	rem, _, err := c.Actions.CreateRemoveToken(ctx, owner, name)
	require.NoError(t, err)
	handedOut[rem.GetToken()] = fakegithub.CredRemoveToken
	s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", "classic"}, Duration: 100 * time.Millisecond})
	jit, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, &gh.GenerateJITConfigRequest{
		Name: "rm-ledger-classic", RunnerGroupID: 1, Labels: []string{"self-hosted", "classic"},
	})
	require.NoError(t, err)
	handedOut[jit.GetEncodedJITConfig()] = fakegithub.CredJITConfig
	p := startRunner(t, runnerRoot(t, install), jit.GetEncodedJITConfig())
	require.NoError(t, s.WaitJobsCompleted(ctx))
	require.Equal(t, 0, p.exitCode(t, 10*time.Second), p.out.String())

	// Scale set: an admin token (through the registration route), a queue
	// token, a JIT runner through the Actions service that runs a job.
	client := scalesetClient(t, s, s.URL()+"/"+repo)
	ss, err := client.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{Name: "ledger", RunnerGroupID: 1})
	require.NoError(t, err)
	session, err := client.MessageSessionClient(ctx, ss.ID, "host-a")
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close(context.Background()) })
	s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"ledger"}, Duration: 100 * time.Millisecond})
	l, err := listener.New(session, listener.Config{ScaleSetID: ss.ID, MaxRunners: 1})
	require.NoError(t, err)
	sc := &scaler{t: t, client: client, install: install, scaleSetID: ss.ID}
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- l.Run(runCtx, sc) }()
	require.NoError(t, s.WaitJobsCompleted(ctx))
	stop()
	require.ErrorIs(t, <-errc, context.Canceled)

	// An App: its JWT is accepted, an installation token handed out.
	key, keyPEM := newAppKey(t)
	s.AddApp(7, &key.PublicKey, 77)
	tr, err := ghinstallation.New(http.DefaultTransport, 7, 77, keyPEM)
	require.NoError(t, err)
	tr.BaseURL = strings.TrimSuffix(s.APIURL(), "/")
	inst, err := tr.Token(ctx)
	require.NoError(t, err)
	handedOut[inst] = fakegithub.CredInstallationToken

	ledger := s.CredentialLedger()
	kinds := map[string]int{}
	byValue := map[string]string{}
	for _, cr := range ledger {
		require.NotEmpty(t, cr.Value)
		_, dup := byValue[cr.Value]
		require.False(t, dup, "a credential is recorded once (%s)", cr.Kind)
		byValue[cr.Value] = cr.Kind
		kinds[cr.Kind]++
	}
	for v, kind := range handedOut {
		assert.Equal(t, kind, byValue[v], "a %s handed out is in the ledger under its kind", kind)
	}
	for _, kind := range []string{
		fakegithub.CredPAT, fakegithub.CredAppJWT, fakegithub.CredInstallationToken, fakegithub.CredRegistrationToken,
		fakegithub.CredRemoveToken, fakegithub.CredAdminToken, fakegithub.CredQueueToken, fakegithub.CredRunnerAssertion,
		fakegithub.CredRunnerToken, fakegithub.CredRunnerKey, fakegithub.CredJITConfig,
	} {
		assert.NotZero(t, kinds[kind], "the ledger holds a %s", kind)
	}
	assert.Equal(t, 2, kinds[fakegithub.CredJITConfig], "one JIT config from each route")
	assert.GreaterOrEqual(t, kinds[fakegithub.CredRunnerToken], 2, "each runner got an access token")
	vals := s.Credentials()
	require.Len(t, vals, len(ledger))
	for i := range ledger {
		assert.Equal(t, ledger[i].Value, vals[i])
	}
}
