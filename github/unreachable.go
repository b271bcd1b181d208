package github

import (
	"errors"
	"net"
	"os"

	"github.com/bradleyfalzon/ghinstallation/v2"
)

// Unreachable tells whether err is a request GitHub never answered (a
// connection refused, a name that does not resolve, a timeout) and says
// why in a few words ("connection refused"): a program says so once,
// naming GitHub's URL itself, where the error's chain repeats the URL at
// every layer that wrapped it.
func Unreachable(err error) (cause string, ok bool) {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.Err, true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		inner := op.Err
		var sys *os.SyscallError
		if errors.As(inner, &sys) {
			inner = sys.Err
		}
		return inner.Error(), true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "no answer in time", true
	}
	return "", false
}

// AppRefused tells whether err is GitHub refusing a GitHub App's
// installation token (an app id, installation or key that do not match:
// 401, 404) and gives its answer's status ("404 Not Found").
func AppRefused(err error) (status string, ok bool) {
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil && he.Response.StatusCode/100 == 4 {
		return he.Response.Status, true
	}
	return "", false
}
