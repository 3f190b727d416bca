package testenv

import (
	"flag"
	"testing"
	"time"
)

// FuzzMinimize bounds how long the fuzzer minimizes each new input of f's
// target to d, unless -fuzzminimizetime was given. Go's minimizer tries
// removing every range of bytes of an input, so its time grows with the
// square of the input's size: the default minute spent on one input of a
// few KB (or the 80 KB a snapshot needs to reach the decoder's fast path)
// leaves the fuzzer executing nothing else for the whole minute. Call it
// before f.Fuzz; the coordinator reads the flag there.
func FuzzMinimize(f *testing.F, d time.Duration) {
	f.Helper()
	given := false
	flag.Visit(func(fl *flag.Flag) { given = given || fl.Name == "test.fuzzminimizetime" })
	if given || flag.Lookup("test.fuzzminimizetime") == nil {
		return
	}
	if err := flag.Set("test.fuzzminimizetime", d.String()); err != nil {
		f.Fatalf("setting -fuzzminimizetime: %v", err)
	}
}
