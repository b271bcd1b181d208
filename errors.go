package runnermanager

import (
	"errors"
	"fmt"
)

// ErrInvalid marks input refused by a constructor or a Validate method. The
// frontends map it to a usage error (exit status 2); the message says what is
// wrong and how to fix it.
var ErrInvalid = errors.New("invalid")

// invalidf returns an error wrapping ErrInvalid.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
