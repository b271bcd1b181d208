package configfile

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// The configuration's paths (keys whose field is tagged path:"true") are
// written as a person writes them in a shell: "~/runner-manager",
// "$HOME/tokens/gh", "${STATE}/rm". A file's paths are expanded and, when
// still relative, taken relative to the file's own directory, so that a
// configuration means the same wherever the program is started from (a
// service's working directory is "/"). A value from the environment or a
// flag is a shell's already: only a leading "~" is expanded there (a flag
// written --data-dir=~/x is not expanded by the shell), and a relative one
// stays relative to the current directory.

// ExpandPath expands a leading "~" or "~user" and every $VAR and ${VAR} in
// s, reading variables with lookupEnv; "$$" is a "$". A variable that is
// unset or empty is an error naming it: a path silently missing a part
// would put the journal somewhere unexpected. A relative result is joined
// to base when base is not "". lookupEnv nil is os.LookupEnv.
func ExpandPath(s, base string, lookupEnv func(string) (string, bool)) (string, error) {
	if s == "" {
		return "", nil
	}
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	// The "~" first, on what was written: a variable's value is not read
	// again for a "~" or a "$".
	home, rest, err := splitTilde(s, lookupEnv)
	if err != nil {
		return "", err
	}
	out, err := expandVars(rest, lookupEnv)
	if err != nil {
		return "", err
	}
	if home != "" {
		out = filepath.Join(home, out)
	}
	if base != "" && !filepath.IsAbs(out) {
		out = filepath.Join(base, out)
	}
	return out, nil
}

// ExpandTilde expands a leading "~", "~/…", "~user" or "~user/…" in s,
// and nothing else: for a path a shell has seen already (a flag's, a
// variable's), which a shell leaves alone when written --flag=~/x.
// lookupEnv nil is os.LookupEnv.
func ExpandTilde(s string, lookupEnv func(string) (string, bool)) (string, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	home, rest, err := splitTilde(s, lookupEnv)
	if err != nil || home == "" {
		return rest, err
	}
	return filepath.Join(home, rest), nil
}

// splitTilde splits a leading "~" or "~user" from s, returning that home
// directory ("" when s has no "~") and the rest of s after its separator.
func splitTilde(s string, lookupEnv func(string) (string, bool)) (home, rest string, err error) {
	if !strings.HasPrefix(s, "~") {
		return "", s, nil
	}
	name := s[1:]
	if i := strings.IndexFunc(name, func(r rune) bool { return r == '/' || r == filepath.Separator }); i >= 0 {
		name, rest = name[:i], name[i+1:]
	}
	if name == "" {
		h, err := homeDir(lookupEnv)
		if err != nil || !filepath.IsAbs(h) {
			return "", "", fmt.Errorf("cannot expand ~ in %q: $HOME is not set to a full path", s)
		}
		return h, rest, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return "", "", fmt.Errorf("cannot expand ~%s in %q: no user %q", name, s, name)
	}
	return u.HomeDir, rest, nil
}

// expandVars expands $VAR, ${VAR} and $$. A "$" followed by neither a
// name, "{" nor "$" is kept as it is.
func expandVars(s string, lookupEnv func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		var name string
		switch c := s[i+1]; {
		case c == '$':
			b.WriteByte('$')
			i++
			continue
		case c == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("%q: ${ without its closing }", s)
			}
			name = s[i+2 : i+2+end]
			if !isVarName(name) {
				return "", fmt.Errorf("%q: ${%s} is not a variable name (letters, digits and _)", s, name)
			}
			i += 2 + end
		case isVarStart(c):
			j := i + 1
			for j < len(s) && (isVarStart(s[j]) || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			name = s[i+1 : j]
			i = j - 1
		default:
			b.WriteByte('$')
			continue
		}
		v, ok := lookupEnv(name)
		if !ok {
			return "", fmt.Errorf("%q: $%s is not set (set it, or write the path without it)", s, name)
		}
		if v == "" {
			return "", fmt.Errorf("%q: $%s is empty (set it, or write the path without it)", s, name)
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

func isVarStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isVarName(s string) bool {
	if s == "" || !isVarStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isVarStart(s[i]) && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

// expandPaths expands the configuration's path keys by where each value
// came from: a file's fully and relative to the file's directory, the
// environment's and flags' only for a leading "~".
func (c *File) expandPaths(lookupEnv func(string) (string, bool)) error {
	for _, f := range fields(c) {
		if !f.path {
			continue
		}
		s := f.value.String()
		if s == "" {
			continue
		}
		var (
			out string
			err error
		)
		switch o := c.Origins[f.key]; o.Kind {
		case FromFile:
			var base string
			if base, err = filepath.Abs(filepath.Dir(c.Path)); err == nil {
				out, err = ExpandPath(s, base, lookupEnv)
			}
		case FromEnv, FromFlag:
			out, err = ExpandTilde(s, lookupEnv)
		default:
			continue
		}
		if err != nil {
			return c.errAt(f.key, "%v", err)
		}
		f.value.SetString(out)
	}
	return nil
}
