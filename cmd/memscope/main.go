// Command memscope reads PyTorch CUDA caching-allocator snapshots and tells
// you where the GPU memory went.
//
// Run 'memscope help' for the commands. The command table is in commands.go;
// run.go parses the command line and dispatches; errors.go maps errors to
// exit statuses.
package main

import "os"

func main() {
	os.Exit(exitCode(run(os.Args[1:], os.Stdout, os.Stderr)))
}
