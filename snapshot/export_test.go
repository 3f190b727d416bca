package snapshot

import (
	"bytes"
	"testing"
)

// DecodeBothForTest is decodeBoth for the external tests (snapgen's
// inputs cannot be made inside this package).
func DecodeBothForTest(t *testing.T, name string, data []byte) int {
	return decodeBoth(t, name, data)
}

// DecodeSomeForTest is decodeBoth against the fast path's variant pick
// only (see decodeBothSome).
func DecodeSomeForTest(t *testing.T, name string, data []byte, pick int) int {
	n, _, _ := decodeBothSome(t, name, data, pick)
	return n
}

// DecodeBothChunksForTest is decodeBoth, also returning how many chunks
// read ahead were taken after the one before them joined.
func DecodeBothChunksForTest(t *testing.T, name string, data []byte) (batches, chunks int) {
	decodeFiles = true
	defer func() { decodeFiles = false }()
	batches, _, chunks = decodeBothJoins(t, name, data)
	return batches, chunks
}

// FastAnnotsForTest decodes data and returns how many batches of
// annotations the fast path read.
func FastAnnotsForTest(t *testing.T, data []byte) int {
	d := newDecoder("annotations")
	if _, err := d.decodeTop(bytes.NewReader(data), int64(len(data)), Options{}); err != nil {
		t.Fatal(err)
	}
	return d.fast.annots
}

// benchScanInput is set by the external tests' init: a generated snapshot
// for BenchmarkScan.
var benchScanInput func(testing.TB) []byte

// SetBenchScanInput sets benchScanInput.
func SetBenchScanInput(f func(testing.TB) []byte) { benchScanInput = f }

// FlatCopiesForTest is how many lists of entries flat has copied so far.
func FlatCopiesForTest() int64 { return flatCopies.Load() }
