//go:build !linux

package snapshot

// dropPages does nothing here: the mapped pages stay resident until the
// file is unmapped at the end of decoding.
func dropPages(b []byte) {}
