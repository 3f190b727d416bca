package snapshot

import (
	"testing"
)

// DecodeBothForTest is decodeBoth for the external tests (snapgen's
// inputs cannot be made inside this package).
func DecodeBothForTest(t *testing.T, name string, data []byte) int {
	return decodeBoth(t, name, data)
}

// DecodeBothChunksForTest is decodeBoth, also returning how many chunks
// read ahead were taken after the one before them joined.
func DecodeBothChunksForTest(t *testing.T, name string, data []byte) (batches, chunks int) {
	batches, _, chunks = decodeBothJoins(t, name, data)
	return batches, chunks
}
