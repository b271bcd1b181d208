package runnerpkg_test

import (
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/runnerpkg"
)

// A download of some MiB is told from 0 to its whole size, in order, once
// per whole percent at most (not for every read), whether the server says
// its size or not.
func TestInstallRunnerProgress(t *testing.T) {
	t.Parallel()
	noise := make([]byte, 3<<20) // random: the gzip stays as big
	_, _ = rand.Read(noise)
	archive := tarball(t, append(append([]entry(nil), runnerEntries...), entry{name: "./externals/blob", body: string(noise), mode: 0o644})...)
	size := int64(len(archive))
	for _, tc := range []struct {
		name  string
		sized bool
	}{{"Sized", true}, {"Chunked", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.sized {
					w.Header().Set("Content-Length", strconv.Itoa(len(archive)))
				} else {
					w.(http.Flusher).Flush() // headers out before the body: no Content-Length
				}
				_, _ = w.Write(archive)
			}))
			t.Cleanup(srv.Close)
			type call struct{ done, total int64 }
			var calls []call
			dest := filepath.Join(t.TempDir(), "2.321.0")
			require.NoError(t, runnerpkg.InstallArchive(t.Context(), srv.Client(), srv.URL+"/r.tar.gz", sum(archive), dest,
				func(done, total int64) { calls = append(calls, call{done, total}) }))

			t.Logf("a download of %d bytes told %d times", size, len(calls))
			require.GreaterOrEqual(t, len(calls), 3, "told more than the start and the end")
			want := int64(-1)
			if tc.sized {
				want = size
				assert.LessOrEqual(t, len(calls), 102, "at most once per percent, with the start and the end")
			} else {
				assert.LessOrEqual(t, len(calls), int(size>>20)+2, "at most once per MiB, with the start and the end")
			}
			assert.Equal(t, call{0, want}, calls[0], "told at the start")
			assert.Equal(t, call{size, size}, calls[len(calls)-1], "the end: 100 %")
			for i := 1; i < len(calls)-1; i++ {
				assert.Greater(t, calls[i].done, calls[i-1].done, "in order")
				assert.Less(t, calls[i].done, size, "the end told once")
				assert.Equal(t, want, calls[i].total)
			}
		})
	}
}
