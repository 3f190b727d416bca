//go:build linux

package snapshot

import (
	"os"
	"syscall"
)

// mapFile maps size bytes of f read-only, for the chunk reader: its chunks
// are then slices of the page cache, not copies (decode_chunks.go). ok is
// false when the file cannot be mapped; the reader then reads.
func mapFile(f *os.File, size int64) (data []byte, unmap func(), ok bool) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, false
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	return data, func() { _ = syscall.Munmap(data) }, true
}

// dropPages tells the kernel that the mapped pages of b are not needed
// again soon: they leave the process's resident set (the page cache keeps
// them, and a later read maps them again).
func dropPages(b []byte) {
	if len(b) > 0 {
		_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
	}
}
