// Package storetest owns what tests of the journal share: Run, the
// conformance suite every store.Store implementation must pass, RunFleet,
// the suite of store.Fleet, RunFleetSets, that of store.FleetSets, and
// fixture builders for hosts, policies and attempts (NewHost, NewPolicy,
// NewAttempt). It imports no store implementation:
// store/sqlite/sqlitetest and store/postgres/pgtest open throwaway
// journals.
package storetest
