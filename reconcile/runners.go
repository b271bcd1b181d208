package reconcile

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// listenerPath is the runner's listener inside an installed runner.
func listenerPath(runnerDir string) string {
	name := "Runner.Listener"
	if goruntime.GOOS == "windows" {
		name += ".exe"
	}
	return filepath.Join(runnerDir, "bin", name)
}

// runnerDir is the installed runner a policy's attempts start from: its
// own RunnerDir, else the newest runner installed under
// <data>/runners/<version>/.
func (l *Loop) runnerDir(p rm.Policy) (string, error) {
	if p.RunnerDir != "" {
		return p.RunnerDir, nil
	}
	return NewestRunner(l.cfg.DataDir)
}

// NewestRunner returns the newest runner installed under
// <dataDir>/runners/<version>/ (a directory holding bin/Runner.Listener),
// comparing versions number by number.
func NewestRunner(dataDir string) (string, error) {
	if dataDir == "" {
		return "", fmt.Errorf("the policy names no runner directory and no data directory is set: set the policy's runner directory")
	}
	root := filepath.Join(dataDir, "runners")
	entries, err := os.ReadDir(root)
	if err != nil && !os.IsNotExist(err) {
		return "", fmt.Errorf("list installed runners: %w", err)
	}
	var versions []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(listenerPath(filepath.Join(root, e.Name()))); err == nil {
			versions = append(versions, e.Name())
		}
	}
	if len(versions) == 0 {
		return "", fmt.Errorf("no runner is installed in %s: run `runner-manager runner install`, or set the policy's runner directory", root)
	}
	slices.SortFunc(versions, compareVersions)
	return filepath.Join(root, versions[len(versions)-1]), nil
}

// compareVersions orders "2.330.0" after "2.329.10"; parts that are not
// numbers compare as text.
func compareVersions(a, b string) int {
	as, bs := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		an, aerr := strconv.Atoi(as[i])
		bn, berr := strconv.Atoi(bs[i])
		switch {
		case aerr == nil && berr == nil:
			if an != bn {
				return an - bn
			}
		case as[i] != bs[i]:
			return strings.Compare(as[i], bs[i])
		}
	}
	return len(as) - len(bs)
}
