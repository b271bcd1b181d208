package runnermanager

import (
	"crypto/rand"
	"database/sql/driver"
	"encoding/base32"
	"fmt"
	"strings"
)

// idEncoding prints an ID as 26 lowercase letters and digits: short enough for
// a runner name, safe in paths, URLs and TOML keys.
var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// rawID is 16 random bytes. The zero value means "none".
type rawID [16]byte

func newRawID() rawID {
	var r rawID
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails (Go 1.24+).
	return r
}

func parseRawID(kind, s string) (rawID, error) {
	var r rawID
	if s == "" {
		return r, nil
	}
	lower := strings.ToLower(s)
	b, err := idEncoding.DecodeString(lower)
	if err != nil || len(b) != len(r) {
		return r, invalidf("%q is not %s id (26 letters and digits)", s, article(kind))
	}
	copy(r[:], b)
	// The last character carries 3 bits; refuse the spellings that differ
	// only in the unused ones, so that one ID has exactly one string form.
	// All zeros is the "none" ID, which has no string form to suggest.
	if r.IsZero() {
		return rawID{}, invalidf("%q is not %s id (all zeros means none)", s, article(kind))
	}
	if r.String() != lower {
		return rawID{}, invalidf("%q is not %s id (did you mean %s?)", s, article(kind), r)
	}
	return r, nil
}

// article puts "a" or "an" before an ID's kind ("an attempt", "a host").
func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// IsZero reports whether the ID is the zero "none" value.
func (r rawID) IsZero() bool { return r == rawID{} }

// String returns the printable form, or "" for the zero ID.
func (r rawID) String() string {
	if r.IsZero() {
		return ""
	}
	return idEncoding.EncodeToString(r[:])
}

// MarshalText implements encoding.TextMarshaler.
func (r rawID) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Value implements driver.Valuer: the printable form, NULL for the zero ID.
func (r rawID) Value() (driver.Value, error) {
	if r.IsZero() {
		return nil, nil
	}
	return r.String(), nil
}

func (r *rawID) scan(kind string, src any) error {
	switch v := src.(type) {
	case nil:
		*r = rawID{}
		return nil
	case string:
		p, err := parseRawID(kind, v)
		*r = p
		return err
	case []byte:
		p, err := parseRawID(kind, string(v))
		*r = p
		return err
	default:
		return fmt.Errorf("cannot scan %T into a %s id", src, kind)
	}
}

// HostID names a host. The zero value means "none".
type HostID struct{ rawID }

// PolicyID names a policy. The zero value means "none".
type PolicyID struct{ rawID }

// AttemptID names an attempt. The zero value means "none".
type AttemptID struct{ rawID }

// NewHostID returns a random host ID.
func NewHostID() HostID { return HostID{newRawID()} }

// NewPolicyID returns a random policy ID.
func NewPolicyID() PolicyID { return PolicyID{newRawID()} }

// NewAttemptID returns a random attempt ID.
func NewAttemptID() AttemptID { return AttemptID{newRawID()} }

// ParseHostID parses the printable form of a host ID ("" gives the zero ID).
func ParseHostID(s string) (HostID, error) { r, err := parseRawID("host", s); return HostID{r}, err }

// ParsePolicyID parses the printable form of a policy ID ("" gives the zero ID).
func ParsePolicyID(s string) (PolicyID, error) {
	r, err := parseRawID("policy", s)
	return PolicyID{r}, err
}

// ParseAttemptID parses the printable form of an attempt ID ("" gives the zero ID).
func ParseAttemptID(s string) (AttemptID, error) {
	r, err := parseRawID("attempt", s)
	return AttemptID{r}, err
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *HostID) UnmarshalText(b []byte) (err error) { *id, err = ParseHostID(string(b)); return }

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *PolicyID) UnmarshalText(b []byte) (err error) { *id, err = ParsePolicyID(string(b)); return }

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *AttemptID) UnmarshalText(b []byte) (err error) {
	*id, err = ParseAttemptID(string(b))
	return
}

// Scan implements sql.Scanner.
func (id *HostID) Scan(src any) error { return id.scan("host", src) }

// Scan implements sql.Scanner.
func (id *PolicyID) Scan(src any) error { return id.scan("policy", src) }

// Scan implements sql.Scanner.
func (id *AttemptID) Scan(src any) error { return id.scan("attempt", src) }
