//go:build !linux

package snapshot

import "os"

// mapFile maps nothing here: the chunk reader reads at offsets
// (decode_chunks.go). Only linux drops the pages already read from the
// resident set (mmap_linux.go); elsewhere a mapped file would stay
// resident to the end of decoding.
func mapFile(f *os.File, size int64) (data []byte, unmap func(), ok bool) { return nil, nil, false }

func dropPages(b []byte) {}
