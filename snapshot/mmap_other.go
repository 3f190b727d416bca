//go:build !unix

package snapshot

import "os"

// mapFile maps nothing here: the chunk reader reads (decode_chunks.go).
func mapFile(f *os.File, size int64) (data []byte, unmap func(), ok bool) { return nil, nil, false }
