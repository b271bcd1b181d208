//go:build unix

package warm

import (
	"io/fs"
	"syscall"
)

// allocated is what a file takes on disk: its blocks, so a sparse VM disk
// counts what it holds, not its length.
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return info.Size()
}
