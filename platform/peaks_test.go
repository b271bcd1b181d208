package platform_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/platform"
)

func TestLoadPeaksMissing(t *testing.T) {
	p, err := platform.LoadPeaks(filepath.Join(t.TempDir(), "state", "memory-peaks.toml"))
	require.NoError(t, err)
	assert.NotNil(t, p.Policies, "callers may add to the map")
	assert.Empty(t, p.Policies)
}

func TestSavePeaksRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "deeper", "memory-peaks.toml")
	want := platform.Peaks{Policies: map[string][]uint64{
		"0123456789abcdefghjkmnpqrs": {734003200, 1 << 40, 0, 1<<40 + 1},
		"zzzzzzzzzzzzzzzzzzzzzzzzzz": {math.MaxInt64},
		"odd key with spaces":        {1, 2, 3},
		"no peaks yet":               {},
	}}
	require.NoError(t, platform.SavePeaks(path, want))

	got, err := platform.LoadPeaks(path)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// Overwrite with less: the new file replaces the old one entirely.
	less := platform.Peaks{Policies: map[string][]uint64{"a": {5}}}
	require.NoError(t, platform.SavePeaks(path, less))
	got, err = platform.LoadPeaks(path)
	require.NoError(t, err)
	assert.Equal(t, less, got)

	// Nothing but the file is left beside it.
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "memory-peaks.toml", entries[0].Name())

	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		di, err := os.Stat(filepath.Dir(path))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	}
}

func TestSavePeaksEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory-peaks.toml")
	require.NoError(t, platform.SavePeaks(path, platform.Peaks{}))
	got, err := platform.LoadPeaks(path)
	require.NoError(t, err)
	assert.Empty(t, got.Policies)
}

func TestSavePeaksOutOfRange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory-peaks.toml")
	old := platform.Peaks{Policies: map[string][]uint64{"p": {1}}}
	require.NoError(t, platform.SavePeaks(path, old))

	err := platform.SavePeaks(path, platform.Peaks{Policies: map[string][]uint64{"p": {math.MaxInt64 + 1}}})
	require.ErrorContains(t, err, "exceeds")
	got, err := platform.LoadPeaks(path)
	require.NoError(t, err)
	assert.Equal(t, old, got, "a refused save leaves the file as it was")
}

// captureLog sends the default logger to a buffer for the test.
func captureLog(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &buf
}

func TestLoadPeaksCorrupt(t *testing.T) {
	tests := []struct {
		name string
		body string
		log  string // in the warning
	}{
		{name: "syntax", body: "[policies]\nabc = [1, 2\n", log: "line 2"},
		{name: "type", body: "[policies]\nabc = \"many\"\n", log: "line 2"},
		{name: "shape", body: "policies = 3\n", log: "not a table"},
		{name: "negative", body: "[policies]\nabc = [1, -5]\n", log: "negative"},
		{name: "overflow", body: "[policies]\nabc = [9223372036854775808]\n", log: "line 2"},
		{name: "binary", body: "\x00\x01\x02", log: "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := captureLog(t)
			dir := t.TempDir()
			path := filepath.Join(dir, "memory-peaks.toml")
			require.NoError(t, os.WriteFile(path, []byte(tt.body), 0o600))

			p, err := platform.LoadPeaks(path)
			require.NoError(t, err, "a corrupt file reads as empty")
			assert.NotNil(t, p.Policies)
			assert.Empty(t, p.Policies)

			assert.NoFileExists(t, path, "moved aside")
			aside, err := filepath.Glob(path + ".corrupt-*")
			require.NoError(t, err)
			require.Len(t, aside, 1)
			kept, err := os.ReadFile(aside[0])
			require.NoError(t, err)
			assert.Equal(t, tt.body, string(kept), "kept for inspection")

			assert.Contains(t, logs.String(), "level=WARN")
			assert.Contains(t, logs.String(), path)
			assert.Contains(t, logs.String(), tt.log)

			// The next save starts afresh.
			require.NoError(t, platform.SavePeaks(path, platform.Peaks{Policies: map[string][]uint64{"p": {7}}}))
			p, err = platform.LoadPeaks(path)
			require.NoError(t, err)
			assert.Equal(t, []uint64{7}, p.Policies["p"])
		})
	}
}

func TestLoadPeaksCorruptTwice(t *testing.T) {
	// Two corrupt files within one second keep two distinct copies.
	captureLog(t)
	path := filepath.Join(t.TempDir(), "memory-peaks.toml")
	for i := range 2 {
		require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, "bad %d =", i), 0o600))
		_, err := platform.LoadPeaks(path)
		require.NoError(t, err)
	}
	aside, err := filepath.Glob(path + ".corrupt-*")
	require.NoError(t, err)
	assert.Len(t, aside, 2)
}

func TestLoadPeaksUnreadable(t *testing.T) {
	// A path that cannot be read is an error, not corruption: nothing moves.
	path := filepath.Join(t.TempDir(), "memory-peaks.toml")
	require.NoError(t, os.Mkdir(path, 0o700))
	p, err := platform.LoadPeaks(path)
	require.Error(t, err)
	assert.NotNil(t, p.Policies)
	assert.DirExists(t, path)
}

func TestSavePeaksAtomic(t *testing.T) {
	// A reader racing the writer sees the old file or the new one, whole.
	logs := captureLog(t)
	path := filepath.Join(t.TempDir(), "memory-peaks.toml")
	a := platform.Peaks{Policies: map[string][]uint64{"a": {1, 2, 3}}}
	b := platform.Peaks{Policies: map[string][]uint64{}}
	for i := range 300 {
		b.Policies[fmt.Sprintf("policy-%03d", i)] = []uint64{uint64(i) << 30, 1 << 40}
	}
	require.NoError(t, platform.SavePeaks(path, a))

	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for i := range 40 {
			p := a
			if i%2 == 0 {
				p = b
			}
			if err := platform.SavePeaks(path, p); err != nil {
				t.Error(err)
				return
			}
		}
	})
	reads := 0
	for loop := true; loop; reads++ {
		select {
		case <-done:
			loop = false
		default:
		}
		got, err := platform.LoadPeaks(path)
		require.NoError(t, err)
		if len(got.Policies) != len(a.Policies) {
			require.Equal(t, b, got)
		} else {
			require.Equal(t, a, got)
		}
	}
	wg.Wait()
	assert.NotContains(t, logs.String(), "corrupt")
	t.Logf("%d reads during 40 saves", reads)
}
