//go:build !linux

package container

// oomWatch has nothing to watch off Linux: the engine's word is all.
type oomWatch struct{}

func watchOOM(int) *oomWatch { return nil }

func (w *oomWatch) stop() bool { return false }

func (w *oomWatch) memory() (kills, peak uint64) { return 0, 0 }
