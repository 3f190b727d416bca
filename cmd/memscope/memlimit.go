package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/memscope/memscope/snapshot"
	"github.com/memscope/memscope/trace"
)

// This file is the process's memory policy, in one place: how often the
// garbage collector runs, when it is made to run, and the soft memory
// limit.
//
// A decoded snapshot is kept whole until the process exits, so garbage is a
// small part of the heap: collecting less often (GOGC 300, gcKeep, set by
// main) saved about a tenth of a 1 GB summary's time and did not raise its
// peak RSS (BENCHMARKS.md). A command whose work makes garbage on top of
// that heap (pprof building and encoding a profile; ranks reading one
// snapshot after another) goes back to 100 (gcChurn): 300 would let the
// garbage grow to three times the live heap. GOGC, when set, wins over both.
// Where a large structure has just become garbage (the unpickler's memo
// after a decode, a rank's snapshot once its numbers are read), collect
// runs a collection so the next one reuses its memory.

// gcKeep is the collector's pace for a heap that is mostly kept: main's.
func gcKeep() { gcPercent(300) }

// gcChurn is the pace for work that makes garbage on top of a kept heap.
func gcChurn() { gcPercent(100) }

func gcPercent(p int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(p)
	}
}

// collect runs a collection now: what was just dropped is a large part
// of the heap.
func collect() { runtime.GC() }

// The rest of this file holds the process to the memory budget the
// decoders enforce.
// The decoders count what they keep live against a budget (--max-memory,
// or one proportional to each file's size); the garbage collector, left to
// GOGC (300: see main), would let the heap grow to four times that before
// collecting. So the memscope process sets the runtime's soft memory limit
// to the sum of its inputs' budgets, and the heap stays within them. In
// tests, run is called in-process many times and the limit is left alone.

// holdMemory is set by main: only a memscope process of its own sets the
// runtime's memory limit.
var holdMemory bool

// memLimit is the limit set so far: the budgets of the inputs opened.
var memLimit struct {
	sync.Mutex
	n int64
}

// limitMemory raises the process's soft memory limit by what reading the
// file at path may hold (kind "snapshot" or "trace"). --max-memory, when
// given, is the limit for the whole process. An input whose size is not
// known (a pipe) adds nothing: its decoder's budget grows as it reads.
func limitMemory(cc *cmdContext, path, kind string) {
	if !holdMemory || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	memLimit.Lock()
	defer memLimit.Unlock()
	switch {
	case cc.maxMemory > 0:
		memLimit.n = cc.maxMemory
	default:
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() {
			return
		}
		if kind == "trace" {
			memLimit.n += trace.DefaultMaxMemory(st.Size(), snapshot.IsGzip(path))
		} else {
			memLimit.n += snapshot.DefaultMaxMemory(st.Size(), snapshot.IsGzip(path))
		}
	}
	debug.SetMemoryLimit(max(memLimit.n-memOutside, memLimit.n/2))
}

// memOutside is what the process's RSS holds outside the runtime's limit:
// the binary's code and data, memory the runtime has yet to return. The
// limit is set this much below the budget, so that the peak RSS stays
// within it.
const memOutside = 24 << 20
