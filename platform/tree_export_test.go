package platform

// The portable (gopsutil) process table, for tests that hold it to the
// Linux reader's figures.
var (
	GopsutilSampleTrees = gopsutilSampleTrees
	GopsutilStartTime   = gopsutilStartTime
	GopsutilAlive       = gopsutilAlive
)

// NewHostCPUAt reads <procRoot>/stat on the given clock.
var NewHostCPUAt = newHostCPU
