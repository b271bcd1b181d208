// Package check is the vocabulary of doctor's findings, apart from the
// doctor that makes them: a Check, and the contract (Doctor) by which a
// backend package checks its own part of a host (its programs, its
// images, what it left of attempts). It imports nothing a backend would
// not link anyway, so that a backend owns its checks without linking the
// doctor's journal or GitHub client.
package check

import (
	"context"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
)

// Status is how a check came out.
type Status int

// The statuses, from good to bad.
const (
	// OK: nothing to do.
	OK Status = iota
	// Warn: a problem that does not stop the manager.
	Warn
	// Fail: the manager cannot work until it is fixed.
	Fail
)

// String is the status's mark in a report.
func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Warn:
		return "warn"
	}
	return "FAIL"
}

// Check is one finding.
type Check struct {
	// Name is the check's stable key ("disk", "journal-integrity", ...).
	Name   string
	Status Status
	// Detail is what was found, one line for people.
	Detail string
	// Hint is how to fix it, when not OK.
	Hint string
}

// String is the check as a report prints it: "[ok  ] detail", the hint
// indented below it when the check is not OK.
func (c Check) String() string {
	mark := map[Status]string{OK: "ok  ", Warn: "warn", Fail: "FAIL"}[c.Status]
	s := "[" + mark + "] " + c.Detail
	if c.Status != OK && c.Hint != "" {
		s += "\n       " + strings.ReplaceAll(c.Hint, "\n", "\n       ")
	}
	return s
}

// Ok is a check that found nothing to do.
func Ok(name, detail string) Check { return Check{Name: name, Detail: detail} }

// Warning is a check that found a problem the manager works with.
func Warning(name, detail, hint string) Check {
	return Check{Name: name, Status: Warn, Detail: detail, Hint: hint}
}

// Failure is a check that found what stops the manager.
func Failure(name, detail, hint string) Check {
	return Check{Name: name, Status: Fail, Detail: detail, Hint: hint}
}

// Failed counts the checks that failed.
func Failed(checks []Check) int {
	n := 0
	for _, c := range checks {
		if c.Status == Fail {
			n++
		}
	}
	return n
}

// Doctor is a backend's own checks, asked by the doctor after the host's
// shared ones: a backend no policy of the host uses and that left nothing
// says nothing.
type Doctor interface {
	Doctor(ctx context.Context, env Env) []Check
}

// Env is what a backend's checks look at.
type Env struct {
	// DataDir is the data directory.
	DataDir string
	// Host is this host.
	Host rm.Host
	// Policies are this host's policies, of every backend: each backend
	// takes its own.
	Policies []rm.Policy
	// Config is the configuration in use (each backend reads its own
	// section); nil for the defaults.
	Config *configfile.File
	// Live reports whether a live attempt of the journal owns an attempt.
	Live func(rm.AttemptID) bool
	// DaemonUp says a daemon serves the data directory: what it uses may
	// look left over, and it reaps leftovers itself.
	DaemonUp bool
	// Fix removes leftovers; never set while a daemon runs.
	Fix bool
}
