package snapshot

import (
	"testing"
)

// DecodeBothForTest is decodeBoth for the external tests (snapgen's
// inputs cannot be made inside this package).
func DecodeBothForTest(t *testing.T, name string, data []byte) int {
	return decodeBoth(t, name, data)
}
