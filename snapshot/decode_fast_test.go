package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// decodeBoth decodes data with the fast path and with the general machine
// alone, and fails unless both give the same snapshot or the same error and
// that snapshot and its replays pass CheckValid. It returns the number of
// batches the fast path read.
func decodeBoth(t *testing.T, name string, data []byte) int {
	n, _, _ := decodeBothJoins(t, name, data)
	return n
}

// decodeBothJoins is decodeBoth, also returning how many times a second
// scanner's tapes were taken, and how many chunks read ahead were.
func decodeBothJoins(t *testing.T, name string, data []byte) (int, int, int) {
	t.Helper()
	decode := func(set func(f *fastState), opt Options) (*decoder, *Snapshot, error) {
		d := newDecoder(name)
		set(&d.fast)
		s, err := d.decodeTop(bytes.NewReader(data), int64(len(data)), opt)
		return d, s, err
	}
	_, gs, gerr := decode(func(*fastState) {}, Options{generalOnly: true})
	batches, joins, chunkRuns := 0, 0, 0
	for _, v := range []struct {
		what string
		set  func(f *fastState)
	}{
		{"the fast path", func(*fastState) {}},
		{"the fast path reading by windows only", func(f *fastState) { f.noChunks = true }},
		{"the fast path reading chunks of a few KB ahead", func(f *fastState) { f.chunkLen = 8 << 10 }},
		{"the fast path reading chunks of 128 KiB ahead", func(f *fastState) { f.chunkLen = 128 << 10 }},
		{"the fast path with the scanner on the decoding goroutine (what small inputs get)", func(f *fastState) { f.serial = true }},
		{"the fast path with one scanner goroutine, not two", func(f *fastState) { f.serial2 = true }},
		{"the fast path with scanners for windows of a few KB (small inputs take the two-scanner path)", func(f *fastState) { f.parallelMin = 4 << 10 }},
	} {
		d, fs, ferr := decode(v.set, Options{})
		switch {
		case (ferr == nil) != (gerr == nil):
			t.Fatalf("%s: %s: error %v, general machine error %v", name, v.what, ferr, gerr)
		case ferr != nil && ferr.Error() != gerr.Error():
			t.Fatalf("%s: %s: errors differ:\nfast:    %v\ngeneral: %v", name, v.what, ferr, gerr)
		case !reflect.DeepEqual(fs, gs):
			t.Fatalf("%s: %s: the snapshot differs from the general machine's", name, v.what)
		}
		batches = max(batches, d.fast.batch)
		joins += d.fast.joins
		chunkRuns += d.fast.chunks
	}
	if gs != nil { // after the comparisons: CheckValid builds the device index
		checkAllValid(t, gs)
	}
	return batches, joins, chunkRuns
}

func TestFastPathEqualsGeneral(t *testing.T) {
	files := differentialFiles(t)
	more, _ := filepath.Glob("testdata/*.gz")
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("only %d files", len(files))
	}
	total, joins, chunks := 0, 0, 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		n, j, c := decodeBothJoins(t, path, data)
		total, joins, chunks = total+n, joins+j, chunks+c
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
	if chunks == 0 {
		t.Fatal("no chunk read ahead was taken: reading by chunks went untested")
	}
	t.Logf("%d files, %d batches read by the fast path, %d second scanners joined, %d chunks read ahead taken", len(files), total, joins, chunks)
}

// BenchmarkScan runs the fast path's scanner alone over every batch of
// trace entries of a generated snapshot (plain-trainer-late, 8 MiB), as
// the chunk lanes do: b.SetBytes is the bytes scanned.
func BenchmarkScan(b *testing.B) {
	data := benchScanInput(b)
	var starts []int
	for p := 0; ; {
		q := findBatchStart(data, p)
		if q < 0 {
			break
		}
		starts, p = append(starts, q), q+1
	}
	fi := frameInfo{size: int64(len(data)), end: len(data)}
	var t fastTape
	scanned := 0
	for _, p := range starts {
		scanBatch(data, p, fi, &t)
		if t.ok {
			scanned += t.end - t.start
		}
	}
	if scanned < len(data)/2 {
		b.Fatalf("%d of %d bytes in batches that scan", scanned, len(data))
	}
	b.SetBytes(int64(scanned))
	b.ResetTimer()
	for range b.N {
		for _, p := range starts {
			scanBatch(data, p, fi, &t)
		}
	}
}
