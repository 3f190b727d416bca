// Package gen writes large allocator snapshots for benchmarks: it takes a
// decoded snapshot (a real fixture) and writes a protocol-4 pickle whose
// device traces repeat the original ones until the file reaches a size.
//
// The output is shaped like torch 2.11's _dump_snapshot: the same key order,
// dict keys and enum strings written once and referenced through the memo,
// every frame dict written once and shared, a new frames list per captured
// traceback (see sharesTraceback), compile_context a new string per entry,
// FRAME opcodes every 64 KiB. Each repetition copies the original entries verbatim with time_us
// shifted past the previous one, so allocations and frees stay paired; a
// repetition after the first leaves out what only the first can do (free
// a block live before the trace began, allocate one still live at its
// end; see onceOnly), so a late-start capture repeats consistently too.
// The step annotations are repeated with the entries (the harness's
// renumbered, torch's Optimizer.step and zero_grad ranges shifted), and
// Options push one dimension at a time: stacks, frames, segments, blocks,
// expandable segments, devices.
package snapgen

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/memscope/memscope/internal/pickle"
	"github.com/memscope/memscope/snapshot"
)

// DefaultSource returns the snapshot to repeat when none is named, as a
// path under the repository root: the llama-bf16 fixture (a training step
// with real Python stacks), else the first fixture, else the synthetic
// snapshot that snapshot/testdata/make_testdata.py writes.
func DefaultSource(root string) string {
	if p := filepath.Join(root, "fixtures", "llama-bf16", "snapshot.pickle"); fileExists(p) {
		return p
	}
	if m, _ := filepath.Glob(filepath.Join(root, "fixtures", "*", "snapshot.pickle")); len(m) > 0 {
		return m[0]
	}
	return filepath.Join(root, "snapshot", "testdata", "synthetic.pickle")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Stats describes a written file.
type Stats struct {
	Bytes   int64 // file size
	Repeats int   // times each device trace was written
	Events  int64 // trace entries written, all devices
}

// Write writes s to w with its device traces repeated until the file holds
// at least minBytes (once at least).
func Write(w io.Writer, s *snapshot.Snapshot, minBytes int64) (Stats, error) {
	return WriteOptions(w, s, minBytes, Options{})
}

// WriteOptions is Write with the snapshot shaped by opt first.
func WriteOptions(w io.Writer, s *snapshot.Snapshot, minBytes int64, opt Options) (Stats, error) {
	if !s.HasTraces || len(s.Traces) == 0 {
		return Stats{}, errors.New("gen: the source snapshot has no device traces to repeat")
	}
	s = shape(s, opt)
	variants := max(opt.Stacks, 1)
	if opt.Repeats > 0 {
		return write(w, s, opt.Repeats, variants)
	}
	// Size k and k+1 repetitions to find how many reach minBytes, k past
	// the repetitions that still define frames (each Stacks variant's
	// first use defines its own): a repetition after those takes the
	// same bytes as the next.
	k := 1
	if variants > 1 {
		k = variants + 1
	}
	size := func(reps int) (int64, error) {
		st, err := write(io.Discard, s, reps, variants)
		return st.Bytes, err
	}
	one, err := size(k)
	if err != nil {
		return Stats{}, err
	}
	reps := k
	if minBytes > one {
		two, err := size(k + 1)
		if err != nil {
			return Stats{}, err
		}
		per := max(two-one, 1)
		reps = k + int((minBytes-one+per-1)/per)
	} else {
		// The fewest of 1…k that reach minBytes.
		lo, hi := 1, k
		for lo < hi {
			mid := (lo + hi) / 2
			n, err := size(mid)
			if err != nil {
				return Stats{}, err
			}
			if n >= minBytes {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		reps = lo
	}
	return write(w, s, reps, variants)
}

// writer holds the memo indexes of shared objects while writing.
type writer struct {
	p      *pickle.Writer
	s      *snapshot.Snapshot
	shared map[string]uint32 // strings written once (keys, enums, "")
	frames map[snapshot.FrameID]uint32
	lists  map[snapshot.StackID]uint32 // the last frames list of each stack
	empty  uint32                      // the shared empty frames list
	span   int64                       // time_us shift per repetition

	variants int                         // stack variants (Options.Stacks), at least 1
	vcache   map[[2]int]snapshot.StackID // (stack, variant) → stack
}

func write(out io.Writer, s *snapshot.Snapshot, reps, variants int) (Stats, error) {
	g := &writer{
		p: pickle.NewWriter(out, 4), s: s,
		shared:   map[string]uint32{},
		frames:   map[snapshot.FrameID]uint32{},
		lists:    map[snapshot.StackID]uint32{},
		empty:    math.MaxUint32,
		variants: max(variants, 1),
		vcache:   map[[2]int]snapshot.StackID{},
	}
	g.span = g.timeSpan()
	st := Stats{Repeats: reps}
	p := g.p
	p.Raw(pickle.EmptyDict)
	p.Memoize()
	keys := []string{"segments", "device_traces"}
	if s.Settings != nil {
		keys = append(keys, "allocator_settings")
	}
	keys = append(keys, "external_annotations")
	p.Dict(len(keys), func(i int) {
		g.fresh(keys[i])
		switch keys[i] {
		case "segments":
			g.segments()
		case "device_traces":
			st.Events = g.traces(reps)
		case "allocator_settings":
			g.plain(s.Settings)
		case "external_annotations":
			g.annotations(reps)
		}
	})
	err := p.Stop()
	st.Bytes = p.Len()
	return st, err
}

// timeSpan returns how far each repetition shifts time_us: the recorded
// span plus one microsecond.
func (g *writer) timeSpan() int64 {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, tr := range g.s.Traces {
		for i := range tr {
			lo, hi = min(lo, tr[i].TimeUS), max(hi, tr[i].TimeUS)
		}
	}
	for _, a := range g.s.Annotations {
		lo, hi = min(lo, a.TimeUS), max(hi, a.TimeUS)
	}
	if lo > hi || (lo == 0 && hi == 0) {
		return 0 // no times recorded (torch < 2.2): keep them zero
	}
	return hi - lo + 1
}

// key writes a shared string: in full the first time, by memo afterwards.
func (g *writer) key(s string) {
	if i, ok := g.shared[s]; ok {
		g.p.Get(i)
		return
	}
	g.p.String(s)
	g.shared[s] = g.p.Memoize()
}

// fresh writes a string as a new object, as torch does for per-entry
// values; "" is CPython's shared empty string.
func (g *writer) fresh(s string) {
	if s == "" {
		g.key(s)
		return
	}
	g.p.String(s)
	g.p.Memoize()
}

// item writes one key/value pair of a dict.
func (g *writer) item(k string, v func()) {
	g.key(k)
	v()
}

func (g *writer) int(n int64) func() { return func() { g.p.Int(n) } }

// stack writes a frames list: a new list object unless reuse is set and
// the stack was written before; frame dicts are always shared.
func (g *writer) stack(id snapshot.StackID, reuse bool) {
	p := g.p
	if id == 0 {
		if g.empty != math.MaxUint32 {
			p.Get(g.empty)
			return
		}
		p.Raw(pickle.EmptyList)
		g.empty = p.Memoize()
		return
	}
	if i, ok := g.lists[id]; ok && reuse {
		p.Get(i)
		return
	}
	p.Raw(pickle.EmptyList)
	g.lists[id] = p.Memoize()
	ids := g.s.Stacks.Stack(id)
	p.List(len(ids), func(i int) { g.frame(ids[i]) })
}

func (g *writer) frame(id snapshot.FrameID) {
	p := g.p
	if i, ok := g.frames[id]; ok {
		p.Get(i)
		return
	}
	p.Raw(pickle.EmptyDict)
	g.frames[id] = p.Memoize()
	f := g.s.Stacks.Frame(id)
	type kv struct {
		k, v string
	}
	var fx []kv
	for _, x := range []kv{{"fx_node_op", f.FXNodeOp}, {"fx_node_name", f.FXNodeName},
		{"fx_node_target", f.FXNodeTarget}, {"fx_original_trace", f.FXOriginalTrace}} {
		if x.v != "" {
			fx = append(fx, x)
		}
	}
	p.Dict(3+len(fx), func(i int) {
		switch i {
		case 0:
			g.item("name", func() { g.fresh(f.Name) })
		case 1:
			g.item("filename", func() { g.key(f.Filename) }) // torch shares file names
		case 2:
			g.item("line", g.int(f.Line))
		default:
			x := fx[i-3]
			g.item(x.k, func() { g.fresh(x.v) })
		}
	})
}

// plain writes an allocator_settings value.
func (g *writer) plain(v any) {
	p := g.p
	switch v := v.(type) {
	case nil:
		p.None()
	case bool:
		p.Bool(v)
	case int64:
		p.Int(v)
	case float64:
		p.Float(v)
	case string:
		g.fresh(v)
	case []byte:
		p.Bytes(v)
		p.Memoize()
	case []any:
		p.Raw(pickle.EmptyList)
		p.Memoize()
		p.List(len(v), func(i int) { g.plain(v[i]) })
	case map[string]any:
		p.Raw(pickle.EmptyDict)
		p.Memoize()
		keys := settingsOrder(v)
		p.Dict(len(keys), func(i int) {
			g.key(keys[i])
			g.plain(v[keys[i]])
		})
	}
}

// settingsOrder sorts keys in torch's allocator_settings order, then
// numerically ("1", "2", "4", …), then by name.
func settingsOrder(m map[string]any) []string {
	order := []string{"PYTORCH_CUDA_ALLOC_CONF", "max_split_size", "garbage_collection_threshold",
		"expandable_segments", "pinned_num_register_threads", "release_lock_on_cudamalloc",
		"pinned_use_cuda_host_register", "graph_capture_record_stream_reuse", "roundup_power2_divisions"}
	rank := func(k string) (int, int64) {
		if i := slices.Index(order, k); i >= 0 {
			return i, 0
		}
		if n, err := strconv.ParseInt(k, 10, 64); err == nil {
			return len(order), n
		}
		return len(order) + 1, 0
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		ra, na := rank(a)
		rb, nb := rank(b)
		switch {
		case ra != rb:
			return ra - rb
		case na != nb:
			if na < nb {
				return -1
			}
			return 1
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	})
	return keys
}
