package github_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCredentialRouteErrorsQuoteNoBody: a failed answer of a route that
// carries a credential (a JIT configuration, through actions/scaleset or
// go-github) is never quoted in the error, whatever its status, even a 200
// whose JSON is cut; another route's message still is. The answers here
// carry the PAT, which newFakeEnv also looks for in the log.
func TestCredentialRouteErrorsQuoteNoBody(t *testing.T) {
	t.Parallel()
	leak := `{"typeName":"SomeException","message":"here it is: ` + fakeToken + `","encodedJITConfig":"` + fakeToken + `"}`
	for _, tc := range []struct {
		name   string
		route  string
		fault  fakegithub.Fault
		call   func(context.Context, *testing.T, *fakeEnv) error
		quoted bool   // GitHub's message is in the error (not a credential route)
		want   string // in the error
	}{
		{name: "scale-set JIT 400", route: fakegithub.RouteScaleSetJITConfig, fault: fakegithub.Fault{Status: 400, Body: leak}, call: scaleSetJIT, want: "GitHub answered 400 Bad Request"},
		{name: "scale-set JIT 200 cut", route: fakegithub.RouteScaleSetJITConfig, fault: fakegithub.Fault{Status: 200, Body: leak[:len(leak)-3]}, call: scaleSetJIT, want: "GitHub answered 200 OK"},
		{name: "scale-set JIT 401", route: fakegithub.RouteScaleSetJITConfig, fault: fakegithub.Fault{Status: 401, Body: leak}, call: scaleSetJIT, want: "the token or app key is invalid"},
		{name: "classic JIT 422", route: fakegithub.RouteRepoJITConfig, fault: fakegithub.Fault{Status: 422, Body: leak}, call: classicJIT, want: "GitHub answered 422 Unprocessable Entity"},
		{name: "classic JIT 403", route: fakegithub.RouteRepoJITConfig, fault: fakegithub.Fault{Status: 403, Body: leak}, call: classicJIT, want: "the credentials lack"},
		{name: "remove runner 400 is quoted", route: fakegithub.RouteDeleteAgent, fault: fakegithub.Fault{Status: 400, Body: `{"typeName":"SomeException","message":"the service said no"}`},
			call: scaleSetRemove, quoted: true, want: "the service said no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := newFakeEnv(t, "PAT")
			ctx := waitCtx(t, 30*time.Second)
			env.fake.Fault(tc.route, tc.fault)
			err := tc.call(ctx, t, env)
			require.Error(t, err)
			text := fmt.Sprintf("%v %+v", err, err)
			assert.Contains(t, text, tc.want)
			env.noSecret(t, err)
			if !tc.quoted {
				assert.NotContains(t, text, "here it is", "GitHub's message of a credential route is not quoted")
			}
		})
	}
}

func scaleSetJIT(ctx context.Context, t *testing.T, env *fakeEnv) error {
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	_, err := st.JITConfig(ctx, prefix+"leak")
	return err
}

func scaleSetRemove(ctx context.Context, t *testing.T, env *fakeEnv) error {
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	return st.RemoveRunner(ctx, 12345)
}

func classicJIT(ctx context.Context, t *testing.T, env *fakeEnv) error {
	ct, err := github.NewClassicTarget(env.client, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{})
	require.NoError(t, err)
	_, err = ct.JITConfig(ctx, prefix+"leak")
	return err
}
