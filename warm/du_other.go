//go:build !unix

package warm

import "io/fs"

// allocated is the file's length where the OS gives no block count.
func allocated(info fs.FileInfo) int64 { return info.Size() }
