package units

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// parseUnits maps a lower-cased unit suffix to its size in bytes. Binary
// units are powers of 1024, decimal ones (kB, MB, GB, TB) powers of 1000, as
// their names say.
var parseUnits = map[string]int64{
	"":    1,
	"b":   1,
	"kib": 1 << 10,
	"mib": 1 << 20,
	"gib": 1 << 30,
	"tib": 1 << 40,
	"kb":  1e3,
	"mb":  1e6,
	"gb":  1e9,
	"tb":  1e12,
}

// ambiguousUnits are suffixes that some tools read as binary and others as
// decimal; ParseBytes refuses them rather than guess.
var ambiguousUnits = map[string]string{
	"k": "KiB (2^10) or kB (10^3)",
	"m": "MiB (2^20) or MB (10^6)",
	"g": "GiB (2^30) or GB (10^9)",
	"t": "TiB (2^40) or TB (10^12)",
}

// ParseBytes parses a size such as "40GiB", "40 GiB", "1.5GiB", "512MiB",
// "40GB" or "1073741824". The number is a non-negative decimal, with an
// optional fraction; the unit, matched without regard to case, is B, KiB, MiB,
// GiB, TiB (powers of 1024) or kB, MB, GB, TB (powers of 1000), and a number
// without a unit is bytes. Fractions of a larger unit round to the nearest
// byte, half up; a fraction of a byte is an error. The error says what was
// wrong with s, for example:
//
//	size "40 G": ambiguous unit "G": write GiB (2^30) or GB (10^9)
func ParseBytes(s string) (int64, error) {
	n, err := parseBytes(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	return n, nil
}

func parseBytes(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	if s[0] == '-' {
		return 0, errors.New("negative")
	}
	// The number: digits, optionally "." and more digits.
	i, dot, digits := 0, false, 0
	for ; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			digits++
		} else if c == '.' && !dot {
			dot = true
		} else {
			break
		}
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	if digits == 0 {
		return 0, errors.New("no number (want a number of bytes or a number and a unit, as in 40GiB)")
	}
	mult, ok := parseUnits[strings.ToLower(unit)]
	if !ok {
		if want, ok := ambiguousUnits[strings.ToLower(unit)]; ok {
			return 0, fmt.Errorf("ambiguous unit %q: write %s", unit, want)
		}
		return 0, fmt.Errorf("unknown unit %q (want B, KiB, MiB, GiB, TiB, kB, MB, GB or TB)", unit)
	}
	if strings.HasSuffix(num, ".") {
		num += "0" // "1.GiB" reads as 1.0 GiB; big.Rat wants digits after the dot
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("bad number %q", num) // unreachable: num is digits and one dot
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if mult == 1 && !r.IsInt() {
		return 0, fmt.Errorf("%s is not a whole number of bytes", num)
	}
	// Round half up: floor(r + 1/2).
	r.Add(r, big.NewRat(1, 2))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() {
		return 0, errors.New("too large (more than 2^63−1 bytes)")
	}
	return q.Int64(), nil
}

// ParseDuration parses a duration such as "1.5s", "250ms", "1200us" or
// "1200µs" into whole microseconds.
func ParseDuration(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mul := 0.0
	for _, u := range []struct {
		suffix string
		us     float64
	}{{"ms", 1e3}, {"us", 1}, {"µs", 1}, {"s", 1e6}, {"m", 60e6}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.us
			break
		}
	}
	if mul == 0 {
		return 0, fmt.Errorf("duration %q: want a number and a unit (s, ms, us), e.g. 1.5s", s)
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*mul > 9e18 {
		return 0, fmt.Errorf("duration %q: want a non-negative number and a unit (s, ms, us)", s)
	}
	return int64(v*mul + 0.5), nil
}
