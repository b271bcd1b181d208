package runnerproto_test

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

func TestJITConfigRoundTrip(t *testing.T) {
	files := map[string][]byte{
		runnerproto.FileRunner:      []byte(`{"agentId":1}`),
		runnerproto.FileCredentials: []byte(`{"scheme":"OAuth"}`),
		runnerproto.FileRSAParams:   []byte(`{"d":"AQ=="}`),
	}
	got, err := runnerproto.DecodeJITConfig(runnerproto.EncodeJITConfig(files))
	require.NoError(t, err)
	assert.Equal(t, files, got)
}

func TestDecodeJITConfigErrors(t *testing.T) {
	secret := base64.StdEncoding.EncodeToString([]byte(`{".runner":"c2VjcmV0LXRva2Vu"}`))
	for _, tc := range []struct{ name, in string }{
		{"NotBase64", "not base64!"},
		{"NotJSON", base64.StdEncoding.EncodeToString([]byte("nope"))},
		{"FileNotBase64", base64.StdEncoding.EncodeToString([]byte(`{".runner":"!!"}`))},
		{"MissingFiles", secret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runnerproto.DecodeJITConfig(tc.in)
			require.ErrorIs(t, err, runnerproto.ErrBadJITConfig)
			assert.NotContains(t, err.Error(), tc.in)
			assert.NotContains(t, err.Error(), "secret-token")
		})
	}
}
