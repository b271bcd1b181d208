package launchertest

import (
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/runner-manager/runner-manager/platform"
)

// proc names one process for good.
type proc struct {
	pid   int
	start uint64
}

// marker is a number of seconds no other test sleeps: `sleep <marker>`
// names the processes of one job.
func marker() string { return strconv.Itoa(3_000_000 + rand.IntN(1_000_000)) }

// killAll kills the processes still alive of ps.
func killAll(ps []proc) {
	for _, p := range ps {
		if platform.Alive(p.pid, p.start) {
			if pr, err := os.FindProcess(p.pid); err == nil {
				_ = pr.Kill()
			}
		}
	}
}
