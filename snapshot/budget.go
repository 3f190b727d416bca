package snapshot

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"github.com/memscope/memscope/internal/units"
)

// This file bounds what the decoder materialises, so that a small hostile
// file (a gzip of a few MB that expands to 10^8 references to one memo
// entry, or to strings of gigabytes) is refused with an error instead of
// exhausting memory. The budget is proportional to what a real snapshot of
// the input's size needs; Options.MaxMemory raises it.

// Options changes how a snapshot is read.
type Options struct {
	// MaxMemory bounds, in bytes, what decoding may materialise: strings,
	// list items (each copy of a value shared through the memo counts),
	// dict items, tuples and memo entries. 0 picks the default,
	// DefaultMaxMemory of the input's size.
	MaxMemory int64

	generalOnly bool // tests: no fast path (decode_fast.go)
}

// The default budget: budgetBase plus budgetPerByte times the decoded
// stream's size, taken as gzipRatio times the file's size for a gzip file
// (real snapshot pickles compress 5-10×). When the size is not known (a
// pipe, /dev/stdin) the budget grows with the stream: budgetBase plus
// budgetPerByte times the bytes decoded so far, so that a bomb piped in is
// refused as soon as as it would be from a file. A decoded snapshot takes
// about the size of its pickle, strings and typed entries together.
const (
	budgetBase    = 64 << 20
	budgetPerByte = 4
	gzipRatio     = 16
)

// DefaultMaxMemory returns the decoding budget for an input of size bytes,
// gzipped or not; for an input of unknown size (-1), the budget it starts
// with (it grows as the input is read).
func DefaultMaxMemory(size int64, gzipped bool) int64 {
	if size < 0 {
		return budgetBase
	}
	if gzipped {
		size = min(size, 1<<40) * gzipRatio
	}
	return budgetBase + budgetPerByte*min(size, 1<<50)
}

// OpenWith is Open with options.
func OpenWith(path string, opt Options) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening snapshot: %w", err)
	}
	defer f.Close()
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	return decodeWith(f, path, size, opt)
}

// DecodeWith is Decode with options.
func DecodeWith(r io.Reader, name string, opt Options) (*Snapshot, error) {
	return decodeWith(r, name, readerSize(r), opt)
}

// What each materialised item is charged.
const (
	costString = 40 // a string's header in the table and its index entry, beside its bytes
	costValue  = int64(unsafe.Sizeof(value{}))
	costMemo   = int64(unsafe.Sizeof(memoWord(0))) // a dense memo entry
	costPair   = int64(unsafe.Sizeof(kv{}))
	costEvent  = int64(unsafe.Sizeof(Event{}))
	costBlock  = int64(unsafe.Sizeof(Block{}))
	costSeg    = int64(unsafe.Sizeof(Segment{}))
	costAnnot  = int64(unsafe.Sizeof(Annotation{}))
	costFrame  = int64(unsafe.Sizeof(FrameID(0)))
	costObject = int64(unsafe.Sizeof(object{})) // a container in the arena, charged as the arena grows
	// costTyped is a list of schema objects' storage.
	costTyped = int64(unsafe.Sizeof(typedList{}))
	// costStackFrame is what one frame of a new stack in the table costs
	// downstream: a node of the call tree (its children's index and slice
	// included), a pprof location. Repeated stacks cost nothing more.
	costStackFrame = 256
	// costDevice is what one device costs the analysis beyond its events
	// and segments: its timeline, series, phases and findings. Charged as
	// used, it is held heldPerUsed times over: 48 KiB a device, what
	// summary took (39 KB a device on 20,000 devices of one segment each).
	costDevice = 12 << 10
)

// heldPerUsed is what the process holds for each byte charged: the
// decoder's slices grow by doubling, so up to twice their length is
// allocated, three times while one is copied; the garbage collector needs
// room beside them. The budget holds against what is held, not only what
// is used. (A realistic 105 MB snapshot charges 28 MB: a quarter of its
// size; the trace entries, at most three times the bytes they are read
// from, are bounded by the budget's bytes per byte.)
const heldPerUsed = 4

// charge counts n more bytes materialised and fails once what that holds
// passes the budget.
func (d *decoder) charge(n int64) error {
	if d.budgetGrows {
		d.budget = budgetBase + budgetPerByte*d.in.offset()
	}
	if d.used += n; d.used*heldPerUsed > d.budget && d.budget > 0 {
		if d.explicitBudget {
			return d.fail(kindLimit, "decoding needs more than %s of memory, the --max-memory limit", units.Bytes(d.budget))
		}
		what := d.budgetFor
		if d.budgetGrows {
			what = fmt.Sprintf("an input of unknown size (a pipe) after %s of it: %s plus %d bytes for each byte read",
				units.Bytes(d.in.offset()), units.Bytes(budgetBase), budgetPerByte)
		}
		return d.fail(kindLimit, "decoding needs more than %s of memory, the limit for %s (a hostile or damaged file?); "+
			"if the file is real, raise the limit with --max-memory", units.Bytes(d.budget), what)
	}
	return nil
}

// setBudget sets the default budget for an input of size bytes, unless
// the caller gave one.
func (d *decoder) setBudget(size int64, gzipped bool) {
	if d.explicitBudget {
		return
	}
	d.budget = DefaultMaxMemory(size, gzipped)
	d.budgetGrows = size < 0
	switch {
	case size < 0:
		d.budgetFor = "" // said at the failure: see charge
	case gzipped:
		d.budgetFor = "a gzip file of " + units.Bytes(size)
	default:
		d.budgetFor = "a file of " + units.Bytes(size)
	}
}

// OpenAll opens the snapshots at paths as OpenWith does, as many at a time
// as there are cores (a command that reads several files waits for the
// slowest, not for their sum): the snapshots and the errors by path, each
// as OpenWith gives them (a file cut short has both).
func OpenAll(paths []string, opt Options) ([]*Snapshot, []error) {
	snaps := make([]*Snapshot, len(paths))
	errs := make([]error, len(paths))
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			snaps[i], errs[i] = OpenWith(p, opt)
		}()
	}
	wg.Wait()
	return snaps, errs
}
