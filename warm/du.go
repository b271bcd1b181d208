package warm

import (
	"io/fs"
	"path/filepath"
)

// DiskUsage is what the tree under dir takes on disk, links not followed;
// what cannot be read counts nothing.
func DiskUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += allocated(info)
		}
		return nil
	})
	return n
}
