package vm

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// consolePrefix starts the lines the guest's init writes for the launcher
// on its serial console.
const consolePrefix = "runner-manager-guest: "

// oomLine is in the guest kernel's line for each process its OOM killer
// ends ("Out of memory: Killed process 42 (job) total-vm:…"), which it
// prints on the console even when quiet.
const oomLine = "Out of memory: Killed process"

// Phase is one step of a guest's boot as its init reported it, with the
// guest's uptime then.
type Phase struct {
	Name    string
	Seconds float64
}

// Console is what a guest's serial console said for the launcher.
type Console struct {
	// ExitCode is the listener's exit code; -1 when the guest said none
	// (it was stopped, or failed before the listener ran).
	ExitCode int
	// RanJob: the runner left a Worker log (it took a job).
	RanJob bool
	// Error is the guest init's own failure, "" if none.
	Error string
	// Phases are the boot's steps (init, modules, disk, network, listener,
	// exited).
	Phases []Phase
	// OOMKills are the processes the guest kernel's OOM killer ended.
	OOMKills int
	// probed: the guest booted for a probe (Probe).
	probed bool
}

// ReadConsole reads a guest's console log. The last word wins: a line the
// job itself printed earlier cannot stand for the init's own at the end.
func ReadConsole(path string) (Console, error) {
	c := Console{ExitCode: -1}
	f, err := os.Open(path)
	if err != nil {
		return c, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.Contains(line, oomLine) {
			c.OOMKills++
			continue
		}
		i := strings.Index(line, consolePrefix)
		if i < 0 {
			continue
		}
		word, rest, _ := strings.Cut(line[i+len(consolePrefix):], " ")
		switch word {
		case "exit":
			if n, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil {
				c.ExitCode = n
			}
		case "probe":
			c.probed = true
		case "ran-job":
			c.RanJob = true
		case "error":
			c.Error = rest
		case "phase":
			name, secs, _ := strings.Cut(rest, " ")
			if v, err := strconv.ParseFloat(strings.TrimSpace(secs), 64); err == nil {
				c.Phases = append(c.Phases, Phase{Name: name, Seconds: v})
			}
		}
	}
	return c, sc.Err()
}
