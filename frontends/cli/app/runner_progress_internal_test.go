package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Off a terminal a download prints a line at each quarter, however often
// it is told; on one, a line rewritten in place, ended once at 100 %.
func TestDownloadProgress(t *testing.T) {
	tell := func(p *downloadProgress, total int64, sized bool) {
		told := total
		if !sized {
			told = -1
		}
		for done := int64(0); done < total; done += 7 {
			p.tell(done, told)
		}
		p.tell(total, total)
	}
	t.Run("Log", func(t *testing.T) {
		var b bytes.Buffer
		tell(&downloadProgress{w: &b}, 200<<20, true)
		assert.Equal(t, "downloaded 50MiB of 200MiB (25 %)\ndownloaded 100MiB of 200MiB (50 %)\n"+
			"downloaded 150MiB of 200MiB (75 %)\ndownloaded 200MiB of 200MiB (100 %)\n", b.String())
	})
	t.Run("LogTriedAgain", func(t *testing.T) {
		var b bytes.Buffer
		p := &downloadProgress{w: &b}
		p.tell(0, 1000)
		p.tell(600, 1000)
		p.tell(0, 1000) // the first try was cut
		tell(p, 1000, true)
		assert.Equal(t, 1+4, strings.Count(b.String(), "\n"), b.String())
		assert.True(t, strings.HasSuffix(b.String(), "(100 %)\n"))
	})
	t.Run("LogSizeUnknown", func(t *testing.T) {
		var b bytes.Buffer
		tell(&downloadProgress{w: &b}, 3<<20, false)
		assert.Equal(t, "downloaded 3MiB of 3MiB (100 %)\n", b.String())
	})
	t.Run("Terminal", func(t *testing.T) {
		var b bytes.Buffer
		tell(&downloadProgress{w: &b, tty: true}, 2000, true)
		out := b.String()
		assert.Equal(t, 1, strings.Count(out, "\n"), "one line, rewritten")
		assert.True(t, strings.HasSuffix(out, "\rdownloaded 2KiB of 2KiB (100 %) \n"), "blanks what is left of a longer line: %q", out[len(out)-80:])
		assert.Contains(t, out, "\rdownloaded 994B of 2KiB (49 %)")
	})
}
