// Package units formats and parses the quantities memscope prints: sizes in
// binary units (KiB, MiB, GiB, TiB) and relative times in microseconds.
//
// Every size and time shown to a user goes through this package, so one rule
// holds everywhere:
//
//   - Bytes prints whole bytes below 1 KiB ("512 B"); at and above, exactly
//     two decimals in the largest unit whose rounded value stays below 1024
//     ("1.00 KiB", "37.20 MiB", "12.34 GiB"). Values of one unit therefore
//     line up on the decimal point when right-aligned in a column.
//   - Duration prints three significant digits ("850 µs", "1.23 ms",
//     "12.3 ms", "456 ms", "4.56 s"), whole seconds from 1000 s on.
//
// Both round half away from zero, with integer arithmetic, so the printed
// value never depends on float rounding. Negative values carry a leading "-".
// JSON output does not use this package: it carries raw bytes and µs.
package units

import (
	"math/bits"
	"strconv"
)

// sizeUnits are the binary units Bytes uses; sizeUnits[k] is 1024^k bytes.
var sizeUnits = [...]string{"B", "KiB", "MiB", "GiB", "TiB"}

// Bytes formats n bytes in binary units; see the package comment for the rule.
func Bytes(n int64) string {
	neg, u := magnitude(n)
	if u < 1024 {
		return sign(neg) + strconv.FormatUint(u, 10) + " B"
	}
	// Hundredths of the unit, rounded; move up a unit while the rounded
	// value reaches 1024.00, so 1 MiB − 1 B prints "1.00 MiB", not "1024.00 KiB".
	k := 1
	h := roundDiv(u, 100, 1<<10)
	for h >= 1024*100 && k < len(sizeUnits)-1 {
		k++
		h = roundDiv(u, 100, 1<<(10*k))
	}
	return sign(neg) + strconv.FormatUint(h/100, 10) + "." + twoDigits(h%100) + " " + sizeUnits[k]
}

// Duration formats us microseconds with three significant digits: "850 µs",
// "1.23 ms", "12.3 ms", "456 ms", "4.56 s", "12.3 s", "456 s", then whole
// seconds ("3600 s").
func Duration(us int64) string {
	neg, u := magnitude(us)
	if u < 1000 {
		return sign(neg) + strconv.FormatUint(u, 10) + " µs"
	}
	for _, unit := range [...]struct {
		name string
		div  uint64 // µs per unit
	}{{"ms", 1e3}, {"s", 1e6}} {
		// Try 2, 1 then 0 decimals: the first whose rounded value has at
		// most three digits gives three significant digits.
		for dec, scale := 2, uint64(100); dec >= 0; dec, scale = dec-1, scale/10 {
			r := roundDiv(u, scale, unit.div)
			if r < 1000 || (unit.name == "s" && dec == 0) {
				return sign(neg) + fixed(r, dec) + " " + unit.name
			}
		}
	}
	panic("invariant violation: Duration fell through its units")
}

// magnitude splits n into its sign and absolute value; it is exact for
// math.MinInt64.
func magnitude(n int64) (neg bool, u uint64) {
	if n < 0 {
		return true, uint64(-(n + 1)) + 1
	}
	return false, uint64(n)
}

func sign(neg bool) string {
	if neg {
		return "-"
	}
	return ""
}

// roundDiv returns u×mul/div rounded half up, computed in 128 bits so that
// no int64 input overflows. mul must be smaller than div.
func roundDiv(u, mul, div uint64) uint64 {
	hi, lo := bits.Mul64(u, mul)
	q, r := bits.Div64(hi, lo, div)
	if r >= div-r { // r ≥ div/2 without overflow
		q++
	}
	return q
}

// fixed formats r/10^dec with exactly dec decimals.
func fixed(r uint64, dec int) string {
	switch dec {
	case 0:
		return strconv.FormatUint(r, 10)
	case 1:
		return strconv.FormatUint(r/10, 10) + "." + strconv.FormatUint(r%10, 10)
	case 2:
		return strconv.FormatUint(r/100, 10) + "." + twoDigits(r%100)
	}
	panic("invariant violation: fixed called with " + strconv.Itoa(dec) + " decimals")
}

func twoDigits(v uint64) string {
	if v < 10 {
		return "0" + strconv.FormatUint(v, 10)
	}
	return strconv.FormatUint(v, 10)
}
