// Package launchertest owns the conformance suite of rm.Launcher: Run,
// which every backend's launcher passes (backend/native,
// backend/container, backend/vm, an embedder's own), as store/storetest's
// Run is for stores. It drives real runners, the fake runner of
// simulate/fakerunner against the fake GitHub of simulate/fakegithub,
// through the launcher a Harness makes, and checks what docs/backends.md
// asks of each method: the launch and the exit, the conclusion (RanJob),
// Stop, Cleanup and what a job leaves behind, the metering capabilities,
// and the daemon's start after a kill -9 of the launcher's process
// (leftovers removed, roots swept, live runners adopted, gone ones said
// gone). A new backend is its package and one test that calls Run.
package launchertest
