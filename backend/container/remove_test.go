package container_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
)

// removeEngine is an engine API that answers only container removals, each
// with the next of its replies: what Podman says of a container caught
// between its stop and its tidy-up.
type removeEngine struct {
	mu      sync.Mutex
	replies []int // status per call; the last repeats
	forced  []bool
}

const stateImproper = `{"cause":"container state improper","message":"cannot remove container 0a1b as it could not be stopped: given PID did not die within timeout: container state improper: stopped","response":500}`

func (e *removeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodDelete || !strings.Contains(r.URL.Path, "/containers/") {
		http.NotFound(w, r)
		return
	}
	e.mu.Lock()
	status := e.replies[min(len(e.forced), len(e.replies)-1)]
	e.forced = append(e.forced, r.URL.Query().Get("force") == "1")
	e.mu.Unlock()
	switch status {
	case http.StatusNoContent:
		w.WriteHeader(status)
	case http.StatusInternalServerError:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(stateImproper))
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"message":"boom"}`))
	}
}

func TestCleanupOfAContainerStoppedMidCleanup(t *testing.T) {
	tests := []struct {
		name       string
		replies    []int
		wantErr    bool
		wantForced []bool
	}{
		{name: "OK", replies: []int{204}, wantForced: []bool{true}},
		{name: "StateImproperThenRemoved", replies: []int{500, 500, 204}, wantForced: []bool{true, false, false}},
		{name: "OtherErrorNotRetried", replies: []int{409}, wantErr: true, wantForced: []bool{true}},
		{name: "StateImproperForever", replies: []int{500}, wantErr: true, wantForced: []bool{true, false, false, false, false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng := &removeEngine{replies: tc.replies}
			srv := httptest.NewServer(eng)
			defer srv.Close()
			e, err := container.Connect("tcp://" + strings.TrimPrefix(srv.URL, "http://"))
			require.NoError(t, err)
			l, err := container.NewLauncher(e, rm.NewHostID(), container.Settings{Image: "example/runner:1"})
			require.NoError(t, err)
			defer l.Close()
			err = l.Cleanup(rm.NewAttemptID(), false)
			if tc.wantErr {
				assert.Error(t, err)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.wantForced, eng.forced, "forced or plain remove, per call")
		})
	}
}
