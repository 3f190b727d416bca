//go:build !linux

package snapshot

// hugePages is advice the kernels other than Linux's do not take here.
func hugePages([]Event) {}
