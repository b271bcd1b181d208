package logredact

import (
	"bytes"
	"encoding/base64"
	"strings"
)

// Minimum lengths below which a match is taken for ordinary text. No form
// has a maximum or a fixed length: GitHub's tokens grow. Since 2026-04-27
// GitHub mints App installation tokens as ghs_APPID_JWT, about 520
// characters and varying, with dots, underscores and dashes after the
// prefix (GitHub Docs, "Generating an installation access token for a
// GitHub App", note on the stateless format; GitHub changelog 2026-04-24,
// "Notice about upcoming new format for GitHub App installation tokens",
// and 2026-05-15, "GitHub App installation tokens: Per-request override
// header").
const (
	minGitHubToken      = 8   // characters after a ghX_ prefix
	minGluedGitHubToken = 30  // the same, when the prefix stands inside a word
	minPAT              = 20  // characters after github_pat_
	minSchemeValue      = 8   // characters after "Bearer ", "RemoteAuth " or "Basic "
	minTokenValue       = 20  // characters after "token " (with a digit)
	minBlob             = 100 // a base64 run starting "ey" taken for a JIT config
	minJWTSegment       = 4   // each of a JWT's first three segments
)

// trigger marks the bytes a credential's match can start from (case folded
// where the form is case-insensitive).
var trigger = func() (t [256]bool) {
	for _, c := range "gebBrRtTaA-:" {
		t[c] = true
	}
	return t
}()

// candidate is a cheap test of the byte after a trigger before the full
// match.
func candidate(c, n byte) bool {
	switch c {
	case 'g':
		return n == 'h' || n == 'i' // gh…, or gi… of github_pat_
	case 'e':
		return n == 'y'
	case 'b', 'B':
		return n|0x20 == 'e' || n|0x20 == 'a'
	case 'r', 'R':
		return n|0x20 == 'e'
	case 't', 'T':
		return n|0x20 == 'o'
	case 'a', 'A':
		return n|0x20 == 'u'
	case '-':
		return n == '-'
	case ':':
		return n == '/'
	}
	return false
}

// matchAt returns the span of the credential whose match starts at i, or
// an empty span. A form that starts inside a word ("x" + a token glued to
// it) must show a stronger shape than one after a space or punctuation:
// "highs_0123" is a word, a JWT whose header names its "alg" is not.
func matchAt(s string, i int, m *memo) (int, int) {
	c := s[i]
	if !trigger[c] || i+1 == len(s) || !candidate(c, s[i+1]) {
		return i, i
	}
	glued := i > 0 && wordByte(s[i-1])
	switch c {
	case 'g':
		return i, githubToken(s, i, glued)
	case 'e':
		return i, jwtOrBlob(s, i, glued, m)
	case 'b', 'B', 'r', 'R', 't', 'T':
		if glued { // the "token " at the end of "mytoken "
			return i, i
		}
		return i, schemeValue(s, i)
	case 'a', 'A':
		return authorizationValue(s, i)
	case '-':
		return i, pemKey(s, i)
	case ':':
		return userinfoPassword(s, i)
	}
	return i, i
}

// githubToken matches ghp_, gho_, ghs_, ghu_, ghr_ and github_pat_ tokens
// at i and returns their end (or i). The body is any run of token
// characters, so the 2026 installation tokens (ghs_ + app id + _ + a JWT)
// and ghs_ + a JWT alone match whole, whatever their length.
func githubToken(s string, i int, glued bool) int {
	rest := s[i:]
	var body, least int
	switch {
	case len(rest) > 4 && rest[1] == 'h' && rest[3] == '_' && strings.IndexByte("pousr", rest[2]) >= 0:
		body, least = 4, minGitHubToken
	case strings.HasPrefix(rest, "github_pat_"):
		body, least = len("github_pat_"), minPAT
	default:
		return i
	}
	if glued {
		least = max(least, minGluedGitHubToken)
	}
	v := rest[body:]
	n := trimDots(v, run(v, credChar))
	if n < least {
		return i
	}
	return i + body + n
}

// memo carries what one failed match at i proves of the positions after
// it, so a scan does not test again what cannot match: a long run of
// "-eyJ" is scanned once, not once for each.
type memo struct {
	noJWT  int // no JWT starts before this
	noBlob int // no JIT blob starts before this
}

// jwtOrBlob matches at i a JWT (three or more base64url segments, the first
// a JSON object: "eyJ") or a long base64 run of a JSON object (a JIT config:
// "eyI" or "eyJ", at least minBlob characters). Either runs on to the end
// of the token characters it stands in.
func jwtOrBlob(s string, i int, glued bool, m *memo) int {
	rest := s[i:]
	if len(rest) < 3 || rest[1] != 'y' || (rest[2] != 'J' && rest[2] != 'I') {
		return i
	}
	// Inside a word the bounded test of the decoded start comes first, so
	// that a long run of "xeyJ" is not scanned once for each.
	if rest[2] == 'J' && i >= m.noJWT && (!glued || decodedHas(rest, base64URL, base64.RawURLEncoding, `"alg"`)) {
		n, first := jwtLen(rest)
		if n > 0 {
			return extend(s, i+n)
		}
		// A later start in the same first segment has the same segments
		// after it and a shorter first one.
		m.noJWT = i + first
	}
	if i >= m.noBlob && (!glued || decodedHas(rest, base64Body, base64.RawStdEncoding, `{".runner"`, `{".credentials`)) {
		n := run(rest, base64Std)
		if n >= minBlob {
			return extend(s, i+n)
		}
		m.noBlob = i + n // a later start in the run is shorter still
	}
	return i
}

// jwtLen is the length of the JWT's first three segments at the start of
// s, or 0, and the length of its first segment.
func jwtLen(s string) (n, first int) {
	segs := 0
	for {
		m := run(s[n:], base64URL)
		if segs == 0 {
			first = m
		}
		if m < minJWTSegment {
			break
		}
		n += m
		segs++
		if segs == 3 || n >= len(s) || s[n] != '.' {
			break
		}
		n++
	}
	if segs < 3 {
		return 0, first
	}
	return n, first
}

// decodedHas decodes the start of the base64 run of class k at the start
// of s (at most 96 characters) and reports whether it holds any of want.
func decodedHas(s string, k class, enc *base64.Encoding, want ...string) bool {
	n := run(s[:min(len(s), 96)], k) &^ 3
	var buf [72]byte
	m, err := enc.Decode(buf[:], []byte(s[:n]))
	if err != nil {
		return false
	}
	for _, w := range want {
		if bytes.Contains(buf[:m], []byte(w)) {
			return true
		}
	}
	return false
}

// schemes are the Authorization schemes whose value follows a space, and
// the test a value must pass.
var schemes = []struct {
	name string
	ok   func(v string) bool
}{
	{"bearer ", func(v string) bool { return len(v) >= minSchemeValue }},
	{"remoteauth ", func(v string) bool { return len(v) >= minSchemeValue }},
	{"token ", func(v string) bool { return len(v) >= minTokenValue && hasDigit(v) }},
	{"basic ", basicCredentials},
}

// schemeValue matches "Bearer x", "RemoteAuth x", "token x" and "Basic x"
// (any case) at i and returns the end of x; the scheme's name is redacted
// with it.
func schemeValue(s string, i int) int {
	rest := s[i:]
	for _, sc := range schemes {
		if len(rest) <= len(sc.name) || !strings.EqualFold(rest[:len(sc.name)], sc.name) {
			continue
		}
		v := rest[len(sc.name):]
		n := trimDots(v, run(v, credChar))
		if !sc.ok(v[:n]) {
			return i
		}
		return i + len(sc.name) + n
	}
	return i
}

// authorizationValue matches, after "Authorization:" (any case, also
// "Authorization=" and a JSON key), a value of any length in one of the
// schemes and returns its span: the header's name stays.
func authorizationValue(s string, i int) (int, int) {
	const name = "authorization"
	if len(s)-i <= len(name) || !strings.EqualFold(s[i:i+len(name)], name) {
		return i, i
	}
	j := i + len(name)
	if j < len(s) && s[j] == '"' {
		j++
	}
	if j >= len(s) || (s[j] != ':' && s[j] != '=') {
		return i, i
	}
	for j++; j < len(s) && (s[j] == ' ' || s[j] == '"' || s[j] == '['); j++ {
	}
	v := s[j:]
	for _, sc := range schemes {
		if len(v) <= len(sc.name) || !strings.EqualFold(v[:len(sc.name)], sc.name) {
			continue
		}
		w := v[len(sc.name):]
		if n := trimDots(w, run(w, credChar)); n > 0 {
			return j, j + len(sc.name) + n
		}
	}
	return i, i
}

// basicCredentials: a Basic value is base64 of "user:password" (git sends
// "x-access-token:TOKEN" so), printable once decoded; "basic usage" is not.
func basicCredentials(v string) bool {
	if len(v) < minSchemeValue {
		return false
	}
	n := run(v[:min(len(v), 96)], base64Body) &^ 3
	var buf [72]byte
	m, err := base64.RawStdEncoding.Decode(buf[:], []byte(v[:n]))
	if err != nil || bytes.IndexByte(buf[:m], ':') < 0 {
		return false
	}
	for _, b := range buf[:m] {
		if b < 0x20 || b > 0x7e {
			return false
		}
	}
	return true
}

// pemKey matches a PEM private key block at i (to its END line, or to the
// end of s when that is missing).
func pemKey(s string, i int) int {
	rest := s[i:]
	if !strings.HasPrefix(rest, "-----BEGIN ") {
		return i
	}
	line, _, _ := strings.Cut(rest[len("-----BEGIN "):], "-----")
	if !strings.HasSuffix(line, "PRIVATE KEY") || !pemLabel(line) {
		return i
	}
	endLine := "-----END " + line + "-----"
	if j := strings.Index(rest, endLine); j >= 0 {
		return i + j + len(endLine)
	}
	return len(s)
}

// pemLabel: a PEM label is capitals, digits and spaces ("RSA PRIVATE KEY",
// "OPENSSH PRIVATE KEY"); "000[redacted]PRIVATE KEY" is not one.
func pemLabel(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ') {
			return false
		}
	}
	return true
}

// userinfoPassword matches the password of a URL's userinfo at the "://"
// at i ("https://x-access-token:TOKEN@host"), whatever its shape, and
// returns its span; the user name stays unless it holds a credential too.
func userinfoPassword(s string, i int) (int, int) {
	if i+2 >= len(s) || s[i+2] != '/' {
		return i, i
	}
	u := i + 3
	end := u + run(s[u:], userinfo)
	if end >= len(s) || s[end] != '@' {
		return i, i
	}
	colon := strings.IndexByte(s[u:end], ':')
	if colon < 0 || u+colon+1 == end {
		return i, i // a user name alone ("git@") or an empty password
	}
	if Contains(s[u : u+colon]) {
		return u, end
	}
	return u + colon + 1, end
}

// extend runs a match ending at end on to the end of the token characters
// it stands in: what is glued to a credential goes with it.
func extend(s string, end int) int {
	return end + trimDots(s[end:], run(s[end:], credChar))
}

// trimDots is n less the dots that end s[:n]: the full stop after a token
// is not part of it.
func trimDots(s string, n int) int {
	for n > 0 && s[n-1] == '.' {
		n--
	}
	return n
}

type class uint8

const (
	base64URL  class = 1 << iota // A-Za-z0-9-_
	base64Std                    // A-Za-z0-9+/=
	base64Body                   // A-Za-z0-9+/
	credChar                     // what a token or a header's value is made of
	word                         // A-Za-z0-9_
	userinfo                     // RFC 3986 userinfo: unreserved, %, sub-delims, ':'
)

var classes = func() (t [256]class) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		if b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' {
			t[c] |= base64URL | base64Std | base64Body | credChar | word | userinfo
		}
	}
	for _, c := range "_-" {
		t[c] |= base64URL | credChar
	}
	t['_'] |= word
	for _, c := range "+/" {
		t[c] |= base64Std | base64Body | credChar
	}
	t['='] |= base64Std | credChar
	for _, c := range ".~" {
		t[c] |= credChar
	}
	for _, c := range "-._~%!$&'()*+,;=:" {
		t[c] |= userinfo
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

// wordByte: a credential's match that starts inside a word must show a
// stronger shape (matchAt).
func wordByte(b byte) bool { return classes[b]&word != 0 }

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}
