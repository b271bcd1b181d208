// Package storetest owns what tests of the journal share: Run, the
// conformance suite every store.Store implementation must pass, RunFleet,
// the suite of store.Fleet, and fixture builders for hosts, policies and
// attempts (NewHost, NewPolicy, NewAttempt), plus MustOpen for a throwaway
// SQLite journal (store/postgres/pgtest has PostgreSQL's).
package storetest
