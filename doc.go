// Package runnermanager holds the vocabulary of runner-manager, a local-first
// autoscaler for ephemeral GitHub Actions self-hosted runners: hosts, scale
// targets, policies, attempts and their life cycle, and every port the
// rooms around it fill (Launcher and BackendKind for a backend, Meters,
// Machine, RunnerInstalls, Registrar and DemandSource) with what they
// exchange. It imports the standard library alone.
//
// The rooms around it, each at the top of the tree (docs/architecture.md
// draws them with their imports; .ci/floorplan holds each rule):
//
//   - store: the journal's contract; store/sqlite and store/postgres
//     implement it, store/storetest is the suite both pass.
//   - reconcile: the engine (Loop, Supervisor, Admission); status: the read
//     model it fills and every frontend reads.
//   - backend: one package per backend (backend/native, backend/container,
//     backend/vm) and the one list of them; backend/launchertest is the
//     suite every launcher passes.
//   - datadir: the data directory; runnerpkg: the runner package's life;
//     configfile: the configuration file; platform: the OS.
//   - meter: AttemptMeters; github: GitHub's clients; fleetdemand: a fleet
//     policy's demand; localapi: the daemon's socket; metrics: the exporter.
//   - policyedit, attempts, doctor: what the programs ask of the library.
//   - daemon: the composition root that builds and runs a whole host.
//   - simulate: the simulated world (a fake GitHub and runner, the bench,
//     the chaos run); frontends: the two programs; examples: embedding.
package runnermanager
