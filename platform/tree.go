package platform

import "time"

// procEntry is one process of one look at the process table.
type procEntry struct {
	pid, ppid int
	rss       uint64        // bytes
	cpu       time.Duration // user + system
}

// treeIndex turns one look at the process table into per-root tree totals.
// It keeps its slices and map between looks so a steady table costs no
// allocations; it is not safe for concurrent use.
type treeIndex struct {
	slot  map[int]int32 // pid → index into the entries
	first []int32       // children of entry i are kids[first[i]:first[i+1]]
	kids  []int32
	fill  []int32
	mark  []uint32 // mark[i] == epoch: visited by the current walk
	epoch uint32
	stack []int32
}

// build indexes entries: pid → slot, and parent → children once for all
// roots.
func (x *treeIndex) build(entries []procEntry) {
	n := len(entries)
	if x.slot == nil {
		x.slot = make(map[int]int32, n)
	} else {
		clear(x.slot)
	}
	for i := range entries {
		x.slot[entries[i].pid] = int32(i)
	}

	// Children in compressed rows: count per parent, prefix sums, fill.
	x.first = resize(x.first, n+1)
	clear(x.first)
	x.fill = resize(x.fill, n)
	for i := range entries {
		x.fill[i] = -1
		e := &entries[i]
		if e.ppid == e.pid {
			continue
		}
		if p, ok := x.slot[e.ppid]; ok {
			x.fill[i] = p
			x.first[p+1]++
		}
	}
	for i := 1; i <= n; i++ {
		x.first[i] += x.first[i-1]
	}
	x.kids = resize(x.kids, int(x.first[n]))
	next := x.stack[:0] // borrow the stack as the per-parent write cursor
	next = append(next, x.first[:n]...)
	for i := range entries {
		if p := x.fill[i]; p >= 0 {
			x.kids[next[p]] = int32(i)
			next[p]++
		}
	}
	x.stack = next[:0]

	if len(x.mark) < n {
		x.mark = make([]uint32, n)
		x.epoch = 0
	}
}

// usage sums the tree under root; ok is false when root is not in the table.
// Every process is counted once even if a racing look made the parent links
// cyclic (a pid reused mid-scan).
func (x *treeIndex) usage(entries []procEntry, root int) (u TreeUsage, ok bool) {
	r, ok := x.slot[root]
	if !ok {
		return TreeUsage{}, false
	}
	x.epoch++
	if x.epoch == 0 { // wrapped: old marks could collide
		clear(x.mark)
		x.epoch = 1
	}
	stack := append(x.stack[:0], r)
	x.mark[r] = x.epoch
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		e := &entries[i]
		u.RSSBytes += e.rss
		u.CPUTime += e.cpu
		u.Processes++
		for _, k := range x.kids[x.first[i]:x.first[i+1]] {
			if x.mark[k] != x.epoch {
				x.mark[k] = x.epoch
				stack = append(stack, k)
			}
		}
	}
	x.stack = stack[:0]
	return u, true
}

// sample indexes entries and returns the totals of each root present.
func (x *treeIndex) sample(entries []procEntry, roots []int) map[int]TreeUsage {
	x.build(entries)
	out := make(map[int]TreeUsage, len(roots))
	for _, root := range roots {
		if u, ok := x.usage(entries, root); ok {
			out[root] = u
		}
	}
	return out
}

// resize returns s with length n, reusing its array when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/4)
}
