package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
	"github.com/memscope/memscope/trace"
	"github.com/spf13/pflag"
)

// memoryFlag defines --max-memory, which every command that reads
// snapshots or traces takes; runCommand reads it into cmdContext.maxMemory.
func memoryFlag(fs *pflag.FlagSet) {
	fs.String("max-memory", "", "let decoding use up to `SIZE` (e.g. 8GiB) instead of a limit proportional to the file's size")
}

// parseMemoryFlag sets cc.maxMemory from fs's --max-memory, if it has one.
func parseMemoryFlag(cc *cmdContext, fs *pflag.FlagSet) error {
	f := fs.Lookup("max-memory")
	if f == nil || f.Value.String() == "" {
		return nil
	}
	n, err := units.ParseBytes(f.Value.String())
	if err != nil || n <= 0 {
		return usageErrorf("--max-memory %q: want a size such as 8GiB", f.Value.String())
	}
	cc.maxMemory = n
	return nil
}

// openProfile reads a torch.profiler trace or memory timeline for a
// command, within --max-memory.
func openProfile(cc *cmdContext, path string) (trace.Profile, error) {
	return trace.OpenProfileWith(path, cc.maxMemory)
}

// openSnapshot opens the snapshot at path for a command. A file cut short
// (a dump written as the process died) is not an error here: the valid
// part is returned, and a warning on stderr says where the file ended and
// what was lost; every analysis command then reports on that part. Other
// errors are the input's fault.
func openSnapshot(cc *cmdContext, path string) (*snapshot.Snapshot, error) {
	s, err := snapshot.OpenWith(path, snapshot.Options{MaxMemory: cc.maxMemory})
	// What only decoding needed (the unpickler's memo: a fifth of a big
	// snapshot) is garbage now; collecting it here lets the analysis reuse
	// that memory instead of growing the process. The decoded entries hold
	// no pointers, so this costs little.
	runtime.GC()
	if err != nil {
		if s == nil {
			return nil, badInput(err)
		}
		cc.warnf("%s", salvageNote(path, s, err))
	}
	return s, nil
}

// salvageNote is the one line that says a snapshot was cut short: the
// decoder's error and how much of the file the kept part covers.
func salvageNote(path string, s *snapshot.Snapshot, err error) string {
	lost := ""
	for _, w := range s.Warnings {
		if w.Kind == snapshot.WarnLost {
			lost = w.Message
		}
	}
	size := ""
	if st, serr := os.Stat(path); serr == nil {
		size = fmt.Sprintf(" (the file has %d bytes)", st.Size())
		if s.Format == snapshot.FormatPickle && isGzip(path) {
			size = fmt.Sprintf(" (of the stream inside a gzip file of %d bytes)", st.Size())
		}
	}
	return fmt.Sprintf("%v%s; analysing the valid part: %s", err, size, lost)
}

// salvaged reports whether s is the valid part of a file cut short.
func salvaged(s *snapshot.Snapshot) bool {
	for _, w := range s.Warnings {
		if w.Kind == snapshot.WarnLost {
			return true
		}
	}
	return false
}

// isGzip reports whether the file at path starts with the gzip magic.
func isGzip(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [2]byte
	n, _ := f.Read(b[:])
	return n == 2 && b[0] == 0x1f && b[1] == 0x8b
}
