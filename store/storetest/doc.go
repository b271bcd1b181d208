// Package storetest owns what tests of the journal share: Run, the
// conformance suite every store.Store implementation must pass, and fixture
// builders for hosts, policies and attempts (NewHost, NewPolicy,
// NewAttempt), plus MustOpen for a throwaway SQLite journal.
package storetest
