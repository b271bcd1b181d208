package native

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// Roots lists the attempts that have a root directory under
// <data>/attempts/, in one ReadDir: what a crash between an attempt's
// conclusion and its Cleanup leaves behind. Kept failed roots (.failed/),
// spare roots (.spare/) and entries that do not name an attempt are not
// listed. Attempts that have only a cgroup left (a crash between its
// root's removal and the group's) are listed too. A missing attempts
// directory lists nothing.
func (l *Launcher) Roots() ([]rm.AttemptID, error) {
	entries, err := os.ReadDir(l.dir.Attempts())
	if errors.Is(err, fs.ErrNotExist) {
		return l.groupRoots(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("list attempt roots: %w", err)
	}
	var ids []rm.AttemptID
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		id, err := rm.ParseAttemptID(e.Name())
		if err != nil || id.IsZero() || id.String() != e.Name() {
			continue // not ours to judge
		}
		ids = append(ids, id)
	}
	for _, id := range l.groupRoots() {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
