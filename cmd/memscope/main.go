// Command memscope reads PyTorch CUDA caching-allocator snapshots and tells
// you where the GPU memory went.
//
// Run 'memscope help' for the commands. The command table is in commands.go;
// run.go parses the command line and dispatches; errors.go maps errors to
// exit statuses.
package main

import (
	"os"
	"runtime/debug"
)

func main() {
	// A decoded snapshot is kept whole until the process exits, so garbage is
	// a small part of the heap: collecting less often saves about a tenth of
	// a 1 GB summary's time and did not raise its peak RSS (BENCHMARKS.md).
	// GOGC, when set, still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(300)
	}
	os.Exit(exitCode(run(os.Args[1:], os.Stdout, os.Stderr)))
}
