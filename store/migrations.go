package store

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one embedded schema step of a store, numbered from 1: the
// file NNNN_what.sql of its migrations directory.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// ReadMigrations returns the steps in dir of fsys in order, checking that
// each is named NNNN_what.sql and each number is used once. A number may
// be missing (one reserved by a step written elsewhere). Each store
// implementation applies its own, in its own dialect.
func ReadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s is not named NNNN_what.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range ms {
		if m.Version < 1 || (i > 0 && m.Version == ms[i-1].Version) {
			return nil, fmt.Errorf("migration %s: numbers start at 1 and are used once", m.Name)
		}
	}
	return ms, nil
}
