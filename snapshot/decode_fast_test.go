package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
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
	return decodeBothSome(t, name, data, -1)
}

// decodeBothSome is decodeBothJoins comparing the general machine with
// the fast path's variant pick only (mod their number), or with every one
// for pick < 0: the fuzz target's cheaper body.
func decodeBothSome(t *testing.T, name string, data []byte, pick int) (int, int, int) {
	t.Helper()
	decode := func(set func(f *fastState), opt Options) (*decoder, *Snapshot, error) {
		d := newDecoder(name)
		set(&d.fast)
		s, err := d.decodeTop(bytes.NewReader(data), int64(len(data)), opt)
		return d, s, err
	}
	_, gs, gerr := decode(func(*fastState) {}, Options{generalOnly: true})
	// same fails unless a fast path's result is the general machine's.
	same := func(what string, fs *Snapshot, ferr error) {
		t.Helper()
		switch {
		case (ferr == nil) != (gerr == nil):
			t.Fatalf("%s: %s: error %v, general machine error %v", name, what, ferr, gerr)
		case ferr != nil && ferr.Error() != gerr.Error():
			t.Fatalf("%s: %s: errors differ:\nfast:    %v\ngeneral: %v", name, what, ferr, gerr)
		case !reflect.DeepEqual(fs, gs):
			t.Fatalf("%s: %s: the snapshot differs from the general machine's", name, what)
		}
	}
	batches, joins, chunkRuns, variant := 0, 0, 0, 0
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
		if pick >= 0 && pick%7 != variant {
			variant++
			continue
		}
		variant++
		d, fs, ferr := decode(v.set, Options{})
		same(v.what, fs, ferr)
		batches = max(batches, d.fast.batch)
		joins += d.fast.joins
		chunkRuns += d.fast.chunks
	}
	if decodeFiles {
		// From a file, which the chunk reader maps (mmap_unix.go) or reads
		// at offsets.
		path := filepath.Join(t.TempDir(), "snapshot.pickle")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			what string
			set  func(f *fastState)
		}{
			{"the fast path reading a file", func(*fastState) {}},
			{"the fast path reading a file by chunks of 128 KiB", func(f *fastState) { f.chunkLen = 128 << 10 }},
			{"the fast path reading a file at offsets, not mapped", func(f *fastState) { f.chunkLen, f.noMap = 128<<10, true }},
		} {
			file, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			d := newDecoder(name)
			v.set(&d.fast)
			fs, ferr := d.decodeTop(file, int64(len(data)), Options{})
			file.Close()
			same(v.what, fs, ferr)
			chunkRuns += d.fast.chunks
			if v.what == "the fast path reading a file" && d.fast.chunks > 0 && runtime.GOOS == "linux" && d.fast.maps == 0 {
				t.Fatalf("%s: %s: read by chunks, but the file was not mapped", name, v.what)
			}
		}
	}
	if gs != nil { // after the comparisons: CheckValid builds the device index
		checkAllValid(t, gs)
	}
	return batches, joins, chunkRuns
}

// decodeFiles makes decodeBothJoins decode from a file too (set by the
// tests, not the fuzzer: a file per input would slow it down).
var decodeFiles bool

func TestFastPathEqualsGeneral(t *testing.T) {
	decodeFiles = true
	defer func() { decodeFiles = false }()
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

// TestMappedFileCutWhileRead maps a snapshot for the chunk reader, then
// cuts the file to half: reading the pages past the new end faults, and
// the decoder must say so (or give what it read), not crash.
func TestMappedFileCutWhileRead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the chunk reader maps files on linux only")
	}
	data := benchScanInput(t)
	path := filepath.Join(t.TempDir(), "snapshot.pickle")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	d := newDecoder(path)
	d.fast.afterMap = func() {
		if err := os.Truncate(path, int64(len(data)/2)); err != nil {
			t.Error(err)
		}
	}
	s, err := d.decodeTop(file, int64(len(data)), Options{})
	if d.fast.maps == 0 {
		t.Fatal("the file was not mapped")
	}
	switch {
	case err == nil:
		t.Fatalf("decoded %d devices from a file cut to half while it was read, with no error", len(s.Traces))
	case errKindOf(err) == kindInternal:
		t.Fatalf("an internal error: %v", err)
	}
	t.Logf("%v (snapshot returned: %v)", err, s != nil)
}
