package tui_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

func TestMainVersion(t *testing.T) {
	code, out, _ := runMain(t, "--version")
	assert.Equal(t, 0, code)
	assert.Equal(t, "runner-manager-tui "+rm.ReadBuild().String()+"\n", out)
	assert.True(t, strings.HasPrefix(out, "runner-manager-tui dev (go"), out)
}
