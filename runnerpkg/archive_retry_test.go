package runnerpkg_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/runnerpkg"
)

// cut is a scripted answer that sends half the archive and closes the
// connection.
const cut = -1

// TestInstallRunnerDownloadStatuses answers the runner package download
// with a script of statuses, then the archive with final: any 2xx is
// taken, and a cut body, 5xx, 408 or 429 is tried again up to 3 tries in
// all, as the runner's own self-update does; a 404 is not tried again.
func TestInstallRunnerDownloadStatuses(t *testing.T) {
	t.Parallel()
	good := tarball(t, runnerEntries...)
	for _, tc := range []struct {
		script []int
		final  int
		hits   int
		want   string // "" for success, else in the error
	}{
		{final: 200, hits: 1},
		{final: 203, hits: 1},
		{script: []int{500}, final: 200, hits: 2},
		{script: []int{502, 503}, final: 200, hits: 3},
		{script: []int{429}, final: 200, hits: 2},
		{script: []int{408}, final: 200, hits: 2},
		{script: []int{cut}, final: 200, hits: 2},
		{script: []int{cut, cut, cut}, final: 200, hits: 3, want: "after 3 tries"},
		{script: []int{503, 503, 503, 503}, final: 200, hits: 3, want: "server answered 503 Service Unavailable (after 3 tries)"},
		{script: []int{404}, final: 200, hits: 1, want: "server answered 404 Not Found"},
		{script: []int{403}, final: 200, hits: 1, want: "403"},
	} {
		name := strconv.Itoa(tc.final)
		for _, s := range tc.script {
			name = strconv.Itoa(s) + "," + name
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			script, hits := append([]int(nil), tc.script...), 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				hits++
				status := tc.final
				if len(script) > 0 {
					status, script = script[0], script[1:]
				}
				mu.Unlock()
				switch {
				case status == cut:
					w.Header().Set("Content-Length", strconv.Itoa(len(good)))
					_, _ = w.Write(good[:len(good)/2])
					w.(http.Flusher).Flush()
					conn, _, err := w.(http.Hijacker).Hijack()
					if err == nil {
						_ = conn.Close()
					}
				case status >= 300:
					http.Error(w, "no", status)
				default:
					w.WriteHeader(status)
					_, _ = w.Write(good)
				}
			}))
			t.Cleanup(srv.Close)
			parent := filepath.Join(t.TempDir(), "runners")
			dest := filepath.Join(parent, "2.330.0")
			err := runnerpkg.InstallArchive(t.Context(), srv.Client(), srv.URL+"/actions-runner.tar.gz", sum(good), dest, nil)
			mu.Lock()
			assert.Equal(t, tc.hits, hits, "downloads")
			mu.Unlock()
			if tc.want == "" {
				require.NoError(t, err)
				assert.FileExists(t, filepath.Join(dest, "bin", "Runner.Listener"))
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Empty(t, leftovers(t, parent), "nothing left behind")
		})
	}
}
