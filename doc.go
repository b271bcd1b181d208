// Package runnermanager holds the vocabulary of runner-manager, a local-first
// autoscaler for ephemeral GitHub Actions self-hosted runners: hosts, scale
// targets, policies, attempts and their life cycle, and the ports a scale
// target's services fill (Registrar, where runners register; DemandSource,
// where demand comes from) with what they exchange. It imports nothing
// heavy; every dependency lives in a subpackage of its own.
//
// The module's packages, from the bottom up:
//
//   - runnermanager (this package): the vocabulary and the ports, nothing
//     else.
//   - store: the journal of hosts, policies and attempts (SQLite), with a
//     conformance suite any implementation must pass (store/storetest).
//   - platform: process tables and trees, host memory and disk, the native
//     launcher, the memory peaks file.
//   - meter: AttemptMeters, per-attempt metering, exit detection and the
//     banking of memory peaks per policy.
//   - github: GitHub as a Registrar and a DemandSource, in a scale-set and
//     a classic REST implementation, the webhook receiver, and
//     github/fakegithub, a fake GitHub for tests and the demo.
//   - reconcile: the level-based Loop (one per scale target), the supervisor
//     that runs a host's loops, and memory/disk admission.
//   - metrics: the Prometheus collectors (runner_manager_…), fed from the
//     supervisor's Status, the journal and the GitHub transport.
//   - simulate: a busy day against github/fakegithub with real runner
//     processes; the demo and examples/simulate run it.
//   - frontends/cli (with its configuration, reconcile/daemon/config) and
//     frontends/tui: the programs; reconcile/daemonapi: the daemon's local
//     API on a unix socket, which they share.
//   - examples: the library embedded (examples/embed: the default host,
//     and with -own a launcher and a demand source of its own), and a
//     simulation run from Go code.
//
// Dependencies point down: frontends, examples → (simulate, metrics) →
// reconcile → (meter, github, platform, store) → runnermanager.
package runnermanager
