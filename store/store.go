// Package store owns the journal's contract: hosts, policies and every
// runner attempt behind the Store and Fleet interfaces, their types and
// errors. It links no database: store/sqlite and store/postgres implement
// it, and store/storetest is the suite both must pass. The journal is
// written before every side effect, so a crash at any point leaves a record
// the next reconcile pass can repair from.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// The errors a Store returns, wrapped with detail; test with errors.Is.
var (
	// ErrNotFound: no host, policy or attempt with that id (or name).
	ErrNotFound = rm.NewError(rm.ClassNotFound, "not found")
	// ErrIllegalTransition: an attempt update the state table forbids
	// (runnermanager.AttemptState.CanMoveTo).
	ErrIllegalTransition = errors.New("illegal attempt state transition")
	// ErrConflict: a policy id or name already exists, another policy
	// serves the scale set (a *TargetTakenError), a policy still has live
	// attempts and cannot be removed, or an attempt names a policy that does
	// not exist or was removed.
	ErrConflict = rm.NewError(rm.ClassConflict, "conflict")
)

// TargetTakenError: a policy was refused because another policy in force
// serves its scale set (the same scope, runner group and scale set name,
// without case), and the two policies' runners would mix. It is an
// ErrConflict.
type TargetTakenError struct {
	// Policy is the name of the policy refused.
	Policy string
	// Other is the policy that serves the scale set.
	Other   string
	OtherID rm.PolicyID
	Target  rm.ScaleTarget
}

func (e *TargetTakenError) Error() string {
	return fmt.Sprintf("policy %q cannot serve %s: policy %q serves it already (one scale set is one policy's, or their runners would mix); change or remove %q, or give %q another scale set",
		e.Policy, e.Target, e.Other, e.Other, e.Policy)
}

// Is makes a taken target a conflict.
func (e *TargetTakenError) Is(target error) bool { return target == ErrConflict }

// AttemptFilter selects attempts; zero fields do not filter.
type AttemptFilter struct {
	Policy rm.PolicyID
	States []rm.AttemptState
	// Since and Until bound CreatedAt: Since ≤ CreatedAt < Until.
	Since, Until time.Time
	// Limit caps the result (newest first); 0 means no limit.
	Limit int
}

// Store is the journal. Implementations are safe for concurrent use. A
// Store is the session journal of a scale-set demand source
// (rm.SessionJournal): after a crash the next start finds there the
// message session it left, and deletes it by id.
type Store interface {
	// PutHost inserts or replaces a host.
	PutHost(ctx context.Context, h rm.Host) error
	// Host returns ErrNotFound if no host has that id.
	Host(ctx context.Context, id rm.HostID) (rm.Host, error)
	Hosts(ctx context.Context) ([]rm.Host, error)

	// InsertPolicy returns ErrConflict if the id exists (in force or
	// removed) or a policy in force has the name, a *TargetTakenError if a
	// policy in force serves its scale set, and the policy's Validate error
	// if it is invalid. A zero CreatedAt is stamped
	// with the current time, a zero UpdatedAt with CreatedAt.
	InsertPolicy(ctx context.Context, p rm.Policy) error
	// UpdatePolicy replaces a policy in force; ErrNotFound if none has its
	// id, ErrConflict if the new name is taken, a *TargetTakenError if
	// another policy serves its scale set, and the Validate error if it is
	// invalid. The stored CreatedAt is kept; UpdatedAt is stamped with the
	// current time.
	UpdatePolicy(ctx context.Context, p rm.Policy) error
	// Policy returns ErrNotFound if no policy has that id; a removed
	// policy comes with its RemovedAt set.
	Policy(ctx context.Context, id rm.PolicyID) (rm.Policy, error)
	// PolicyByName returns ErrNotFound if no policy in force has that name.
	PolicyByName(ctx context.Context, name string) (rm.Policy, error)
	// Policies lists every policy in force, by name.
	Policies(ctx context.Context) ([]rm.Policy, error)
	// RemovedPolicies lists the removed policies, kept for their attempts'
	// history, by name, then by when they were removed.
	RemovedPolicies(ctx context.Context) ([]rm.Policy, error)
	// DeletePolicy removes a policy in force: stamped with RemovedAt, it
	// serves nothing and frees its name and scale set, and it is kept with
	// its attempts as history. ErrNotFound if no policy in force has id,
	// ErrConflict while it has live attempts.
	DeletePolicy(ctx context.Context, id rm.PolicyID) error
	// MovePolicy hands a policy to another host, in one transaction: its
	// owner becomes to and UpdatedAt is stamped. ErrNotFound if the policy
	// or the host does not exist (a host exists once it was recorded or
	// registered); a *LiveAttemptsError (errors.Is ErrConflict) while the
	// policy has live attempts, which its owner alone may conclude. Moving
	// a policy to its owner changes nothing.
	MovePolicy(ctx context.Context, id rm.PolicyID, to rm.HostID) error
	// PurgePolicy deletes a policy, in force or removed, and its attempts
	// for good. ErrNotFound if no policy has id, ErrConflict while it has
	// live attempts.
	PurgePolicy(ctx context.Context, id rm.PolicyID) error
	// ApplyPolicies makes every change of c in one transaction: all of them,
	// or none when one fails. Deletions (removals, as DeletePolicy) come
	// first (so a name or a scale set may pass from one policy to another), then updates, then insertions; each is
	// checked and stamped as DeletePolicy, UpdatePolicy and InsertPolicy
	// check and stamp it, and the first refusal is returned with the same
	// errors (ErrNotFound, ErrConflict, a Validate error).
	ApplyPolicies(ctx context.Context, c PolicyChanges) error

	// RecordAttempt inserts a new attempt (in any state) or updates an
	// existing one, refusing with ErrIllegalTransition a state change the
	// table forbids, and with ErrConflict an attempt whose policy does not
	// exist or was removed. The attempt's Validate error is returned as is. CreatedAt is
	// set by the first record (the current time if zero) and never changes
	// after; a zero UpdatedAt is stamped with the current time.
	RecordAttempt(ctx context.Context, a rm.Attempt) error
	// Attempt returns ErrNotFound if no attempt has that id.
	Attempt(ctx context.Context, id rm.AttemptID) (rm.Attempt, error)
	// ActiveAttempts returns the live attempts of a policy, oldest first,
	// without reading its history.
	ActiveAttempts(ctx context.Context, policy rm.PolicyID) ([]rm.Attempt, error)
	// LiveAttempts returns the live attempts of every policy host owns,
	// oldest first, without reading history: what a host's loops, meters,
	// admission and metrics look at on every pass and sample.
	LiveAttempts(ctx context.Context, host rm.HostID) ([]rm.Attempt, error)
	// Attempts lists attempts matching f, newest first.
	Attempts(ctx context.Context, f AttemptFilter) ([]rm.Attempt, error)
	// ForceAttempt writes a, whatever its current state: recovery code alone
	// uses it (an attempt found dead after a restart). ErrNotFound if it
	// does not exist; otherwise as RecordAttempt (validation, ErrConflict
	// for an unknown policy, CreatedAt kept).
	ForceAttempt(ctx context.Context, a rm.Attempt) error

	// RecordSession inserts or replaces the message session of a scale
	// set (one per scale set). A zero CreatedAt is stamped with the
	// current time; a record without scale set id, session id or owner is
	// refused with runnermanager.ErrInvalid.
	RecordSession(ctx context.Context, s rm.SessionRecord) error
	// SessionOf returns the session recorded for a scale set; found is
	// false, with a nil error, when there is none.
	SessionOf(ctx context.Context, scaleSetID int) (s rm.SessionRecord, found bool, err error)
	// ForgetSession removes a scale set's record only if it still names
	// sessionID; forgetting what is not recorded is not an error.
	ForgetSession(ctx context.Context, scaleSetID int, sessionID string) error
	// Sessions lists every recorded session, by scale set id.
	Sessions(ctx context.Context) ([]rm.SessionRecord, error)
	// RecordScaleSet, ScaleSets and ForgetScaleSet keep the scale sets
	// the managers created at GitHub (rm.ScaleSetJournal): a record
	// without id, name or scope is refused with runnermanager.ErrInvalid.
	rm.ScaleSetJournal
	// AcquireHostLease takes or renews the lease of l.Host for l.Holder.
	// It succeeds when no daemon holds it, when the held lease expired by
	// l.RenewedAt, when l.Holder holds it (a renewal: AcquiredAt is kept),
	// or when takeOver is not "" and names its holder (one the caller
	// found dead: its process is gone on this machine). Otherwise it
	// returns a *LeaseHeldError (errors.Is ErrConflict) naming the holder.
	// It returns the lease as stored.
	AcquireHostLease(ctx context.Context, l HostLease, takeOver string) (HostLease, error)
	// HostLease returns the host's lease; ErrNotFound if none is held.
	HostLease(ctx context.Context, host rm.HostID) (HostLease, error)
	// ReleaseHostLease drops the host's lease if holder holds it; a lease
	// held by another, or none, is left as is.
	ReleaseHostLease(ctx context.Context, host rm.HostID, holder string) error

	// IntegrityCheck looks over the whole journal for damage (a store that
	// cannot tell says nil) and returns an error listing what it found.
	IntegrityCheck(ctx context.Context) error

	Close() error
}

// PolicyChanges is a set of policy changes Store.ApplyPolicies makes at
// once, as `policy apply` does with a file.
type PolicyChanges struct {
	// Delete are the policies removed (kept as history, as DeletePolicy).
	Delete []rm.PolicyID
	// Update are the policies replaced (by id).
	Update []rm.Policy
	// Insert are the new policies.
	Insert []rm.Policy
}

// Empty reports whether c changes nothing.
func (c PolicyChanges) Empty() bool { return len(c.Delete)+len(c.Update)+len(c.Insert) == 0 }

// LiveAttemptsError: a policy cannot be moved while it has live attempts.
type LiveAttemptsError struct {
	Policy rm.PolicyID
	// Live is how many live attempts it has.
	Live int
}

func (e *LiveAttemptsError) Error() string {
	return fmt.Sprintf("policy %s has %d live attempts, which only its host may conclude: pause it and wait for them to end (or stop them) first", e.Policy, e.Live)
}

// Is makes live attempts a conflict.
func (e *LiveAttemptsError) Is(target error) bool { return target == ErrConflict }

// HostLease says which daemon runs a host: one at a time, so that two
// daemons never serve (and sweep) the same host's runners. The daemon
// renews it well before ExpiresAt and releases it when it stops.
type HostLease struct {
	Host rm.HostID
	// Holder is a random token of one daemon run.
	Holder string
	// PID and ProcessStart name the holder's process on Hostname, booted
	// as BootID: a holder whose process is gone on this very boot of this
	// machine is dead, whatever its ExpiresAt.
	PID          int
	ProcessStart uint64
	Hostname     string
	BootID       string
	AcquiredAt   time.Time
	RenewedAt    time.Time
	ExpiresAt    time.Time
}

// Validate checks a lease before it is written.
func (l HostLease) Validate() error {
	switch {
	case l.Host.IsZero():
		return fmt.Errorf("%w: a host lease needs its host", rm.ErrInvalid)
	case l.Holder == "":
		return fmt.Errorf("%w: a host lease needs its holder", rm.ErrInvalid)
	case l.RenewedAt.IsZero() || !l.ExpiresAt.After(l.RenewedAt):
		return fmt.Errorf("%w: a host lease must expire after it is renewed (renewed %s, expires %s)", rm.ErrInvalid, l.RenewedAt, l.ExpiresAt)
	}
	return nil
}

// LeaseHeldError: another daemon holds the host's lease.
type LeaseHeldError struct {
	Lease HostLease
}

func (e *LeaseHeldError) Error() string {
	l := e.Lease
	return fmt.Sprintf("host %s is run by another runner-manager daemon: pid %d on %s (lease renewed %s, expires %s); stop that daemon first, or wait for its lease to expire if it is gone",
		l.Host, l.PID, l.Hostname, l.RenewedAt.UTC().Format(time.RFC3339), l.ExpiresAt.UTC().Format(time.RFC3339))
}

// Is makes a held lease a conflict.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrConflict }

var _ rm.SessionJournal = Store(nil)
