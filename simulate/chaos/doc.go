// Package chaos runs the real runner-manager daemon, as a child process and
// through its CLI as a user would, against the fake GitHub
// (simulate/fakegithub) on loopback with the fake runner, while named faults
// hit it: kills -9 and restarts, storms of 5xx, rate limits, revoked
// credentials, a GitHub that forgets everything, connection-refused
// outages, SIGTERM with idle and busy runners, long jobs.
//
// Each scenario's Result says what a user would ask of the run: were all
// jobs served, was any run twice, what was left behind (registrations,
// runner processes, attempt directories, journal attempts live without a
// process), were charged REST calls made while a limit held, how long after
// a fault's end the next job started, and whether every attempt's outcome
// in the journal agrees with what the fake says ran on its runner.
//
// The package is library code so a test (chaos_test.go, short form by
// default, full form with RUNNER_MANAGER_CHAOS=full) and anyone else can run
// the same scenarios and get the same report. The process scan needs Linux.
package chaos
