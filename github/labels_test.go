package github_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/github"
)

func TestImplicitLabels(t *testing.T) {
	for _, tt := range []struct {
		goos, goarch string
		want         []string
	}{
		{"linux", "amd64", []string{"self-hosted", "Linux", "X64"}},
		{"darwin", "arm64", []string{"self-hosted", "macOS", "ARM64"}},
		{"windows", "386", []string{"self-hosted", "Windows", "X86"}},
		{"plan9", "mips", []string{"self-hosted"}},
	} {
		t.Run(tt.goos+"/"+tt.goarch, func(t *testing.T) {
			assert.Equal(t, tt.want, github.ImplicitLabels(tt.goos, tt.goarch))
		})
	}
	// A job asking only for implicit labels, in any case, matches any
	// runner of the OS/arch: what a "--labels self-hosted" policy serves.
	runner := append(github.ImplicitLabels("linux", "amd64"), "gpu")
	assert.True(t, github.MatchLabels([]string{"self-hosted", "linux", "x64"}, runner))
	assert.True(t, github.MatchLabels([]string{"LINUX"}, runner))
	assert.False(t, github.MatchLabels([]string{"self-hosted", "ARM64"}, runner))
}

func TestOnlyImplicit(t *testing.T) {
	for _, tt := range []struct {
		labels []string
		want   bool
	}{
		{[]string{"self-hosted"}, true},
		{[]string{"SELF-HOSTED", "linux", "x64"}, true},
		{[]string{"linux"}, true},
		{[]string{"self-hosted", "gpu"}, false},
		{[]string{"self-hosted", "ARM64"}, false},
		{nil, false},
	} {
		assert.Equal(t, tt.want, github.OnlyImplicit(tt.labels, "linux", "amd64"), "%v", tt.labels)
	}
}
