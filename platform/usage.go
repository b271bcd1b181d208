package platform

import "time"

// TreeUsage is what one process tree (a root and all its descendants) uses at
// one look.
type TreeUsage struct {
	RSSBytes uint64
	// CPUTime is user + system time of the live processes of the tree.
	CPUTime   time.Duration
	Processes int
}
