package fakerunner

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

// probe runs a probe job's step: it tries to read every path each pattern
// matches, as a job's code running as the runner's user could, and
// records how many files and bytes it could read and how many it could
// not. A pattern's $NAME and ${NAME} are the job's variables; a match
// that is a directory is read whole (links in it are read when they name
// files, not followed into directories, so a loop cannot hold it).
func (j *jobRun) probe(patterns []string) {
	rep := &runnerproto.ProbeReport{}
	j.log.printf("##[group]Run probe of %d paths", len(patterns))
	for _, p := range patterns {
		res := runnerproto.ProbeResult{Pattern: p, Expanded: os.Expand(p, j.lookup)}
		matches, _ := filepath.Glob(res.Expanded)
		if len(matches) == 0 && !hasMeta(res.Expanded) {
			if _, err := os.Lstat(res.Expanded); errors.Is(err, fs.ErrPermission) {
				res.Denied++
			}
		}
		res.Matches = len(matches)
		for _, m := range matches {
			readTree(m, &res)
		}
		rep.Bytes += res.Bytes
		rep.Files += res.Files
		rep.Paths = append(rep.Paths, res)
		j.log.printf("%s: %d matches, %d files, %d bytes read, %d denied", res.Expanded, res.Matches, res.Files, res.Bytes, res.Denied)
	}
	j.log.printf("##[endgroup]")
	j.probed = rep
}

func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// readTree reads path, a file or a directory whole, into res.
func readTree(path string, res *runnerproto.ProbeResult) {
	fi, err := os.Stat(path)
	if err != nil {
		res.Denied++
		return
	}
	if !fi.IsDir() {
		readFile(path, res)
		return
	}
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			res.Denied++
			return nil
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			if fi, err := os.Stat(p); err != nil || fi.IsDir() {
				return nil
			}
		case !d.Type().IsRegular():
			return nil
		}
		readFile(p, res)
		return nil
	})
}

func readFile(path string, res *runnerproto.ProbeResult) {
	f, err := os.Open(path)
	if err != nil {
		res.Denied++
		return
	}
	defer f.Close()
	n, err := io.Copy(io.Discard, f)
	res.Bytes += n
	if err != nil {
		res.Denied++
		return
	}
	res.Files++
}
