package main

import (
	"strings"
	"testing"
)

// Linear, quadratic and flat series give exponents 1, 2 and 0; the fastest
// of repeated runs counts.
func TestFit(t *testing.T) {
	in := `BenchmarkGrowth/lin=10-2   3   1000000 ns/op   500 B/op   1 allocs/op
BenchmarkGrowth/lin=10-2   3   900000 ns/op   500 B/op   1 allocs/op
BenchmarkGrowth/lin=40-2   3   3600000 ns/op   2000 B/op   1 allocs/op
BenchmarkGrowth/lin=160-2   3   14400000 ns/op   8000 B/op   1 allocs/op
BenchmarkGrowth/quad=10-2   3   100 ns/op
BenchmarkGrowth/quad=100-2   3   10000 ns/op
BenchmarkGrowth/flat=1-2   3   50 ns/op   7 B/op
BenchmarkGrowth/flat=8-2   3   50 ns/op   7 B/op
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| lin | 10: 900 µs, 0.0; 40: 3.6 ms, 0.0; 160: 14.4 ms, 0.0 | 1.00 | 1.00 |", "| quad | 10: 0 µs, 0.0; 100: 10 µs, 0.0 | 2.00 | - |",
		"| flat | 1: 0 µs, 0.0; 8: 0 µs, 0.0 | 0.00 | 0.00 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := run(strings.NewReader("nothing here\n"), &out); err == nil {
		t.Error("no benchmark lines: want an error")
	}
}
