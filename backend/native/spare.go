package native

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/runnerpkg"
)

// sparesPerRunner is how many prepared roots are kept per installed runner:
// two cover a replacement and one more launch in the same pass.
const sparesPerRunner = 2

// spareRoots keeps attempt roots prepared ahead of need, per installed
// runner, under <data>/attempts/.spare/: a launch then renames one into
// place instead of making hundreds of links and a dozen files, which on a
// slow disk is most of the time from "launch" to a started listener. Spares
// are made by Cleanup, off the launch path, only where bin/ is hard-linked
// (a spare of copies would cost the whole runner in disk). A spare whose
// install changed since it was made is thrown away when found. Spares left
// by an earlier manager are removed at the first replenish.
type spareRoots struct {
	dir string
	log *slog.Logger

	mu     sync.Mutex
	ready  map[string][]string // install → prepared roots
	making map[string]int      // install → roots being prepared
	// known holds every spare ready, being made or being taken: the sweep
	// leaves those alone.
	known   map[string]bool
	from    map[rm.AttemptID]string // attempt → install it was launched from
	noSpare map[string]bool         // installs whose roots are copies
	swept   bool
	seq     int
}

func newSpareRoots(dir string, log *slog.Logger) *spareRoots {
	return &spareRoots{
		dir:     dir,
		log:     log,
		ready:   map[string][]string{},
		making:  map[string]int{},
		known:   map[string]bool{},
		from:    map[rm.AttemptID]string{},
		noSpare: map[string]bool{},
	}
}

// take moves a spare root of src to root, and reports whether it did.
func (s *spareRoots) take(src, root string) bool {
	for {
		s.mu.Lock()
		list := s.ready[src]
		if len(list) == 0 {
			s.mu.Unlock()
			return false
		}
		spare := list[len(list)-1]
		s.ready[src] = list[:len(list)-1]
		s.mu.Unlock()

		ok := fresh(src, spare) && os.Rename(spare, root) == nil
		if !ok {
			_ = datadir.RemoveAll(spare)
		}
		s.mu.Lock()
		delete(s.known, spare)
		s.mu.Unlock()
		if ok {
			return true
		}
	}
}

// fresh reports whether spare was made from the install now at src: its
// listener is still the very file (the same inode) src has.
func fresh(src, spare string) bool {
	a, err := os.Stat(filepath.Join(src, "bin", runnerpkg.ListenerName))
	if err != nil {
		return false
	}
	b, err := os.Stat(filepath.Join(spare, "bin", runnerpkg.ListenerName))
	return err == nil && os.SameFile(a, b)
}

// launched notes which install attempt a was launched from.
func (s *spareRoots) launched(a rm.AttemptID, src string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.from[a] = src
}

// replenish prepares one spare root of the install attempt a was launched
// from, if that install has fewer than sparesPerRunner.
func (s *spareRoots) replenish(a rm.AttemptID) {
	s.mu.Lock()
	src, ok := s.from[a]
	delete(s.from, a)
	sweep := !s.swept
	s.swept = true
	if !ok || s.noSpare[src] || len(s.ready[src])+s.making[src] >= sparesPerRunner {
		s.mu.Unlock()
		if sweep {
			s.sweep()
		}
		return
	}
	s.seq++
	path := filepath.Join(s.dir, strconv.Itoa(s.seq)+"-"+rm.NewAttemptID().String())
	s.making[src]++
	s.known[path] = true
	s.mu.Unlock()
	if sweep {
		s.sweep()
	}

	copied := 0
	err := os.MkdirAll(s.dir, 0o700)
	if err == nil {
		copied, err = buildRoot(src, path)
	}
	keep := err == nil && copied == 0
	if !keep {
		_ = datadir.RemoveAll(path)
		if err != nil {
			s.log.Warn("a spare attempt root could not be prepared", "runner", src, "err", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.making[src]--
	if keep {
		s.ready[src] = append(s.ready[src], path)
		return
	}
	delete(s.known, path)
	if copied > 0 {
		s.noSpare[src] = true
	}
}

// sweep removes spares this launcher does not know: an earlier manager's.
func (s *spareRoots) sweep() {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		path := filepath.Join(s.dir, e.Name())
		s.mu.Lock()
		known := s.known[path]
		s.mu.Unlock()
		if !known {
			_ = datadir.RemoveAll(path)
		}
	}
}

// drop removes every ready spare.
func (s *spareRoots) drop() error {
	s.mu.Lock()
	var paths []string
	for src, list := range s.ready {
		paths = append(paths, list...)
		delete(s.ready, src)
	}
	s.mu.Unlock()
	var errs []error
	for _, p := range paths {
		errs = append(errs, datadir.RemoveAll(p))
		s.mu.Lock()
		delete(s.known, p)
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}
