package trace

import (
	"errors"
	"math"
	"math/big"
	"strconv"
)

var errNumber = errors.New("not a number")

// parseMicrosNS converts a JSON number of microseconds, as Kineto writes ts
// and dur ("5112918828947.834", three decimals: exact nanoseconds), into
// integer nanoseconds without going through float64, which cannot hold
// 16 significant digits. Other spellings (exponents, more decimals) go
// through float64 and are rounded to the nearest nanosecond.
func parseMicrosNS(b []byte) (int64, error) {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		neg, i = true, 1
	}
	var whole int64
	digits := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		whole = whole*10 + int64(b[i]-'0')
		digits++
	}
	if digits == 0 || digits > 18 || whole > (math.MaxInt64-999)/1000 {
		return parseMicrosSlow(b)
	}
	var frac int64
	if i < len(b) && b[i] == '.' {
		i++
		n := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9' && n < 3; i++ {
			frac = frac*10 + int64(b[i]-'0')
			n++
		}
		if n == 0 {
			return 0, errNumber
		}
		for ; n < 3; n++ {
			frac *= 10
		}
	}
	if i != len(b) {
		return parseMicrosSlow(b)
	}
	ns := whole*1000 + frac
	if neg {
		ns = -ns
	}
	return ns, nil
}

func parseMicrosSlow(b []byte) (int64, error) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, errNumber
	}
	ns := math.Round(f * 1000)
	if math.IsNaN(ns) || ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return 0, errNumber
	}
	return int64(ns), nil
}

// parseInt reads a JSON number as int64, rounding non-integers to the
// nearest integer (ties away from zero); null is reported as ok=false.
func parseInt(b []byte) (v int64, ok bool) {
	if len(b) == 0 || b[0] == 'n' {
		return 0, false
	}
	i, neg := 0, false
	if b[0] == '-' {
		neg, i = true, 1
	}
	var n uint64
	start := i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if n > (math.MaxInt64-9)/10 {
			return parseIntSlow(b)
		}
		n = n*10 + uint64(b[i]-'0')
	}
	if i == start || i != len(b) {
		return parseIntSlow(b)
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

func parseIntSlow(b []byte) (int64, bool) {
	if len(b) > 0 && b[0] == '"' { // a number written as a string
		s, err := strconv.Unquote(string(b))
		if err != nil {
			return 0, false
		}
		b = []byte(s)
		if v, err := strconv.ParseInt(s, 0, 64); err == nil {
			return v, true
		}
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	f = math.Round(f)
	if f >= math.MaxInt64 || f <= math.MinInt64 {
		return 0, false
	}
	return int64(f), true
}

// divRound returns n/d as Python's true division of ints does: the float64
// nearest to the exact quotient (ties to even). torch's key_averages divides
// nanosecond ints by 1000 this way before comparing; float64(n)/d would
// round twice.
func divRound(r *big.Rat, n, d int64) float64 {
	if n > -(1<<53) && n < 1<<53 {
		return float64(n) / float64(d) // n exact, one rounding
	}
	r.SetFrac64(n, d)
	f, _ := r.Float64()
	return f
}

// ceilInt returns the least int64 ≥ f and floorInt the greatest ≤ f,
// saturating, so int-vs-float comparisons can be done on ints exactly.
func ceilInt(f float64) int64 { return saturate(math.Ceil(f)) }

func floorInt(f float64) int64 { return saturate(math.Floor(f)) }

// saturate is the integral f as an int64, clamped to its range.
func saturate(c float64) int64 {
	switch {
	case c >= math.MaxInt64:
		return math.MaxInt64
	case c <= math.MinInt64:
		return math.MinInt64
	}
	return int64(c)
}
