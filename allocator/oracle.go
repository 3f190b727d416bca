package allocator

import "github.com/memscope/memscope/snapshot"

// replayDevice answers the model's device calls from the recorded segment
// entries of the request being replayed: a cudaMalloc succeeds when the
// next recorded entry is a segment_alloc (at its address), and fails when
// it is a release (the retry path followed) or when none is left.
type replayDevice struct {
	evs    []snapshot.Event
	a      *Allocator
	q      []int
	cur    int
	seen   int    // model records looked at
	synth  uint64 // next made-up address for an unrecorded reservation
	failed int    // failures answered
	// limit is the least reserved + size over the failures answered (0:
	// none): the memory the device or a cap would not give.
	limit int64
	prog  *progress // the check's, when what-ifs run beside it
}

// fail answers a failure for size more bytes.
func (d *replayDevice) fail(size int64) {
	d.failed++
	if d.prog != nil {
		d.prog.failed.Store(true)
	}
	if l := d.a.Reserved + size; d.limit == 0 || l < d.limit {
		d.limit = l
	}
}

func (d *replayDevice) start(q []int) {
	d.q, d.cur, d.seen = q, 0, len(d.a.out)
}

// sync steps over the recorded releases the model has made since the
// last call.
func (d *replayDevice) sync() {
	for ; d.seen < len(d.a.out); d.seen++ {
		if isRelease(d.a.out[d.seen].Action) && d.cur < len(d.q) && isRelease(d.evs[d.q[d.cur]].Action) {
			d.cur++
		}
	}
}

func (d *replayDevice) next(act snapshot.Action) *snapshot.Event {
	d.sync()
	if d.cur < len(d.q) && d.evs[d.q[d.cur]].Action == act {
		return &d.evs[d.q[d.cur]]
	}
	return nil
}

func (d *replayDevice) Malloc(size, stream int64) (uint64, bool) {
	if e := d.next(snapshot.ActionSegmentAlloc); e != nil {
		d.cur++
		return e.Addr, true
	}
	d.fail(size)
	return 0, false
}

func (d *replayDevice) Reserve(size, stream int64) uint64 {
	if e := d.next(snapshot.ActionSegmentMap); e != nil {
		return e.Addr
	}
	if d.synth == 0 {
		d.synth = 1 << 62
	}
	addr := d.synth
	d.synth += uint64(size)
	return addr
}

func (d *replayDevice) Map(addr uint64, size int64) bool {
	if e := d.next(snapshot.ActionSegmentMap); e != nil {
		d.cur++
		return true
	}
	d.fail(size)
	return false
}

func (d *replayDevice) Free(addr uint64, size int64)  {}
func (d *replayDevice) Unmap(addr uint64, size int64) {}

// debugCheck makes a replay verify the model's invariants after every
// entry (the fuzz target sets it).
var debugCheck = false
