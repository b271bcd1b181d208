// Package logredact removes credentials from text on its way out: a
// wrapping slog.Handler, the last handler of every program, and String for
// text that is not a log record (an error printed to the user).
//
// It is the last line, not the first: code must not log a credential in the
// first place. It recognises what GitHub and its Actions service hand out:
// GitHub tokens (ghp_, gho_, ghs_, ghu_, ghr_, github_pat_) of any length,
// among them the installation tokens of 2026 (ghs_APPID_JWT); JWTs (App
// JWTs, admin, queue and runner tokens of the Actions service); encoded JIT
// runner configurations (base64 of a JSON object of the runner's files);
// values after the Authorization schemes Bearer, RemoteAuth, token and
// Basic; the password of a URL's userinfo; and PEM private keys. Each is
// replaced by Marker wherever it stands: alone, at either end of the text,
// inside a word, a URL, a JSON string or a header. Everything else (ids,
// UUIDs, checksums, runner names, URLs without a password) is kept as it is.
package logredact

import (
	"io"
	"strings"
)

// Marker replaces each credential found.
const Marker = "[redacted]"

// String returns s with every credential replaced by Marker. When s holds
// none it is returned as it is, with no allocation.
func String(s string) string {
	start, end := next(s, 0)
	if start < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	from := 0
	for start >= 0 {
		b.WriteString(s[from:start])
		b.WriteString(Marker)
		from = end
		start, end = next(s, end)
	}
	b.WriteString(s[from:])
	return b.String()
}

// Contains reports whether s holds a credential String would replace.
func Contains(s string) bool {
	start, _ := next(s, 0)
	return start >= 0
}

// next finds the first credential in s at or after from and returns its
// span, or -1, -1. A credential that begins inside the one found and runs
// on past it ("Bearer -----BEGIN … PRIVATE KEY-----") widens the span, so
// no part of either is left behind.
func next(s string, from int) (int, int) {
	var m memo
	for i := from; i < len(s); i++ {
		if !trigger[s[i]] { // the common case, kept out of a call
			continue
		}
		start, end := matchAt(s, i, &m)
		if end <= start {
			continue
		}
		for j := start + 1; j < end && end < len(s); j++ {
			// A token or a JWT inside ends where the match's run of token
			// characters ends, as the match does; what can reach further
			// is a PEM block, an Authorization value after its space and a
			// URL's userinfo.
			if c := s[j]; !trigger[c] || c == 'g' || c == 'e' {
				continue
			}
			if _, e := matchAt(s, j, &memo{}); e > end {
				end = e
			}
		}
		return start, end
	}
	return -1, -1
}

// writer redacts each Write before passing it on.
type writer struct{ w io.Writer }

// NewWriter returns a writer that passes each Write to w through String: for
// a program's error stream, where each message is one Write (fmt.Fprintf).
// A credential split across two Writes is not recognised.
func NewWriter(w io.Writer) io.Writer { return writer{w} }

func (w writer) Write(p []byte) (int, error) {
	s := string(p)
	r := String(s)
	if len(r) == len(s) && r == s {
		return w.w.Write(p)
	}
	if _, err := io.WriteString(w.w, r); err != nil {
		return 0, err
	}
	return len(p), nil
}
