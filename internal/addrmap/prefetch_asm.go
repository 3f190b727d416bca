//go:build amd64 || arm64

package addrmap

// prefetch2 asks the processor to bring the cache lines at a and b into
// cache, without waiting for them (PREFETCHT0, PRFM PLDL1KEEP).
func prefetch2(a, b uintptr)
