package trace

import "math"

// rawFlow is one end of a fwdbwd flow, resolved to ops in finish.
type rawFlow struct {
	id     int64
	thread ThreadID
	ts     int64
	start  bool // ph "s"; false for "f"
}

var (
	metadataCat = []byte("(metadata)")
	noCat       = []byte("(none)")
)

// maxCats bounds the distinct categories counted, against hostile input.
const maxCats = 1024

// keep stores what the memory analysis needs from one decoded event.
func (d *decoder) keep(e *rawEvent) {
	d.countCat(e)

	switch e.ph {
	case 'X':
		d.keepInterval(e)
	case 'i', 'I':
		if isMemoryName(e.name) {
			d.keepMemory(e)
		}
	case 's', 'f':
		if string(e.cat) == "fwdbwd" && e.hasID && e.hasTS {
			d.flows.add(rawFlow{id: e.id, thread: d.thread(e), ts: e.ts, start: e.ph == 's'})
		}
	}
}

// countCat counts the event under its category. The common categories
// are counted in a fixed table, the rest in a map.
func (d *decoder) countCat(e *rawEvent) {
	key := e.cat
	switch {
	case e.ph == 'M':
		key = metadataCat
	case len(key) == 0:
		key = noCat
	}
	if len(key) == len(d.lastCat) && string(key) == string(d.lastCat) {
		*d.lastCatN++
		return
	}
	n := d.cats[string(key)]
	if n == nil {
		if len(d.cats) >= maxCats {
			return
		}
		n = new(int64)
		d.cats[string(key)] = n
	}
	*n++
	d.lastCat, d.lastCatN = append(d.lastCat[:0], key...), n
}

func isMemoryName(name []byte) bool {
	return string(name) == "[memory]" || string(name) == "[OutOfMemory]"
}

func (d *decoder) keepInterval(e *rawEvent) {
	if !e.hasTS {
		return
	}
	dur := e.dur
	if dur < 0 {
		dur = 0
	}
	switch string(e.cat) {
	case "cpu_op", "user_annotation", "Operator": // "Operator": cpu_op before torch 1.13
		kind := CPUOp
		if string(e.cat) == "user_annotation" {
			kind = UserAnnotation
		}
		seq, fwd := int32(-1), int32(-1)
		if e.args.has&hasSeq != 0 {
			seq = clamp32(e.args.seq)
		}
		if e.args.has&hasFwdThread != 0 {
			fwd = clamp32(e.args.fwdThread)
		}
		d.ops.add(Op{
			Name: d.intern(e.name), Kind: kind, Thread: d.thread(e),
			Start: e.ts, Dur: dur, Parent: NoOp, Seq: seq, FwdThread: fwd, Forward: NoOp,
		})
	case "python_function":
		id, parent := int32(-1), int32(-1)
		if e.args.has&hasPyID != 0 {
			id = clamp32(e.args.pyID)
		}
		if e.args.has&hasPyParent != 0 {
			parent = clamp32(e.args.pyParent)
		}
		d.py.add(PyFunc{
			Name: d.intern(e.name), Thread: d.thread(e), Start: e.ts, Dur: dur,
			PythonID: id, PythonParentID: parent, Parent: NoPy,
			Module: len(e.name) > len(modulePrefix) && string(e.name[:len(modulePrefix)]) == modulePrefix,
		})
	case "cuda_runtime", "cuda_driver", "overhead", "Runtime": // "Runtime": cuda_runtime before torch 1.13
		d.calls.add(Call{Name: d.intern(e.name), Thread: d.thread(e), Start: e.ts, Dur: dur})
	case "kernel", "Kernel":
		pid, ok := parseInt(e.pid)
		if !ok {
			pid = -1
		}
		if _, seen := d.t.Counts.Kernels[pid]; seen || len(d.t.Counts.Kernels) < maxCats {
			d.t.Counts.Kernels[pid]++
		}
	}
}

func (d *decoder) keepMemory(e *rawEvent) {
	a := &e.args
	if !e.hasTS {
		d.warn("ignoring memory events without ts")
		return
	}
	oom := string(e.name) == "[OutOfMemory]"
	if a.has&hasBytes == 0 && !oom {
		d.warn("ignoring [memory] events without a Bytes arg")
		return
	}
	m := MemEvent{
		Time: e.ts, Thread: d.thread(e), Bytes: a.bytes,
		TotalAllocated: a.totalAlloc, TotalReserved: a.totalRes, Addr: a.addr,
		DeviceType: -1, DeviceID: -1, OOM: oom,
		Op: NoOp, Py: NoPy, Module: NoPy,
		has: a.has & (hasTotalAlloc | hasTotalRes | hasAddr),
	}
	if a.has&hasDevType != 0 && a.devType >= math.MinInt8 && a.devType <= math.MaxInt8 {
		m.DeviceType = int8(a.devType)
	}
	if a.has&hasDevID != 0 && a.devID >= math.MinInt16 && a.devID <= math.MaxInt16 {
		m.DeviceID = int16(a.devID)
	}
	d.mem.add(m)
}

// clamp32 narrows an id to int32; ids out of range become -1 (absent).
func clamp32(v int64) int32 {
	if v < 0 || v > math.MaxInt32 {
		return -1
	}
	return int32(v)
}

// intern returns the StringID of s, adding it on first use.
func (d *decoder) intern(s []byte) StringID {
	if id, ok := d.strs[string(s)]; ok {
		return id
	}
	str := string(s)
	id := StringID(len(d.t.Strings))
	d.t.Strings = append(d.t.Strings, str)
	d.strs[str] = id
	return id
}

// thread returns the ThreadID of the event's (pid, tid), keyed by raw text
// (see numericID).
func (d *decoder) thread(e *rawEvent) ThreadID {
	pid, tid := numericID(e.pid), numericID(e.tid)
	d.key = append(append(append(d.key[:0], pid...), 0), tid...)
	if d.lastThread != nil && string(d.key) == string(d.lastThread) {
		return d.lastThreadID
	}
	if id, ok := d.threads[string(d.key)]; ok {
		d.lastThread, d.lastThreadID = append(d.lastThread[:0], d.key...), id
		return id
	}
	id := ThreadID(len(d.t.Threads))
	d.t.Threads = append(d.t.Threads, Thread{PID: string(pid), TID: string(tid)})
	d.threads[string(d.key)] = id
	return id
}

// numericID returns the raw JSON text of a pid or tid with the quotes
// taken off a string that holds a decimal integer: Kineto before torch 1.13
// wrote the tid of ops quoted ("tid": "4242") and that of memory events
// not (4242), for the same thread.
func numericID(raw []byte) []byte {
	if len(raw) < 3 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return raw
	}
	inner := raw[1 : len(raw)-1]
	digits := inner
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 19 {
		return raw
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return raw
		}
	}
	return inner
}

// chunked collects values in fixed-size chunks while decoding, so that
// growing to millions of events never copies or leaves behind a doubled
// slice, then flattens once into an exact-size slice.
type chunked[T any] struct {
	done [][]T
	cur  []T
	n    int
}

const chunkLen = 1 << 14

func (c *chunked[T]) add(v T) {
	if len(c.cur) == cap(c.cur) {
		if c.cur != nil {
			c.done = append(c.done, c.cur)
		}
		c.cur = make([]T, 0, chunkLen)
	}
	c.cur = append(c.cur, v)
	c.n++
}

// flatten returns all values in order and releases the chunks as it goes.
func (c *chunked[T]) flatten() []T {
	out := make([]T, 0, c.n)
	for i, ch := range c.done {
		out = append(out, ch...)
		c.done[i] = nil
	}
	out = append(out, c.cur...)
	*c = chunked[T]{}
	return out
}
