package datadir_test

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

	"github.com/runner-manager/runner-manager/datadir"
)

func TestLoadPeaksMissing(t *testing.T) {
	p, err := datadir.LoadPeaks(filepath.Join(t.TempDir(), "state", "memory-peaks.toml"))
	require.NoError(t, err)
	assert.NotNil(t, p.Policies, "callers may add to the map")
	assert.Empty(t, p.Policies)
}

func TestSavePeaksRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "deeper", "memory-peaks.toml")
	want := datadir.Peaks{Policies: map[string][]uint64{
		"0123456789abcdefghjkmnpqrs": {734003200, 1 << 40, 0, 1<<40 + 1},
		"zzzzzzzzzzzzzzzzzzzzzzzzzz": {math.MaxInt64},
		"odd key with spaces":        {1, 2, 3},
		"no peaks yet":               {},
	}}
	require.NoError(t, datadir.SavePeaks(path, want))

	got, err := datadir.LoadPeaks(path)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// Overwrite with less: the new file replaces the old one entirely.
	less := datadir.Peaks{Policies: map[string][]uint64{"a": {5}}}
	require.NoError(t, datadir.SavePeaks(path, less))
	got, err = datadir.LoadPeaks(path)
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
	require.NoError(t, datadir.SavePeaks(path, datadir.Peaks{}))
	got, err := datadir.LoadPeaks(path)
	require.NoError(t, err)
	assert.Empty(t, got.Policies)
}

func TestSavePeaksOutOfRange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory-peaks.toml")
	old := datadir.Peaks{Policies: map[string][]uint64{"p": {1}}}
	require.NoError(t, datadir.SavePeaks(path, old))

	err := datadir.SavePeaks(path, datadir.Peaks{Policies: map[string][]uint64{"p": {math.MaxInt64 + 1}}})
	require.ErrorContains(t, err, "exceeds")
	got, err := datadir.LoadPeaks(path)
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

			p, err := datadir.LoadPeaks(path)
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
			require.NoError(t, datadir.SavePeaks(path, datadir.Peaks{Policies: map[string][]uint64{"p": {7}}}))
			p, err = datadir.LoadPeaks(path)
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
		_, err := datadir.LoadPeaks(path)
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
	p, err := datadir.LoadPeaks(path)
	require.Error(t, err)
	assert.NotNil(t, p.Policies)
	assert.DirExists(t, path)
}

func TestSavePeaksAtomic(t *testing.T) {
	// A reader racing the writer sees the old file or the new one, whole.
	logs := captureLog(t)
	path := filepath.Join(t.TempDir(), "memory-peaks.toml")
	a := datadir.Peaks{Policies: map[string][]uint64{"a": {1, 2, 3}}}
	b := datadir.Peaks{Policies: map[string][]uint64{}}
	for i := range 300 {
		b.Policies[fmt.Sprintf("policy-%03d", i)] = []uint64{uint64(i) << 30, 1 << 40}
	}
	require.NoError(t, datadir.SavePeaks(path, a))

	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for i := range 40 {
			p := a
			if i%2 == 0 {
				p = b
			}
			if err := datadir.SavePeaks(path, p); err != nil {
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
		got, err := datadir.LoadPeaks(path)
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

// The file's bytes are a format users' data directories hold: what a
// manager writes today, one of an earlier version reads, and back.
func TestPeaksFileFormat(t *testing.T) {
	d := datadir.New(t.TempDir())
	const file = "# runner-manager: peak memory (bytes) of the newest completed jobs per\n" +
		"# policy, oldest first. Written by the manager; safe to delete.\n\n" +
		"[policies]\na = [1]\nb = [734003200, 812646400]\n\"c d\" = []\n"
	p := datadir.Peaks{Policies: map[string][]uint64{"b": {734003200, 812646400}, "a": {1}, "c d": {}}}
	require.NoError(t, datadir.SavePeaks(d.PeaksFile(), p))
	b, err := os.ReadFile(d.PeaksFile())
	require.NoError(t, err)
	assert.Equal(t, file, string(b))

	require.NoError(t, os.WriteFile(d.PeaksFile(), []byte(file), 0o600))
	got, err := datadir.LoadPeaks(d.PeaksFile())
	require.NoError(t, err)
	assert.Equal(t, p, got)
}
