package configfile

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/bytesize"
)

// Size is a number of bytes written the way people write memory and disk
// sizes: "2GiB", "512MiB", "1.5G", "10GB", "4096". Single letters and the
// "iB" forms are binary (K = KiB = 1024); "kB", "MB", "GB", "TB" are decimal
// (powers of 1000), as disk vendors use them. A number needs its unit
// ("4096B" for bytes): "1.5" is refused rather than read as 2 bytes; only
// a bare 0 is taken as it is.
type Size uint64

var sizeUnits = map[string]float64{
	"":    1,
	"b":   1,
	"k":   1 << 10,
	"ki":  1 << 10,
	"kib": 1 << 10,
	"m":   1 << 20,
	"mi":  1 << 20,
	"mib": 1 << 20,
	"g":   1 << 30,
	"gi":  1 << 30,
	"gib": 1 << 30,
	"t":   1 << 40,
	"ti":  1 << 40,
	"tib": 1 << 40,
	"kb":  1e3,
	"mb":  1e6,
	"gb":  1e9,
	"tb":  1e12,
}

// ParseSize parses a size such as "2GiB"; see Size. Errors wrap
// runnermanager.ErrInvalid.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return !(unicode.IsDigit(r) || r == '.') })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	mult, ok := sizeUnits[strings.ToLower(unit)]
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("%w: size %q is negative: give a size such as 512MiB or 2GiB", rm.ErrInvalid, s)
	}
	if unit == "" && num != "" && strings.Trim(num, "0.") != "" {
		return 0, fmt.Errorf("%w: size %q has no unit: write it with one, such as %sGiB, %sMiB or %sB (bytes)", rm.ErrInvalid, s, num, num, num)
	}
	if num == "" || !ok {
		return 0, fmt.Errorf("%w: size %q is not a number with a unit such as 512MiB, 2GiB or 1.5G", rm.ErrInvalid, s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: size %q is not a number with a unit such as 512MiB, 2GiB or 1.5G", rm.ErrInvalid, s)
	}
	v := f * mult
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("%w: size %q is too large", rm.ErrInvalid, s)
	}
	return Size(math.Round(v)), nil
}

// Bytes returns the size as a byte count.
func (s Size) Bytes() uint64 { return uint64(s) }

// String prints the size in the largest binary unit that keeps it readable:
// "2GiB", "1.5GiB", "512MiB", "100B".
func (s Size) String() string { return bytesize.Format(uint64(s)) }

// MarshalText implements encoding.TextMarshaler. It prints the exact byte
// count ("1234567B") when the readable form would round.
func (s Size) MarshalText() ([]byte, error) {
	if p, err := ParseSize(s.String()); err == nil && p == s {
		return []byte(s.String()), nil
	}
	return []byte(strconv.FormatUint(uint64(s), 10) + "B"), nil
}

// UnmarshalText implements encoding.TextUnmarshaler (TOML values and flags).
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// UnmarshalTOML implements toml.Unmarshaler: a string is parsed as
// ParseSize does; a TOML integer is a byte count (the file says it is a
// number); a TOML float is refused, as it has no unit.
func (s *Size) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		return s.UnmarshalText([]byte(v))
	case int64:
		if v < 0 {
			return fmt.Errorf("%w: size %d is negative: give a size such as \"512MiB\" or \"2GiB\"", rm.ErrInvalid, v)
		}
		*s = Size(v)
		return nil
	case float64:
		return fmt.Errorf("%w: size %v has no unit: write it as a string with one, such as \"%vGiB\"", rm.ErrInvalid, v, v)
	}
	return fmt.Errorf("%w: a size is a string such as \"2GiB\", not %T", rm.ErrInvalid, v)
}
