package units

import (
	"math"
	"strings"
	"testing"
)

const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
	TiB = 1 << 40
)

func TestBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{512, "512 B"},
		{1023, "1023 B"},
		{1024, "1.00 KiB"},
		{1025, "1.00 KiB"},
		{1536, "1.50 KiB"},
		{1152, "1.13 KiB"}, // 1.125 exactly: half rounds up
		{1029, "1.00 KiB"}, // 1.00488…
		{1030, "1.01 KiB"}, // 1.00585…
		{10 * KiB, "10.00 KiB"},
		{MiB - 11, "1023.99 KiB"}, // 1023.9893…
		{MiB - 6, "1023.99 KiB"},  // 1023.99414…
		{MiB - 5, "1.00 MiB"},     // 1023.99511… rounds to 1024.00 KiB
		{MiB - 1, "1.00 MiB"},
		{MiB, "1.00 MiB"},
		{MiB + MiB/2, "1.50 MiB"},
		{37*MiB + MiB/5, "37.20 MiB"},
		{GiB - 1, "1.00 GiB"},
		{GiB, "1.00 GiB"},
		{12*GiB + 365072220, "12.34 GiB"},
		{40 * GiB, "40.00 GiB"},
		{141 * GiB, "141.00 GiB"},
		{TiB - 1, "1.00 TiB"},
		{TiB, "1.00 TiB"},
		{2048 * TiB, "2048.00 TiB"}, // no unit above TiB
		{math.MaxInt64, "8388608.00 TiB"},
		{-1, "-1 B"},
		{-1023, "-1023 B"},
		{-1536, "-1.50 KiB"},
		{-(MiB - 1), "-1.00 MiB"},
		{math.MinInt64, "-8388608.00 TiB"},
	} {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		us   int64
		want string
	}{
		{0, "0 µs"},
		{1, "1 µs"},
		{999, "999 µs"},
		{1000, "1.00 ms"},
		{1004, "1.00 ms"},
		{1005, "1.01 ms"}, // half rounds up
		{1234, "1.23 ms"},
		{9994, "9.99 ms"},
		{9995, "10.0 ms"}, // 9.995 rounds to 10.00: one decimal fewer
		{12345, "12.3 ms"},
		{99949, "99.9 ms"},
		{99950, "100 ms"},
		{456000, "456 ms"},
		{999499, "999 ms"},
		{999500, "1.00 s"}, // 999.5 ms rounds to 1000 ms: next unit
		{4_560_000, "4.56 s"},
		{9_995_000, "10.0 s"},
		{12_345_678, "12.3 s"},
		{456_000_000, "456 s"},
		{999_499_999, "999 s"},
		{999_500_000, "1000 s"},
		{3600_000_000, "3600 s"},
		{math.MaxInt64, "9223372036855 s"},
		{-1, "-1 µs"},
		{-1234, "-1.23 ms"},
		{-4_560_000, "-4.56 s"},
		{math.MinInt64, "-9223372036855 s"},
	} {
		if got := Duration(tt.us); got != tt.want {
			t.Errorf("Duration(%d) = %q, want %q", tt.us, got, tt.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want int64
	}{
		{"0", 0},
		{"1", 1},
		{"1024", 1024},
		{"512B", 512},
		{"512 B", 512},
		{"40GiB", 40 * GiB},
		{"40 GiB", 40 * GiB},
		{"  40 GiB  ", 40 * GiB},
		{"40gib", 40 * GiB},
		{"40GIB", 40 * GiB},
		{"512MiB", 512 * MiB},
		{"1.5GiB", GiB + GiB/2},
		{"1.5 KiB", 1536},
		{"0.5KiB", 512},
		{"1.GiB", GiB},
		{".5GiB", GiB / 2},
		{"2TiB", 2 * TiB},
		{"1KiB", KiB},
		{"1kB", 1000},
		{"1KB", 1000},
		{"40GB", 40e9},
		{"40 GB", 40e9},
		{"512MB", 512e6},
		{"1.5GB", 1.5e9},
		{"3TB", 3e12},
		{"1.0001KiB", 1024},     // 1024.1024 rounds down
		{"0.0005KiB", 1},        // 0.512 rounds up
		{"0.00048828125KiB", 1}, // exactly 0.5 B: half rounds up
		{"9223372036854775807", math.MaxInt64},
		{"8388607.99999999999TiB", math.MaxInt64 - 10}, // 2^63 − 10.995,
	} {
		got, err := ParseBytes(tt.s)
		if err != nil || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, nil", tt.s, got, err, tt.want)
		}
	}
}

func TestParseBytesErrors(t *testing.T) {
	for _, tt := range []struct {
		s       string
		wantErr string
	}{
		{"", `size "": empty`},
		{"   ", `size "   ": empty`},
		{"GiB", `size "GiB": no number`},
		{".", `size ".": no number`},
		{"+5", `size "+5": no number`},
		{"-1GiB", `size "-1GiB": negative`},
		{"40 G", `size "40 G": ambiguous unit "G": write GiB (2^30) or GB (10^9)`},
		{"40m", `ambiguous unit "m": write MiB (2^20) or MB (10^6)`},
		{"40 GiBs", `unknown unit "GiBs"`},
		{"1e9", `unknown unit "e9"`},
		{"1,024", `unknown unit ",024"`},
		{"1.2.3", `unknown unit ".3"`},
		{"40 GiB extra", `unknown unit "GiB extra"`},
		{"1.5", `1.5 is not a whole number of bytes`},
		{"1.5B", `1.5 is not a whole number of bytes`},
		{"9223372036854775808", `too large`},
		{"8388608TiB", `too large`},
		{"99999999999999999999999999GB", `too large`},
	} {
		got, err := ParseBytes(tt.s)
		if err == nil {
			t.Errorf("ParseBytes(%q) = %d, nil; want error containing %q", tt.s, got, tt.wantErr)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ParseBytes(%q) error = %q, want it to contain %q", tt.s, err, tt.wantErr)
		}
	}
}

// Every size Bytes prints parses back to within half its last printed digit.
func TestBytesRoundTrip(t *testing.T) {
	for _, n := range []int64{0, 1, 1023, 1024, 1536, MiB - 1, MiB, 37*MiB + 12345, GiB - 1, 12*GiB + 365072220, TiB + 1, 5000 * TiB} {
		s := Bytes(n)
		back, err := ParseBytes(s)
		if err != nil {
			t.Errorf("ParseBytes(Bytes(%d) = %q): %v", n, s, err)
			continue
		}
		unit := map[string]int64{"B": 1, "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB}[strings.Fields(s)[1]]
		tol := unit / 200 // half of 0.01 unit
		if d := back - n; d > tol || d < -tol {
			t.Errorf("ParseBytes(Bytes(%d) = %q) = %d, off by %d, more than %d", n, s, back, d, tol)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1.5s", 1500000, true}, {"250ms", 250000, true}, {"1200us", 1200, true},
		{"7µs", 7, true}, {"2m", 120000000, true}, {"0s", 0, true},
		{"", 0, false}, {"12", 0, false}, {"-1s", 0, false}, {"xs", 0, false},
	} {
		got, err := ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
