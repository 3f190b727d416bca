// Command memscope reads PyTorch CUDA caching-allocator snapshots and tells
// you where the GPU memory went.
//
// Run 'memscope help' for the commands. The command table is in commands.go;
// run.go parses the command line and dispatches; errors.go maps errors to
// exit statuses.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/memscope/memscope/internal/memlimit"
)

func main() {
	memlimit.Keep() // the memory policy: internal/memlimit
	memlimit.Hold()
	os.Exit(exitCode(profiled(func() error { return run(os.Args[1:], os.Stdout, os.Stderr) })))
}

// profiled runs fn, writing a CPU profile of it to $MEMSCOPE_CPUPROFILE when
// that is set (for profiling memscope itself; cmd/memscope/default.pgo was
// made this way).
func profiled(fn func() error) error {
	path := os.Getenv("MEMSCOPE_CPUPROFILE")
	if path == "" {
		return fn()
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("MEMSCOPE_CPUPROFILE: %w", err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return fmt.Errorf("MEMSCOPE_CPUPROFILE: %w", err)
	}
	defer pprof.StopCPUProfile()
	return fn()
}
