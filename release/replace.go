package release

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// InstallPrograms puts the programs of p's verified archive in place of
// the program at exe and, when it sits beside exe, the TUI: each one
// written beside its target, synced, then renamed over it, so a reader
// (or a service starting) sees the old program or the new one, never half
// of one. Everything is unpacked before anything is replaced: an archive
// that lacks a program replaces nothing. It returns the paths replaced.
func InstallPrograms(archive []byte, p Platform, exe string) ([]string, error) {
	dir := filepath.Dir(exe)
	type target struct {
		path string
		data []byte
	}
	var targets []target
	for i, prog := range Programs {
		path := filepath.Join(dir, p.Exe(prog))
		if i == 0 {
			path = exe // the running program, whatever its name
		} else if _, err := os.Stat(path); err != nil {
			continue // installed without the TUI
		}
		data, err := Unpack(archive, p, p.Exe(prog))
		if err != nil {
			return nil, err
		}
		targets = append(targets, target{path, data})
	}
	var done []string
	for _, t := range targets {
		if err := ReplaceFile(t.path, t.data); err != nil {
			return done, err
		}
		done = append(done, t.path)
	}
	return done, nil
}

// ReplaceFile replaces the executable at path with data atomically: a
// temporary file beside it, synced, made executable, renamed over it. On
// Windows, where a running program cannot be replaced but can be renamed,
// the old one is first moved to path+".old" (removed at the next update).
// On failure path is untouched and the temporary file removed.
func ReplaceFile(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+strings.TrimSuffix(filepath.Base(path), ".exe")+".new-*")
	if err != nil {
		return fmt.Errorf("write beside %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write beside %s: %w", path, err)
	}
	if err = os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if runtime.GOOS == "windows" {
		old := path + ".old"
		if err := os.Remove(old); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the program the last update left (%s): %w", old, err)
		}
		if err = os.Rename(path, old); err != nil {
			return fmt.Errorf("move %s aside: %w", path, err)
		}
		if err = os.Rename(tmp, path); err != nil {
			_ = os.Rename(old, path)
			return fmt.Errorf("put the new %s in place: %w", path, err)
		}
		return nil
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("put the new %s in place: %w", path, err)
	}
	return nil
}
