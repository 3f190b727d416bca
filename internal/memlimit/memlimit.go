// Package memlimit is the memscope process's memory policy, in one place:
// how often the garbage collector runs, when it is made to run, and the
// soft memory limit. cmd/memscope's main sets it (Keep, Hold); the
// commands call Churn, Collect and Add.
//
// A decoded snapshot is kept whole until the process exits, so garbage is a
// small part of the heap: collecting less often (GOGC 300, Keep, set by
// main) saved about a tenth of a 1 GB summary's time and did not raise its
// peak RSS (BENCHMARKS.md). A command whose work makes garbage on top of
// that heap (pprof building and encoding a profile; ranks reading one
// snapshot after another) goes back to 100 (Churn): 300 would let the
// garbage grow to three times the live heap. GOGC, when set, wins over both.
// Where a large structure has just become garbage (the unpickler's memo
// after a decode, a rank's snapshot once its numbers are read), Collect
// runs a collection so the next one reuses its memory.
//
// The decoders count what they keep live against a budget (--max-memory,
// or one proportional to each file's size); the garbage collector, left to
// GOGC (300), would let the heap grow to four times that before
// collecting. So the memscope process sets the runtime's soft memory limit
// to the sum of its inputs' budgets (Add), and the heap stays within them.
// In tests, the command line is run in-process many times and the limit is
// left alone: only a process that called Hold sets it.
package memlimit

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/memscope/memscope/snapshot"
	"github.com/memscope/memscope/trace"
)

// Keep is the collector's pace for a heap that is mostly kept: main's.
func Keep() { gcPercent(300) }

// Churn is the pace for work that makes garbage on top of a kept heap.
func Churn() { gcPercent(100) }

func gcPercent(p int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(p)
	}
}

// Collect runs a collection now: what was just dropped is a large part
// of the heap.
func Collect() { runtime.GC() }

// Kind is what an input holds, which sets its decoder's budget.
type Kind int

const (
	Snapshot Kind = iota // an allocator snapshot (snapshot.DefaultMaxMemory)
	Trace                // a profiler trace or memory timeline (trace.DefaultMaxMemory)
)

// A Limiter sums the budgets of the inputs opened and sets a limit from
// them.
type Limiter struct {
	mu  sync.Mutex
	n   int64
	set func(int64) int64 // debug.SetMemoryLimit, or a test's
}

// Add raises the limit by what reading the file at path (of kind) may
// hold, and returns the limit set, or 0 when it set none. maxMemory
// (--max-memory), when positive, is the limit for the whole process. An
// input whose size is not known (a pipe) adds nothing: its decoder's
// budget grows as it reads.
func (l *Limiter) Add(maxMemory int64, path string, kind Kind) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case maxMemory > 0:
		l.n = maxMemory
	default:
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() {
			return 0
		}
		if kind == Trace {
			l.n += trace.DefaultMaxMemory(st.Size(), snapshot.IsGzip(path))
		} else {
			l.n += snapshot.DefaultMaxMemory(st.Size(), snapshot.IsGzip(path))
		}
	}
	limit := max(l.n-outside, l.n/2)
	if l.set != nil {
		l.set(limit)
	}
	return limit
}

// outside is what the process's RSS holds outside the runtime's limit:
// the binary's code and data, memory the runtime has yet to return. The
// limit is set this much below the budget, so that the peak RSS stays
// within it.
const outside = 24 << 20

// process is the memscope process's limiter; hold says whether it sets
// the runtime's limit.
var (
	process = Limiter{set: debug.SetMemoryLimit}
	hold    bool
)

// Hold makes Add set the runtime's soft memory limit: main calls it, so
// that only a memscope process of its own does.
func Hold() { hold = true }

// Add raises the process's soft memory limit by what reading path may
// hold (Limiter.Add), once Hold was called and unless GOMEMLIMIT is set.
func Add(maxMemory int64, path string, kind Kind) {
	if !hold || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	process.Add(maxMemory, path, kind)
}
