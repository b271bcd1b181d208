package github

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A release whose assets carry no digest gives its checksums in its notes.
func TestReleaseNoteSHA(t *testing.T) {
	body := "- actions-runner-linux-x64-2.330.0.tar.gz <!-- BEGIN SHA linux-x64 --> abc123 <!-- END SHA linux-x64 -->\n" +
		"- actions-runner-win-x64-2.330.0.zip <!-- BEGIN SHA win-x64 -->def456<!-- END SHA win-x64 -->\n"
	assert.Equal(t, "abc123", releaseNoteSHA(body, "linux-x64"))
	assert.Equal(t, "def456", releaseNoteSHA(body, "win-x64"))
	assert.Empty(t, releaseNoteSHA(body, "osx-arm64"))
	assert.Empty(t, releaseNoteSHA("<!-- BEGIN SHA linux-x64 -->abc", "linux-x64"), "no end marker")
}
