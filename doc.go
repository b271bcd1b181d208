// Package runnermanager holds the vocabulary of runner-manager, a local-first
// autoscaler for ephemeral GitHub Actions self-hosted runners: hosts, scale
// targets, policies, attempts and their life cycle, and the ports a scale
// target's services fill (Registrar, where runners register; DemandSource,
// where demand comes from) with what they exchange. It imports nothing
// heavy; every dependency lives in a subpackage of its own.
//
// The module's packages, from the bottom up (docs/architecture.md draws
// them with their imports):
//
//   - runnermanager (this package): the vocabulary and the ports, nothing
//     else.
//   - store: the contract of the journal of hosts, policies and attempts,
//     with no database and no cgo; store/sqlite (one SQLite file) and
//     store/postgres (a fleet's shared PostgreSQL) implement it over the
//     statements they share (store/internal/sqlstore), and store/storetest
//     is the conformance suite both pass.
//   - platform: what backends and the daemon share of the OS: process
//     tables and trees, cgroups, host memory and disk, runner installs, the
//     memory peaks file. Each launcher is a package of its own beside it:
//     backend/native, backend/container, backend/vm.
//   - meter: AttemptMeters, per-attempt metering, exit detection and the
//     banking of memory peaks per policy.
//   - github: GitHub as a Registrar and a DemandSource, in a scale-set and
//     a classic REST implementation, the webhook receiver, and
//     simulate/fakegithub, a fake GitHub for tests and the demo.
//   - reconcile: the level-based Loop (one per scale target), the supervisor
//     that runs a host's loops, and memory/disk admission, over the root's
//     ports and store's contract alone; fleetdemand is a fleet
//     policy's demand source, daemon the entry point that wires a
//     whole host from the adapters above.
//   - metrics: the Prometheus collectors (runner_manager_…), fed from the
//     supervisor's Status, the journal and the GitHub transport.
//   - simulate: a busy day against simulate/fakegithub with real runner
//     processes; the demo and examples/simulate run it.
//   - frontends/cli (with its configuration, configfile) and
//     frontends/tui: the programs; localapi: the daemon's local
//     API on a unix socket, which they share.
//   - examples: the library embedded (examples/embed: the default host,
//     and with -own a launcher and a demand source of its own), and a
//     simulation run from Go code.
//   - internal/backoff and internal/bytesize: the one jittered backoff and
//     the one byte formatter every package uses.
//
// Dependencies point down: frontends, examples → simulate →
// daemon → (metrics, reconcile) → store → runnermanager.
// reconcile imports no adapter: daemon wires the adapters
// (github, store/sqlite, store/postgres, the platform launchers, meter)
// into it.
package runnermanager
