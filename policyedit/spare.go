package policyedit

import (
	"fmt"
	"strconv"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// Spare is a policy's spare setting as people write it: "auto" (sized by
// the day: rm.SpareAuto), or a fixed number of warm spares, 0 to
// rm.MaxSpare. It reads from a flag and from a policy file (a number or
// "auto").
type Spare int

// ParseSpare reads a spare setting.
func ParseSpare(s string) (Spare, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "auto") {
		return Spare(rm.SpareAuto), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > rm.MaxSpare {
		return 0, rm.WithClass(rm.ClassInvalid, fmt.Errorf("%q is neither auto (spares sized by the day, the default) nor a number of warm spares from 0 (none) to %d", s, rm.MaxSpare))
	}
	return Spare(n), nil
}

// String is the setting as ParseSpare reads it.
func (s Spare) String() string {
	if int(s) == rm.SpareAuto {
		return "auto"
	}
	return strconv.Itoa(int(s))
}

// UnmarshalText reads a flag's value.
func (s *Spare) UnmarshalText(b []byte) error {
	v, err := ParseSpare(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// UnmarshalTOML reads a policy file's value: a number or "auto".
func (s *Spare) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case int64:
		return s.UnmarshalText([]byte(strconv.FormatInt(v, 10)))
	case string:
		return s.UnmarshalText([]byte(v))
	}
	return rm.WithClass(rm.ClassInvalid, fmt.Errorf("spare %v is neither auto nor a number of warm spares", v))
}
