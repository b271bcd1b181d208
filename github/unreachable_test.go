package github_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/github"
)

// Unreachable finds a request GitHub never answered under any wrapping,
// and says why in a few words; other errors are not it.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+addr+"/", nil)
	require.NoError(t, err)
	_, refused := http.DefaultClient.Do(req)
	require.Error(t, refused)

	cause, ok := github.Unreachable(fmt.Errorf("delete scale set 7: failed: %w", refused))
	assert.True(t, ok)
	assert.Equal(t, "connection refused", cause)
	_, ok = github.Unreachable(errors.New("GitHub answered 500"))
	assert.False(t, ok)
}
