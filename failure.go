package runnermanager

import (
	"errors"
	"net"
)

// Class is the kind of a failure, seen from the person who must fix it: a
// refused value is fixed by giving another, an expired token by a new one,
// an outage by waiting. Frontends map a class to an exit status and a next
// step; the error's text still says what exactly went wrong.
type Class int

// The failure classes. ClassUnknown is any error that carries no class.
const (
	ClassUnknown Class = iota
	// ClassInvalid: a value refused (a flag's, a configuration key's).
	ClassInvalid
	// ClassNotFound: no such policy, attempt, repository, runner group...
	ClassNotFound
	// ClassConflict: the request collides with what exists or runs now (a
	// name taken, a runner busy, another daemon on the data directory).
	ClassConflict
	// ClassNotAuthenticated: no GitHub credentials are configured.
	ClassNotAuthenticated
	// ClassAuthFailed: GitHub refused the credentials themselves (invalid,
	// revoked or expired token, wrong app key).
	ClassAuthFailed
	// ClassRefused: GitHub knows the credentials and refused the request (a
	// permission missing, a request it will not serve).
	ClassRefused
	// ClassUnavailable: GitHub did not answer, or answered with a server
	// error; trying later may work.
	ClassUnavailable
	// ClassRateLimited: GitHub's REST budget is spent (or a secondary limit
	// hit); no request is sent before its reset.
	ClassRateLimited
	// ClassLocalState: the data directory or the journal cannot be used as
	// it is (missing, unreadable, read-only, locked schema, store down).
	ClassLocalState
	// ClassUnsupportedHost: this machine or system cannot do what was asked.
	ClassUnsupportedHost
)

var classNames = [...]string{
	ClassUnknown:          "unclassified",
	ClassInvalid:          "invalid argument",
	ClassNotFound:         "not found",
	ClassConflict:         "conflict",
	ClassNotAuthenticated: "not authenticated",
	ClassAuthFailed:       "authentication failed",
	ClassRefused:          "GitHub refused",
	ClassUnavailable:      "GitHub unavailable",
	ClassRateLimited:      "rate limited",
	ClassLocalState:       "local state",
	ClassUnsupportedHost:  "unsupported host",
}

// Classes lists every class but ClassUnknown, in order.
func Classes() []Class {
	out := make([]Class, 0, len(classNames)-1)
	for c := ClassInvalid; int(c) < len(classNames); c++ {
		out = append(out, c)
	}
	return out
}

func (c Class) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return classNames[ClassUnknown]
	}
	return classNames[c]
}

// classed is an error that knows its class.
type classed interface{ FailureClass() Class }

// ClassOf returns the class of err: that of the outermost error in its
// chain that carries one (WithClass, NewError, *RateLimitError), else
// ClassUnsupportedHost for errors.ErrUnsupported, ClassUnavailable for a
// network error (*net.OpError, *net.DNSError: a request nobody answered),
// else ClassUnknown.
func ClassOf(err error) Class {
	if err == nil {
		return ClassUnknown
	}
	var c classed
	if errors.As(err, &c) {
		return c.FailureClass()
	}
	if errors.Is(err, errors.ErrUnsupported) {
		return ClassUnsupportedHost
	}
	// A request nobody answered: a dial, a read, a name that did not
	// resolve. Not net.Error: a bare syscall.Errno satisfies it too.
	var op *net.OpError
	var dns *net.DNSError
	if errors.As(err, &op) || errors.As(err, &dns) {
		return ClassUnavailable
	}
	return ClassUnknown
}

// NewError returns a sentinel error of class c with text, for errors.Is
// like errors.New's.
func NewError(c Class, text string) error { return &classError{class: c, err: errors.New(text)} }

// WithClass returns err with class c, which ClassOf then reports over any
// class err carries; nil stays nil. err's text and chain are unchanged.
func WithClass(c Class, err error) error {
	if err == nil {
		return nil
	}
	return &classError{class: c, err: err, wrap: true}
}

type classError struct {
	class Class
	err   error
	wrap  bool
}

func (e *classError) Error() string       { return e.err.Error() }
func (e *classError) FailureClass() Class { return e.class }

// Unwrap exposes the wrapped error of WithClass; a sentinel of NewError is
// its own end, as errors.New's.
func (e *classError) Unwrap() error {
	if e.wrap {
		return e.err
	}
	return nil
}

// FailureClass makes a rate limit ClassRateLimited.
func (e *RateLimitError) FailureClass() Class { return ClassRateLimited }
