package launchertest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runner-manager/runner-manager/platform"
)

// sleepers lists this host's live processes running `sleep mark`, from
// /proc: a container's are among them, a VM's are not.
func sleepers(mark string) []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) != 2 || filepath.Base(args[0]) != "sleep" || args[1] != mark {
			continue
		}
		if start, err := platform.StartTime(pid); err == nil && platform.Alive(pid, start) {
			out = append(out, proc{pid, start})
		}
	}
	return out
}
