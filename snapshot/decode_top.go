package snapshot

import (
	"fmt"
	"slices"
)

// decoder is the state of one decode. It is used once.
type decoder struct {
	name  string
	in    input
	opOff int64 // stream offset of the opcode being run
	proto int

	stack   []value
	marks   []int
	memo    memo
	objs    []object
	free    []uint32
	maxObjs int
	sized   bool // the input's length is known and d.in reads it
	hinted  bool // a list of entries is sized (reserveEvents)

	// shortFrame, when set, says that a FRAME claimed more bytes than the
	// file holds: a file cut short, named in any later error.
	shortFrame string

	// budget bounds the bytes decoding materialises (budget.go); used
	// counts them.
	budget, used   int64
	budgetFor      string // what the budget was set for, for the message
	explicitBudget bool   // budget came from Options.MaxMemory
	budgetGrows    bool   // the input's size is unknown: the budget follows what was read (charge)

	// Stacks deeper than maxStackFrames (internStack): how many, the deepest.
	deepStacks, deepestStack int

	genericN    int // values made by generic
	blockCopies int // blocks copied for blocks lists shared by segments

	strs   []string
	strIdx map[string]uint32
	recent [32]recentString // strings interned by a map hit lately (intern)
	ctxIDs []StringID       // decoder string ID → Strings ID (0: not yet)

	tuples   tupleArena
	stacks   *Stacks
	strings  *Strings
	frameBuf []FrameID

	fast    fastState // decode_fast.go
	fastErr error     // the budget ran out in the fast path
}

type recentString struct {
	s  string
	id uint32
	ok bool
}

func newDecoder(name string) *decoder {
	d := &decoder{name: name, stacks: NewStacks(), strings: NewStrings()}
	d.initStrings()
	d.stack = make([]value, 0, 256)
	return d
}

// release drops what only the unpickler needed, before the traces are
// copied into their final slices.
func (d *decoder) release() {
	d.memo = memo{}
	d.stack, d.marks, d.strIdx, d.ctxIDs, d.in.buf = nil, nil, nil, nil, nil
}

// topParts are the recognised values of the top-level dict.
type topParts struct {
	segments, traces, settings, annots, stats value
	hasSegments, hasTraces                    bool
	unknown                                   []string
	seen                                      map[string]bool // unknown, as a set
}

// finish turns the value left by STOP into the Snapshot.
func (d *decoder) finish(top value) (*Snapshot, error) {
	top = d.resolve(top)
	d.release()
	s := &Snapshot{Source: d.name, Protocol: d.proto, Stacks: d.stacks, Strings: d.strings}
	if top.tag == tObj && d.objs[top.n].kind == objList {
		segs, legacy, err := d.segmentsOf(top)
		if err != nil {
			return nil, err
		}
		s.Segments, s.Legacy = segs, legacy
		return s, nil
	}
	if top.tag != tObj || d.objs[top.n].kind != objDict {
		return nil, d.failAt(d.offOf(top), kindFormat, "not a memory snapshot: the file holds %s, want a dict with \"segments\" or a list of segments", d.describe(top))
	}
	var parts topParts
	if err := d.topPairs(d.objs[top.n].pairs, &parts); err != nil {
		return nil, err
	}
	if !parts.hasSegments {
		return nil, d.failAt(d.offOf(top), kindFormat, "not a memory snapshot: the top-level dict has no \"segments\"")
	}
	if err := d.assemble(s, &parts); err != nil {
		return nil, err
	}
	return s, nil
}

// topPairs sorts the top-level dict's items into parts; a repeated key
// takes its last value.
func (d *decoder) topPairs(pairs []kv, parts *topParts) error {
	for _, p := range pairs {
		switch keyID(p.k) {
		case kSegments:
			parts.segments, parts.hasSegments = p.v, true
		case kDeviceTraces:
			parts.traces, parts.hasTraces = p.v, true
		case kAllocatorSettings:
			parts.settings = p.v
		case kExternalAnnotations:
			parts.annots = p.v
		default:
			if p.k.tag != tStr {
				return d.failAt(0, kindSchema, "top-level key is %s, want a str", d.describe(p.k))
			}
			if parts.seen == nil {
				parts.seen = map[string]bool{}
			}
			if d.strs[p.k.n] == "memory_stats" {
				parts.stats = p.v
				break
			}
			if k := d.strs[p.k.n]; !parts.seen[k] {
				parts.seen[k] = true
				parts.unknown = append(parts.unknown, k)
			}
		}
	}
	return nil
}

// assemble fills s from the top-level parts.
func (d *decoder) assemble(s *Snapshot, parts *topParts) error {
	var err error
	s.UnknownKeys = parts.unknown
	if s.Segments, s.Legacy, err = d.segmentsOf(parts.segments); err != nil {
		return err
	}
	if parts.hasTraces && parts.traces.tag != tNone {
		s.HasTraces = true
		if s.Traces, err = d.tracesOf(parts.traces); err != nil {
			return err
		}
	}
	if parts.settings.tag != tNone {
		v := d.resolve(parts.settings)
		if v.tag != tObj || d.objs[v.n].kind != objDict {
			return d.failAt(d.offOf(v), kindSchema, "allocator_settings is %s, want a dict", d.describe(v))
		}
		g, err := d.generic(v, 0)
		if err != nil {
			return err
		}
		s.Settings = g.(map[string]any)
	}
	if parts.stats.tag != tNone {
		// Not torch's: kept when it reads as plain data, ignored otherwise.
		if v := d.resolve(parts.stats); v.tag == tObj && d.objs[v.n].kind == objDict {
			if g, err := d.generic(v, 0); err == nil {
				s.MemoryStats = g.(map[string]any)
			}
		}
	}
	if parts.annots.tag != tNone {
		v := d.resolve(parts.annots)
		o := d.typedList(v, listAnnots)
		if o == nil {
			return d.failAt(d.offOf(v), kindSchema, "external_annotations is %s, want a list of annotations", d.describe(v))
		}
		if o.err != nil {
			return o.err
		}
		if o.typed != nil {
			s.Annotations = slices.Clip(o.typed.annots)
		}
	}
	return nil
}

// typedList returns v's object when v is a list that is empty or of kind
// want, else nil. The list is marked stored.
func (d *decoder) typedList(v value, want listKind) *object {
	if v.tag == tStack && v.n == 0 { // an empty list, converted when stored
		return &object{kind: objList}
	}
	if v.tag != tObj {
		return nil
	}
	o := &d.objs[v.n]
	if o.kind != objList || (o.lkind != listEmpty && o.lkind != want) {
		return nil
	}
	o.stored = true
	return o
}

// segmentsOf returns the segments of a list of segments.
func (d *decoder) segmentsOf(v value) ([]Segment, bool, error) {
	v = d.resolve(v)
	o := d.typedList(v, listSegments)
	if o == nil {
		return nil, false, d.failAt(d.offOf(v), kindSchema, "\"segments\" is %s, want a list of segments", d.describe(v))
	}
	if o.err != nil {
		return nil, false, o.err
	}
	if o.typed == nil {
		return []Segment{}, false, nil
	}
	return slices.Clip(o.typed.segs), o.typed.legacy, nil
}

// tracesOf returns device_traces: a list with one list of entries per device.
func (d *decoder) tracesOf(v value) ([][]Event, error) {
	v = d.resolve(v)
	o := d.typedList(v, listGeneric)
	if o == nil {
		return nil, d.failAt(d.offOf(v), kindSchema, "device_traces is %s, want a list of lists", d.describe(v))
	}
	if o.err != nil {
		return nil, o.err
	}
	traces := make([][]Event, 0, len(o.items))
	for dev, it := range o.items {
		it = d.resolve(it)
		t := d.typedList(it, listEvents)
		if t == nil {
			return nil, d.failAt(d.offOf(it), kindSchema, "device_traces[%d] is %s, want a list of trace entries", dev, d.describe(it))
		}
		if t.err != nil {
			return nil, t.err
		}
		var ev []Event
		if t.typed != nil {
			// A list named twice gives the same slice twice: copying it
			// would let a small pickle claim any amount of memory.
			ev = t.typed.events.flat()
		}
		if ev == nil {
			ev = []Event{}
		}
		traces = append(traces, ev)
	}
	return traces, nil
}

// generic converts a plain value (allocator_settings) into Go values:
// string, int64, float64, bool, nil, []byte, map[string]any, []any.
func (d *decoder) generic(v value, depth int) (any, error) {
	if depth > maxGenericDepth {
		return nil, d.failAt(d.offOf(v), kindLimit, "allocator_settings nests deeper than %d levels", maxGenericDepth)
	}
	if d.genericN++; d.genericN > maxGenericValues { // shared lists could expand without end
		return nil, d.failAt(d.offOf(v), kindLimit, "allocator_settings holds more than %d values", maxGenericValues)
	}
	switch v.tag {
	case tNone:
		return nil, nil
	case tBool:
		return v.n != 0, nil
	case tInt:
		return v.n, nil
	case tUint64:
		return nil, d.failAt(d.offOf(v), kindSchema, "allocator_settings holds the int %d, which does not fit in a signed 64-bit int", uint64(v.n))
	case tFloat:
		return v.float(), nil
	case tStr:
		return d.strs[v.n], nil
	case tBytes:
		return []byte(d.strs[v.n]), nil
	case tObj:
		return d.genericObj(&d.objs[v.n], depth)
	case tTuple:
		return d.genericItems(d.tuples.items(v), depth, false)
	case tStack:
		if v.n == 0 {
			return []any{}, nil
		}
		return nil, d.failAt(0, kindSchema, "allocator_settings holds a list of frames")
	}
	return nil, d.failAt(0, kindRefused, "allocator_settings holds a %s that is also used elsewhere", tagNames[v.tag])
}

func (d *decoder) genericObj(o *object, depth int) (any, error) {
	switch o.kind {
	case objDict:
		m := make(map[string]any, len(o.pairs))
		for i := len(o.pairs) - 1; i >= 0; i-- { // the last value of a key counts
			p := o.pairs[i]
			if p.k.tag != tStr {
				return nil, d.failAt(o.off, kindSchema, "allocator_settings has a key that is %s, want a str", d.describe(p.k))
			}
			if _, dup := m[d.strs[p.k.n]]; dup {
				continue
			}
			g, err := d.generic(p.v, depth+1)
			if err != nil {
				return nil, err
			}
			m[d.strs[p.k.n]] = g
		}
		return m, nil
	}
	if o.err != nil {
		return nil, o.err
	}
	switch o.lkind {
	case listEmpty:
		return []any{}, nil
	case listGeneric:
		return d.genericItems(o.items, depth, true)
	}
	return nil, d.failAt(o.off, kindSchema, "allocator_settings holds %s", listKindNames[o.lkind])
}

// genericItems converts list or tuple items. A dict in a list is classified
// again by its keys now: schema-shaped dicts have no place in settings.
func (d *decoder) genericItems(items []value, depth int, list bool) (any, error) {
	out := make([]any, len(items))
	for i, it := range items {
		if list && it.tag == tObj {
			if c := &d.objs[it.n]; c.kind == objDict {
				if cls := classify(c.keys); cls != clsGeneric {
					return nil, d.failAt(c.off, kindSchema, "allocator_settings holds a %s", classNames[cls])
				}
			}
		}
		g, err := d.generic(it, depth+1)
		if err != nil {
			return nil, err
		}
		out[i] = g
	}
	return out, nil
}

// salvage builds what it can from a stream that ended early, when the
// top-level dict's "segments" were complete: the snapshot has those, every
// complete device trace and the entries read so far of the one being read.
func (d *decoder) salvage(at int64) *Snapshot {
	st := d.stack
	if len(st) < 3 || len(d.marks) == 0 || d.marks[0] != 1 || st[0].tag != tObj || d.objs[st[0].n].kind != objDict {
		return nil
	}
	end := len(st)
	if len(d.marks) > 1 {
		end = d.marks[1]
	}
	region := st[1:end] // key, value, key, value, ... and maybe a child in progress
	var pairs []kv
	var partialKey, partial, child value
	for i := 0; i+1 < len(region); i += 2 {
		if i+2 >= len(region) {
			break // the last value: complete or not, we cannot tell
		}
		if i+3 == len(region) {
			partialKey, partial, child = region[i], region[i+1], region[i+2]
			break
		}
		pairs = append(pairs, kv{region[i], region[i+1]})
	}
	// A list cut short is closed: the complete values above its MARK are
	// appended to it, as its APPENDS would have.
	inSegments, inTraces := false, false
	switch n := len(region); {
	case n == 2 && keyID(region[0]) == kSegments && len(d.marks) > 1:
		if inSegments = d.closeList(region[1], 1, false); !inSegments {
			return nil
		}
		pairs = append(pairs, kv{region[0], region[1]})
	case n >= 2 && n%2 == 0 && keyID(region[n-2]) == kDeviceTraces && len(d.marks) > 1:
		// device_traces of several devices, cut inside one: the lists
		// above its MARK are the complete devices and the one being read.
		if devs := st[d.marks[1]:d.markEnd(1)]; len(devs) > 0 && len(d.marks) > 2 {
			d.closeList(devs[len(devs)-1], 2, false)
		}
		if inTraces = d.closeList(region[n-1], 1, true); inTraces {
			pairs = append(pairs, kv{region[n-2], region[n-1]})
		}
	case n%2 == 1 && len(d.marks) > 1: // one device's list, added by APPEND: close its entries
		d.closeList(child, 1, false)
	}
	var parts topParts
	if d.topPairs(pairs, &parts) != nil || !parts.hasSegments {
		return nil
	}
	s := &Snapshot{Source: d.name, Protocol: d.proto, Stacks: d.stacks, Strings: d.strings}
	if d.assemble(s, &parts) != nil {
		return nil
	}
	lost := fmt.Sprintf("the file ends early, at byte %d: kept the segments", at)
	if inTraces && len(s.Traces) > 0 {
		last := len(s.Traces) - 1
		lost += fmt.Sprintf(", %d complete device traces and the first %d entries of device %d's trace; later entries, devices and keys are lost",
			last, len(s.Traces[last]), last)
	}
	if inSegments {
		lost = fmt.Sprintf("the file ends early, at byte %d, inside the segments: kept the first %d segments; "+
			"later segments, every device trace and later keys are lost", at, len(s.Segments))
	}
	if keyID(partialKey) == kDeviceTraces && !parts.hasTraces {
		traces, err := d.tracesOf(partial)
		ct := d.resolve(child)
		co := d.typedList(ct, listEvents)
		if err == nil && co != nil && co.err == nil {
			var ev []Event
			if co.typed != nil {
				ev = co.typed.events.flat()
			}
			s.Traces, s.HasTraces = append(traces, ev), true
			lost += fmt.Sprintf(", %d complete device traces and the first %d entries of device %d's trace; later entries, devices and keys are lost", len(traces), len(ev), len(traces))
		}
	}
	s.Warnings = append(s.Warnings, Warning{Device: -1, Kind: WarnLost, Message: lost})
	return s
}

// markEnd returns where the values above marks[k] end: at the next mark,
// or at the top of the stack.
func (d *decoder) markEnd(k int) int {
	if len(d.marks) > k+1 {
		return d.marks[k+1]
	}
	return len(d.stack)
}

// closeList ends list, cut short: the values above marks[k] are appended
// to it, all but the last unless keepLast (the one being read, or just
// made: complete or not, we cannot tell). It reports whether the list
// could be closed; the values must be dicts or lists.
func (d *decoder) closeList(list value, k int, keepLast bool) bool {
	items := d.stack[d.marks[k]:d.markEnd(k)]
	if len(items) > 0 && !keepLast {
		items = items[:len(items)-1]
	}
	for _, it := range items {
		if it.tag != tObj {
			return false
		}
	}
	return list.tag == tObj && d.objs[list.n].kind == objList && d.appendItemsOp(list, items, "APPENDS") == nil
}

// offOf returns the stream offset where v was made, for messages; 0 for
// values that are not containers.
func (d *decoder) offOf(v value) int64 {
	if v.tag == tObj {
		return d.objs[v.n].off
	}
	return 0
}
