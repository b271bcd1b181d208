// Package jobreport makes every job report its own footprint, with no
// change to its workflow: through the official runner's job hooks, each
// job's log (and its step summary) shows its peak memory, its average and
// busiest CPU, its duration, and the policy and host that ran it; and the
// journal learns the job's name as the runner saw it.
//
// # The runner's contract
//
// The runner reads ACTIONS_RUNNER_HOOK_JOB_STARTED and
// ACTIONS_RUNNER_HOOK_JOB_COMPLETED from its environment when it builds a
// job (actions/runner src/Runner.Worker/JobExtension.cs:302 and :571) and
// runs the script each names as the job's first step, "Set up runner", and
// its last, "Complete runner" (src/Runner.Common/Constants.cs:278-279),
// whatever the job's result (condition always()). A path must end in .sh,
// .ps1 or .js, else the step fails with "… is not a valid path to a
// script" (src/Runner.Common/HostContext.cs:833); a .sh script runs as
// `bash --noprofile --norc -e -o pipefail <path>`, or `sh -e <path>`
// without bash (HostContext.cs:815-821,
// src/Runner.Worker/Handlers/ScriptHandlerHelpers.cs:18-19). Its output
// is the step's, in the job's log, and it has the job's GITHUB_*
// variables and environment files: GITHUB_STEP_SUMMARY among them (the
// hook's step gets a file of its own, set as the github context's
// step_summary, which is on the allow-list of context keys passed as
// GITHUB_* variables), whose content the runner attaches to the job as a
// step summary after the hook ran (src/Runner.Worker/JobHookProvider.cs:82
// and :91, FileCommandManager.cs:42-73 and :221-289,
// GitHubContext.cs:9-48). The listener also
// reads the .env file of its root and sets every variable it names, over
// its own environment (src/Runner.Listener/Program.cs:172-199): a hook
// named there wins.
//
// # What the manager does
//
// Install writes two small POSIX shell scripts into an attempt's root,
// under HookDir (mode 0700, the scripts 0700: the runner runs as the
// manager's user), and returns the two variables naming them for the
// runner's environment. A hook the runner would otherwise have run (named
// by the runner's environment as the launcher built it, or by the root's
// .env) is chained, never replaced: the manager's script runs it as the
// runner would have, after its own part, and exits with its status, so
// the user's hook keeps its effect (its environment files are the same
// files) and its failure still fails the job. The manager's own part never
// fails a job: it ignores its own errors and exits 0.
//
// The started hook records the job as the runner sees it (GITHUB_REPOSITORY,
// GITHUB_WORKFLOW, GITHUB_WORKFLOW_REF, GITHUB_JOB, GITHUB_RUN_ID) into
// HookDir/job; ReadJob reads it back for the journal. That file is
// written by the job's own user: the manager reads at most 4 KiB of it,
// refuses a symlink, keeps printable text only, and the reconcile pass
// uses it only to fill what GitHub left empty.
//
// # How the numbers reach the completed hook
//
// The manager's meters already sample every live attempt every 2 s. A
// Tracker, told of each sample, keeps HookDir/usage current: a few
// key=value lines (0600; created through a rename, then overwritten in
// place under a write number the hook checks, so it never takes half a
// file: see writeUsage), with the figures of the job so far. The
// completed hook only reads that file and the started hook's, and prints.
// This was chosen over the alternatives because it is the cheapest honest
// path: the numbers are the manager's own measurements (the cgroup or the
// process tree, the same figures the journal keeps), nothing is measured
// twice, the hook makes no network or socket call (nothing for a job to
// reach but a file in its own root, and nothing to wait for: the hook
// costs a few milliseconds), no token or JIT configuration is in either
// file, and the figures are at most one sample (2 s) old. Asking the
// daemon over its socket at the end would be fresher by at most those 2
// s, but would put the daemon's API within every job's reach and make a
// job's last step wait on the daemon.
//
// The job's window starts at the last sample before the started hook's
// record was first seen, so the figures cover the whole job (and up to
// one sample before it) rather than the runner's life: a runner's own
// start-up (a warm spare's idle minutes, the listener's boot) does not
// dilute the average or claim the busiest interval. Until the record is
// seen, the file holds the runner's figures so far, and says so.
//
// # Backends
//
// The native backend only: its root is on the host, where the manager
// writes and the runner reads. A container's runner lives in the image's
// own directory, and a VM's guest sees none of the host's files: neither
// is covered yet (docs/job-report.md). Unix only: the hooks are .sh.
package jobreport
