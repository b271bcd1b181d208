// Package fakegithub is a fake GitHub for tests and the demo: an HTTP server
// on loopback that speaks the wire format of the real one for everything
// runner-manager calls, holding state like the real one.
//
// It serves, under URL():
//
//   - the REST API (also under /api/v3, GHES style: APIURL()): runners of
//     repositories, organizations and enterprises (list with Link
//     pagination and ETags, get, delete with 422 while busy), registration
//     and remove tokens, generate-jitconfig (201, 409 name exists, 404
//     unknown scope or group, 422 bad labels), runner groups, runner
//     downloads, workflow runs and their jobs, /rate_limit, GitHub App
//     installation tokens (GitHub's stateless ghs_APPID_JWT of 2026 and the
//     classic form, in turn: WithInstallationTokens), and the
//     runner-registration exchange; every REST
//     answer carries the x-ratelimit-* headers;
//   - the Actions service (ActionsURL()): scale sets, runner groups, JIT
//     configs, agents, message sessions, acquirejobs and the long-polled
//     message queue, as github.com/actions/scaleset speaks them;
//   - a small job protocol for the fake runner (package fakerunner), which
//     runs jobs as real processes that use the memory and CPU the job asks;
//   - runner packages (a real tar.gz and zip with their sha256).
//
// Jobs are queued with EnqueueJob. A job with one runs-on label goes to the
// scale set of that name whose scope holds the repository: the scale set is
// offered it (JobAvailable), acquires it (acquirejobs, as the scaleset
// listener does), and it is assigned (JobAssigned) only while the scale
// set's assigned jobs stay below the latest X-ScaleSetMaxCapacity its
// session sent; statistics.totalAssignedJobs counts assigned jobs, waiting
// or running. A runner of the scale set then takes it (JobStarted,
// JobCompleted). A classic runner takes a queued job by GitHub's label rule.
// Each job is also a workflow run for the REST demand path and, with
// DeliverWebhooks, a series of signed workflow_job webhooks.
//
// Runners: BuildRunner builds the fake runner program (package
// fakerunner) once per test process into a directory laid out like an
// installed runner; LayoutRunnerDir makes one around any executable that
// dispatches to fakerunner.Main. Each runner needs a root of its own.
//
// Controls for tests: Fault per route (status, latency, dropped
// connections, Retry-After, a replaced body), SetRateLimit and
// SecondaryLimit (ChargedCallsWhileLimited counts the charged requests a
// client sent while a limit held), classic PAT scopes (AddTokenWithScopes),
// RevokeToken for one token, RevokeCredentials and RestoreCredentials for
// every credential at once (tokens derived before stay invalid), Restart
// (the GitHub side forgets the Actions service's state and every runner
// registration), StopListening and ResumeListening (a connection-refused
// outage on the same address), ReplayWebhook (a signed delivery sent again
// under a new X-GitHub-Delivery id), call counters (Calls, CallsREST,
// CallsScaleSet, CallsRunner, CallLog), job histories (Jobs: who ran each
// job and how many times it started), runners, scale sets and message
// sessions (Sessions) as the fake holds them, a ledger of every credential
// it handed out or accepted (CredentialLedger, Credentials: a test searches
// what the manager wrote for each), deprecation of the runner
// version, zombie runners, runners GitHub drops while idle, lost runners,
// and WaitFor. Time-driven behaviour (poll timeouts, token
// lifetimes, offline and lost runners, requeues) has an option each;
// githubtest.NewTestServer sets quick ones.
//
// Strict as GitHub: scale-set runners are not in the REST runner list (ask
// the Actions service's agents routes), and a message session never lapses
// on its own: a dead owner's session answers every new create with 409
// SessionConflictException until it is deleted by its id
// (WithSessionIdleTimeout opts in to lapsing). The runner-registration
// exchange answers 201, as GitHub's own test servers do (actions/scaleset
// internal/testserver/server.go, actions-runner-controller
// github/actions/testserver/server.go); every GitHub client takes any 2xx
// there, and WithRunnerRegistrationStatus(200) checks that a client does.
//
// Jobs can be shaped like real CI (JobSpec.CI: a checkout, a toolchain
// and npm dependencies the fake runner fetches from the content routes at
// WithDownloadRate, 10 MB/s by default, unless its folders hold them; the
// record's Setup says what it took and what was warm) or probe what a job
// can read (JobSpec.Probe; the record's Probe). docs/warm.md has the
// runner's folder rules the fake runner follows.
//
// All state is behind one mutex; every change wakes the long polls, so a
// runner whose registration is deleted hears it at once.
package fakegithub
