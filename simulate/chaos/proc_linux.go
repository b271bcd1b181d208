package chaos

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runner-manager/runner-manager/platform"
)

// procScanWorks says whether scanProcs can see processes here.
const procScanWorks = true

// scanProcs lists the processes of w's runners: those whose environment
// carries the launcher's mark (platform.AttemptEnv) and whose executable or
// working directory lies in w's data directory, or whose executable is the
// fake runner itself (other runs on this machine are not ours). Unlike
// platform.RunnerProcesses it also keeps listeners without the mark (a
// runner that escaped it is a finding) and looks for the daemon's secrets
// in every environment. A process gone mid-scan is skipped.
func scanProcs(w *World) ([]proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	data := filepath.Clean(w.DataDir) + string(filepath.Separator)
	runner := filepath.Clean(w.env.RunnerDir) + string(filepath.Separator)
	daemon := w.DaemonPID()
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == daemon || pid == os.Getpid() {
			continue
		}
		dir := "/proc/" + e.Name()
		exe, _ := os.Readlink(dir + "/exe")
		exe = strings.TrimSuffix(exe, " (deleted)")
		cwd, _ := os.Readlink(dir + "/cwd")
		ours := strings.HasPrefix(exe, data) || strings.HasPrefix(cwd+"/", data)
		fakeRunner := strings.HasPrefix(exe, runner)
		env, _ := os.ReadFile(dir + "/environ")
		attempt, _ := platform.AttemptOf(env)
		if !(fakeRunner || ours && (attempt != "" || strings.HasSuffix(exe, "Runner.Listener"))) {
			continue
		}
		p := proc{PID: pid, Exe: exe, Attempt: attempt}
		for name, secret := range w.secrets() {
			if secret != "" && bytes.Contains(env, []byte(secret)) {
				p.Secrets = append(p.Secrets, name)
			}
		}
		out = append(out, p)
	}
	return out, nil
}
