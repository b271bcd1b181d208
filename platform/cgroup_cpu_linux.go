//go:build linux

package platform

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CPU weights of a group: cgroup v2's cpu.weight scale (1 to 10000, the
// kernel's default 100); v1's cpu.shares is the same ×1024/100 (default
// 1024, at least 2).
const (
	CPUWeightDefault = 100
	CPUWeightLowest  = 1
)

// ErrNoCPUWeight: the group is in no hierarchy with the cpu controller
// (v2 without it delegated; v1 with cpu mounted apart from cpuacct).
var ErrNoCPUWeight = errors.New("cgroups: no cpu controller for the attempts' groups")

// SetCPUWeight sets the group's share of the CPU when the CPU is
// contended (an idle CPU is anyone's, whatever the weight): cpu.weight on
// cgroup v2, cpu.shares on v1 where cpu is mounted with cpuacct.
func (g *Cgroup) SetCPUWeight(w uint64) error {
	w = min(max(w, 1), 10000)
	if g.v2 != "" && g.c.hasV2("cpu") {
		return writeFile(filepath.Join(g.v2, "cpu.weight"), strconv.FormatUint(w, 10))
	}
	for i, h := range g.hier {
		if slices.Contains(h.mountCtl, "cpu") {
			return writeFile(filepath.Join(filepath.Dir(g.tasks[i]), "cpu.shares"), strconv.FormatUint(max(w*1024/100, 2), 10))
		}
	}
	return ErrNoCPUWeight
}

// CPUWeight reads the group's CPU weight back, on cpu.weight's scale.
func (g *Cgroup) CPUWeight() (uint64, error) {
	read := func(path string) (uint64, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	if g.v2 != "" && g.c.hasV2("cpu") {
		return read(filepath.Join(g.v2, "cpu.weight"))
	}
	for i, h := range g.hier {
		if slices.Contains(h.mountCtl, "cpu") {
			s, err := read(filepath.Join(filepath.Dir(g.tasks[i]), "cpu.shares"))
			return max(s*100/1024, 1), err
		}
	}
	return 0, ErrNoCPUWeight
}
