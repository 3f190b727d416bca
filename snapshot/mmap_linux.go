//go:build linux

package snapshot

import "syscall"

// dropPages tells the kernel that the mapped pages of b are not needed
// again soon: they leave the process's resident set (the page cache keeps
// them, and a later read maps them again).
func dropPages(b []byte) {
	if len(b) > 0 {
		_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
	}
}
