package vm_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/backend/vm"
)

func jitOf(t testing.TB, files map[string]any) string {
	t.Helper()
	m := map[string]string{}
	for name, v := range files {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		m[name] = base64.StdEncoding.EncodeToString(b)
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(b)
}

func TestRunnerServices(t *testing.T) {
	jit := jitOf(t, map[string]any{
		".runner": map[string]any{
			"serverUrl":   "https://pipelinesghubeus6.actions.githubusercontent.com/Q1w2e3/",
			"serverUrlV2": "https://broker.actions.githubusercontent.com/",
			"gitHubUrl":   "https://github.com/octo-org/app",
		},
		".credentials": map[string]any{"scheme": "OAuth", "data": map[string]any{
			"authorizationUrl": "https://vstoken.actions.githubusercontent.com/_apis/oauth2/token/abc"}},
		".credentials_rsaparams": map[string]any{},
	})
	require.Equal(t, []string{
		"pipelinesghubeus6.actions.githubusercontent.com:443",
		"broker.actions.githubusercontent.com:443",
		"github.com:443",
		"vstoken.actions.githubusercontent.com:443",
	}, vm.RunnerServices(jit))

	ghes := jitOf(t, map[string]any{".runner": map[string]any{"serverUrl": "http://ghes.corp:8080/_services/pipelines", "gitHubUrl": "ftp://x"}})
	require.Equal(t, []string{"ghes.corp:8080"}, vm.RunnerServices(ghes))
	require.Nil(t, vm.RunnerServices("not base64!"))
}
