//go:build !amd64 && !arm64

package addrmap

// prefetch2 does nothing where there is no prefetch instruction here.
func prefetch2(a, b uintptr) {}
