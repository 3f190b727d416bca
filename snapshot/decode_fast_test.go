package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// decodeBoth decodes data with the fast path and with the general machine
// alone, and fails unless both give the same snapshot or the same error. It
// returns the number of batches the fast path read.
func decodeBoth(t *testing.T, name string, data []byte) int {
	n, _ := decodeBothJoins(t, name, data)
	return n
}

// decodeBothJoins is decodeBoth, also returning how many times a second
// scanner's tapes were taken.
func decodeBothJoins(t *testing.T, name string, data []byte) (int, int) {
	t.Helper()
	d := newDecoder(name)
	fs, ferr := d.decodeTop(bytes.NewReader(data), int64(len(data)), Options{})
	gs, gerr := newDecoder(name).decodeTop(bytes.NewReader(data), int64(len(data)), Options{generalOnly: true})
	switch {
	case (ferr == nil) != (gerr == nil):
		t.Fatalf("%s: fast path error %v, general machine error %v", name, ferr, gerr)
	case ferr != nil && ferr.Error() != gerr.Error():
		t.Fatalf("%s: errors differ:\nfast:    %v\ngeneral: %v", name, ferr, gerr)
	}
	if !reflect.DeepEqual(fs, gs) {
		t.Fatalf("%s: the fast path's snapshot differs from the general machine's", name)
	}
	// And with the scanner on this goroutine (what small inputs get).
	ds := newDecoder(name)
	ds.fast.serial = true
	ss, serr := ds.decodeTop(bytes.NewReader(data), int64(len(data)), Options{})
	if (serr == nil) != (ferr == nil) || serr != nil && serr.Error() != ferr.Error() || !reflect.DeepEqual(ss, fs) {
		t.Fatalf("%s: the serial fast path differs from the parallel one (errors %v, %v)", name, serr, ferr)
	}
	// And with one scanner goroutine, not two.
	d1 := newDecoder(name)
	d1.fast.serial2 = true
	s1, err1 := d1.decodeTop(bytes.NewReader(data), int64(len(data)), Options{})
	if (err1 == nil) != (ferr == nil) || err1 != nil && err1.Error() != ferr.Error() || !reflect.DeepEqual(s1, fs) {
		t.Fatalf("%s: one scanner differs from two (errors %v, %v)", name, err1, ferr)
	}
	// And with scanner goroutines for windows of a few KB, so that small
	// inputs take the two-scanner path too.
	d2 := newDecoder(name)
	d2.fast.parallelMin = 4 << 10
	s2, err2 := d2.decodeTop(bytes.NewReader(data), int64(len(data)), Options{})
	if (err2 == nil) != (ferr == nil) || err2 != nil && err2.Error() != ferr.Error() || !reflect.DeepEqual(s2, fs) {
		t.Fatalf("%s: scanners for small windows differ (errors %v, %v)", name, err2, ferr)
	}
	return d.fast.batch, d.fast.joins + d2.fast.joins
}

func TestFastPathEqualsGeneral(t *testing.T) {
	files := differentialFiles(t)
	more, _ := filepath.Glob("testdata/*.gz")
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("only %d files", len(files))
	}
	total, joins := 0, 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		n, j := decodeBothJoins(t, path, data)
		total, joins = total+n, joins+j
		// Cut short: the salvaged part must agree too.
		for _, frac := range []int{10, 50, 90} {
			decodeBoth(t, path, data[:len(data)*frac/100])
		}
	}
	// The fixtures' device traces are batches of 1,000 entries: most must
	// take the fast path, or this test checks nothing.
	if total < 25 {
		t.Fatalf("the fast path read only %d batches over %d files", total, len(files))
	}
	if joins == 0 {
		t.Fatal("no second scanner's tapes were taken: the two-scanner path went untested")
	}
	t.Logf("%d files, %d batches read by the fast path, %d second scanners joined", len(files), total, joins)
}
