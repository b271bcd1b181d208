// Package logredact removes credentials from text on its way out: a
// wrapping slog.Handler, the last handler of every program, and String for
// text that is not a log record (an error printed to the user).
//
// It is the last line, not the first: code must not log a credential in the
// first place. It recognises what GitHub and its Actions service hand out:
// JWTs (App JWTs, admin, queue and runner tokens of the Actions service),
// GitHub tokens (ghp_, gho_, ghs_, ghu_, ghr_, github_pat_), encoded JIT
// runner configurations (base64 of a JSON object of the runner's files),
// values after the Authorization schemes Bearer, RemoteAuth and token, and
// PEM private keys. Each is replaced by Marker; everything else (ids,
// UUIDs, checksums, runner names, URLs) is kept as it is.
package logredact

import (
	"io"
	"strings"
)

// Marker replaces each credential found.
const Marker = "[redacted]"

// Minimum lengths below which a match is taken for ordinary text.
const (
	minGitHubToken = 8   // characters after a ghX_ prefix
	minPAT         = 20  // characters after github_pat_
	minSchemeValue = 8   // characters after "Bearer " or "RemoteAuth "
	minTokenValue  = 20  // characters after "token " (with a digit)
	minBlob        = 100 // a base64 run starting "ey" taken for a JIT config
	minJWTSegment  = 4   // each of a JWT's three segments
)

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

// trigger marks the bytes a credential can start with (case folded where
// the form is case-insensitive).
var trigger = func() (t [256]bool) {
	for _, c := range "gebBrRtT-" {
		t[c] = true
	}
	return t
}()

// second is the second byte of the credentials starting with a trigger
// byte, lower[c] the bit that folds it to lower case where the form is
// case-insensitive: a cheap test before the full match.
var second, lower = func() (sec, low [256]byte) {
	for _, p := range []struct {
		first, second string
		fold          bool
	}{{"g", "h", false}, {"e", "y", false}, {"bB", "e", true}, {"rR", "e", true}, {"tT", "o", true}, {"-", "-", false}} {
		for _, c := range []byte(p.first) {
			sec[c] = p.second[0]
			if p.fold {
				low[c] = 0x20
			}
		}
	}
	return sec, low
}()

// next finds the first credential in s at or after from and returns its
// span, or -1, -1.
func next(s string, from int) (int, int) {
	for i := from; i < len(s); i++ {
		c := s[i]
		if !trigger[c] || i+1 == len(s) || (i > 0 && wordByte(s[i-1])) {
			continue
		}
		if n := s[i+1] | lower[c]; n != second[c] && (c != 'g' || n != 'i') { // gh…, or gi… of github_pat_
			continue
		}
		var end int
		switch c {
		case 'g':
			end = githubToken(s, i)
		case 'e':
			end = jwtOrBlob(s, i)
		case 'b', 'B', 'r', 'R', 't', 'T':
			end = schemeValue(s, i)
		case '-':
			end = pemKey(s, i)
		}
		if end > i {
			return i, end
		}
	}
	return -1, -1
}

// githubToken matches ghp_, gho_, ghs_, ghu_, ghr_ and github_pat_ tokens
// at i and returns their end (or i).
func githubToken(s string, i int) int {
	rest := s[i:]
	if len(rest) > 4 && rest[0] == 'g' && rest[1] == 'h' && rest[3] == '_' && strings.IndexByte("pousr", rest[2]) >= 0 {
		if n := run(rest[4:], alnum); n >= minGitHubToken {
			return i + 4 + n
		}
	}
	if strings.HasPrefix(rest, "github_pat_") {
		if n := run(rest[len("github_pat_"):], alnumUnderscore); n >= minPAT {
			return i + len("github_pat_") + n
		}
	}
	return i
}

// jwtOrBlob matches at i a JWT (three base64url segments, the first a JSON
// object: "eyJ") or a long base64 run of a JSON object (a JIT config:
// "eyI" or "eyJ", at least minBlob characters).
func jwtOrBlob(s string, i int) int {
	rest := s[i:]
	if len(rest) < 3 || rest[1] != 'y' || (rest[2] != 'J' && rest[2] != 'I') {
		return i
	}
	// A JWT: segment.segment.segment of base64url.
	if rest[2] == 'J' {
		n, segs := 0, 0
		for segs < 3 {
			m := run(rest[n:], base64URL)
			if m < minJWTSegment {
				break
			}
			n += m
			segs++
			if segs < 3 {
				if n >= len(rest) || rest[n] != '.' {
					break
				}
				n++
			}
		}
		if segs == 3 {
			return i + n
		}
	}
	if n := run(rest, base64Std); n >= minBlob {
		return i + n
	}
	return i
}

// schemes are the Authorization schemes whose value follows a space.
var schemes = []struct {
	name string
	min  int
}{
	{"bearer ", minSchemeValue},
	{"remoteauth ", minSchemeValue},
	{"token ", minTokenValue},
}

// schemeValue matches "Bearer x", "RemoteAuth x" and "token x" (any case)
// at i and returns the end of x; the scheme's name is redacted with it.
func schemeValue(s string, i int) int {
	rest := s[i:]
	for _, sc := range schemes {
		if len(rest) <= len(sc.name) || !strings.EqualFold(rest[:len(sc.name)], sc.name) {
			continue
		}
		v := rest[len(sc.name):]
		n := run(v, credChar)
		if n < sc.min || (sc.name == "token " && !hasDigit(v[:n])) {
			return i
		}
		return i + len(sc.name) + n
	}
	return i
}

// pemKey matches a PEM private key block at i (to its END line, or to the
// end of s when that is missing).
func pemKey(s string, i int) int {
	rest := s[i:]
	if !strings.HasPrefix(rest, "-----BEGIN ") {
		return i
	}
	line, _, _ := strings.Cut(rest[len("-----BEGIN "):], "-----")
	if !strings.HasSuffix(line, "PRIVATE KEY") {
		return i
	}
	endLine := "-----END " + line + "-----"
	if j := strings.Index(rest, endLine); j >= 0 {
		return i + j + len(endLine)
	}
	return len(s)
}

type class uint8

const (
	alnum class = 1 << iota
	alnumUnderscore
	base64URL
	base64Std
	credChar
	word
)

var classes = func() (t [256]class) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		isAlnum := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
		if isAlnum {
			t[c] |= alnum | alnumUnderscore | base64URL | base64Std | credChar | word
		}
		switch b {
		case '_':
			t[c] |= alnumUnderscore | base64URL | credChar | word
		case '-':
			t[c] |= base64URL | credChar
		case '+', '/', '=':
			t[c] |= base64Std | credChar
		case '.', '~':
			t[c] |= credChar
		}
	}
	return t
}()

// run is the length of the prefix of s of bytes in class k.
func run(s string, k class) int {
	for i := 0; i < len(s); i++ {
		if classes[s[i]]&k == 0 {
			return i
		}
	}
	return len(s)
}

// wordByte: a credential does not start inside a word (an "eyJ" inside a
// longer base64 run, a "token " at the end of "mytoken ").
func wordByte(b byte) bool { return classes[b]&word != 0 }

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
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
