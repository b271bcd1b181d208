package runnerpkg_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/runnerpkg"
)

func TestPickDownload(t *testing.T) {
	list := []rm.RunnerDownload{
		{OS: "osx", Arch: "x64"}, {OS: "osx", Arch: "arm64"},
		{OS: "linux", Arch: "x64"}, {OS: "linux", Arch: "arm"}, {OS: "linux", Arch: "arm64"},
		{OS: "win", Arch: "x64"}, {OS: "win", Arch: "arm64"},
	}
	tests := []struct{ goos, goarch, os, arch string }{
		{"linux", "amd64", "linux", "x64"},
		{"linux", "arm64", "linux", "arm64"},
		{"linux", "arm", "linux", "arm"},
		{"darwin", "arm64", "osx", "arm64"},
		{"darwin", "amd64", "osx", "x64"},
		{"windows", "amd64", "win", "x64"},
		{"windows", "arm64", "win", "arm64"},
	}
	for _, tt := range tests {
		t.Run(tt.goos+"/"+tt.goarch, func(t *testing.T) {
			d, err := runnerpkg.PickDownload(list, tt.goos, tt.goarch)
			require.NoError(t, err)
			assert.Equal(t, tt.os, d.OS)
			assert.Equal(t, tt.arch, d.Arch)
		})
	}
	_, err := runnerpkg.PickDownload(list, "freebsd", "amd64")
	require.Error(t, err)
	_, err = runnerpkg.PickDownload(list, "windows", "arm")
	require.ErrorContains(t, err, "GitHub offers")
}
