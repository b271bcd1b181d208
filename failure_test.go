package runnermanager_test

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want rm.Class
	}{
		{"Nil", nil, rm.ClassUnknown},
		{"Plain", errors.New("boom"), rm.ClassUnknown},
		{"Invalid", fmt.Errorf("policy: %w: max 0", rm.ErrInvalid), rm.ClassInvalid},
		{"NotFound", fmt.Errorf("x: %w", rm.ErrNotFound), rm.ClassNotFound},
		{"Unauthorized", fmt.Errorf("x: %w", rm.ErrUnauthorized), rm.ClassAuthFailed},
		{"Busy", fmt.Errorf("x: %w", rm.ErrRunnerBusy), rm.ClassConflict},
		{"RateLimit", fmt.Errorf("x: %w", &rm.RateLimitError{}), rm.ClassRateLimited},
		{"Unsupported", fmt.Errorf("x: %w", errors.ErrUnsupported), rm.ClassUnsupportedHost},
		{"Network", fmt.Errorf("x: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), rm.ClassUnavailable},
		{"DNS", fmt.Errorf("x: %w", &net.DNSError{Err: "no such host", Name: "ghe.lan"}), rm.ClassUnavailable},
		{"Errno", fmt.Errorf("lstat: %w", syscall.ENOTDIR), rm.ClassUnknown},
		// The outermost class wins: a 403 wraps ErrUnauthorized but is a refusal.
		{"OuterWins", rm.WithClass(rm.ClassRefused, fmt.Errorf("x: %w", rm.ErrUnauthorized)), rm.ClassRefused},
		{"WithClassKeepsChain", fmt.Errorf("y: %w", rm.WithClass(rm.ClassLocalState, errors.ErrUnsupported)), rm.ClassLocalState},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, rm.ClassOf(tc.err))
		})
	}
	err := rm.WithClass(rm.ClassRefused, fmt.Errorf("x: %w", rm.ErrUnauthorized))
	assert.ErrorIs(t, err, rm.ErrUnauthorized, "WithClass keeps the chain")
	assert.Equal(t, "x: GitHub refused the credentials", err.Error(), "and the text")
	assert.Nil(t, rm.WithClass(rm.ClassRefused, nil))
	assert.Len(t, rm.Classes(), 10)
	for _, c := range rm.Classes() {
		assert.NotEqual(t, "unclassified", c.String())
	}
}
