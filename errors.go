package runnermanager

import (
	"fmt"
	"strings"
)

// ErrInvalid marks input refused by a constructor or a Validate method. The
// frontends map it to ClassInvalid's exit status; the message says what is
// wrong and how to fix it.
var ErrInvalid = NewError(ClassInvalid, "invalid")

// invalidf returns an error wrapping ErrInvalid.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// invalidIn puts err, an ErrInvalid from a part, in the context of the
// whole: "invalid: policy "home": repository ..." rather than
// "policy "home": invalid: repository ...". It still wraps err.
func invalidIn(err error, format string, args ...any) error {
	inner := strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": ")
	return &contextError{
		msg: ErrInvalid.Error() + ": " + fmt.Sprintf(format, args...) + ": " + inner,
		err: err,
	}
}

type contextError struct {
	msg string
	err error
}

func (e *contextError) Error() string { return e.msg }
func (e *contextError) Unwrap() error { return e.err }
