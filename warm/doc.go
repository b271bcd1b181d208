// Package warm owns the warm state of a repository's jobs on a host: its
// workspace slots under the data directory's slots/ (a work folder kept
// between the repository's jobs, the runner's tool cache and the
// ecosystems' caches in it), which attempt holds which, the variables that
// point each tool's cache into the slot, what is scrubbed from a slot
// when its attempt ends, and the host-wide cap that evicts the least
// recently used slots no attempt holds. docs/warm.md says why each rule.
package warm
