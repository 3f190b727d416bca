package snapgen

import (
	"bytes"
	"math/rand/v2"
	"slices"

	"github.com/memscope/memscope/snapshot"
)

// This file makes a fleet of ranks from one real rank snapshot, for the
// tests of memscope ranks: each rank the source with noise, and some with
// a planted difference: memory reserved and never used, or a leak.

// Perturbation is what Perturb adds to a snapshot's one device with
// recorded events. Every block and segment it adds lies above the
// source's addresses, on the default stream, in a segment of its own.
type Perturbation struct {
	// Seed chooses where the noise goes.
	Seed uint64
	// Noise, when positive, is the most bytes of a temporary: a block of
	// a random size up to Noise, allocated at a random event of the first
	// half of the trace and freed (its segment too) at one of the second
	// half, so that the rank's peaks differ from its peers' by at most
	// that.
	Noise int64
	// Held, when positive, is a block of that size allocated (in a
	// segment of its own) before the first event and freed before the
	// last: both peaks grow by it.
	Held int64
	// Reserved, when positive, is a segment of that size reserved before
	// the first event and released (empty_cache) before the last: the
	// reserved peak grows by it, allocated memory does not.
	Reserved int64
	// Leak, when positive, is a block of that size (a multiple of 2 MiB)
	// allocated just before each event index in LeakAt (so inside the
	// phase whose last event that is) and never freed: it is in the end
	// state, at the stack of the trace's first alloc with one.
	Leak   int64
	LeakAt []int
}

// Perturb returns a copy of s (a decoded snapshot with one device with
// recorded events) with p added; s is not changed.
func Perturb(s *snapshot.Snapshot, p Perturbation) *snapshot.Snapshot {
	c := *s
	c.Traces = slices.Clone(s.Traces)
	c.Segments = slices.Clone(s.Segments)
	dev := -1
	for d, t := range s.Traces {
		if len(t) > 0 {
			dev = d
			break
		}
	}
	if dev < 0 {
		return &c
	}
	evs := s.Traces[dev]
	// Addresses above everything the source uses, 2 MiB aligned.
	var top uint64
	for _, sg := range s.Segments {
		top = max(top, sg.End())
	}
	for _, e := range evs {
		if e.Action != snapshot.ActionOOM {
			top = max(top, e.Addr+uint64(max(e.Size, 0)))
		}
	}
	next := (top>>21 + 1) << 21
	take := func(size int64) uint64 {
		a := next
		next += uint64(size+(2<<20)-1) >> 21 << 21
		return a
	}
	var stack snapshot.StackID
	for _, e := range evs {
		if e.Action == snapshot.ActionAlloc && e.Stack != 0 {
			stack = e.Stack
			break
		}
	}
	// inserts[i] are the entries that go before source entry i (i ==
	// len(evs): after the last).
	inserts := map[int][]snapshot.Event{}
	at := func(i int, e snapshot.Event) {
		src := evs[min(i, len(evs)-1)]
		e.TimeUS, e.Stack = src.TimeUS, stack
		inserts[i] = append(inserts[i], e)
	}
	seg := func(size int64) int64 { return (size + (2<<20 - 1)) >> 21 << 21 }
	if p.Noise > 0 && len(evs) >= 2 {
		r := rand.New(rand.NewPCG(p.Seed, 0x6d656d73636f7065))
		n := (1 + r.Int64N(p.Noise)) >> 9 << 9
		n = max(n, 512)
		a := take(n)
		i := r.IntN(len(evs) / 2)
		j := len(evs)/2 + r.IntN(len(evs)-len(evs)/2)
		at(i, snapshot.Event{Action: snapshot.ActionSegmentAlloc, Addr: a, Size: seg(n)})
		at(i, snapshot.Event{Action: snapshot.ActionAlloc, Addr: a, Size: n})
		at(j, snapshot.Event{Action: snapshot.ActionFreeRequested, Addr: a, Size: n})
		at(j, snapshot.Event{Action: snapshot.ActionFreeCompleted, Addr: a, Size: n})
		at(j, snapshot.Event{Action: snapshot.ActionSegmentFree, Addr: a, Size: seg(n)})
	}
	if p.Held > 0 && len(evs) >= 2 {
		n := max(p.Held>>9<<9, 512)
		a := take(n)
		at(0, snapshot.Event{Action: snapshot.ActionSegmentAlloc, Addr: a, Size: seg(n)})
		at(0, snapshot.Event{Action: snapshot.ActionAlloc, Addr: a, Size: n})
		at(len(evs)-1, snapshot.Event{Action: snapshot.ActionFreeRequested, Addr: a, Size: n})
		at(len(evs)-1, snapshot.Event{Action: snapshot.ActionFreeCompleted, Addr: a, Size: n})
		at(len(evs)-1, snapshot.Event{Action: snapshot.ActionSegmentFree, Addr: a, Size: seg(n)})
	}
	if p.Reserved > 0 && len(evs) >= 2 {
		size := seg(p.Reserved)
		a := take(size)
		at(0, snapshot.Event{Action: snapshot.ActionSegmentAlloc, Addr: a, Size: size})
		at(len(evs)-1, snapshot.Event{Action: snapshot.ActionSegmentFree, Addr: a, Size: size})
	}
	if p.Leak > 0 {
		size := seg(p.Leak)
		for _, i := range p.LeakAt {
			a := take(size)
			at(i, snapshot.Event{Action: snapshot.ActionSegmentAlloc, Addr: a, Size: size})
			at(i, snapshot.Event{Action: snapshot.ActionAlloc, Addr: a, Size: size})
			c.Segments = append(c.Segments, snapshot.Segment{Device: dev, Address: a, TotalSize: size,
				AllocatedSize: size, ActiveSize: size, RequestedSize: size, Stack: stack,
				Blocks: []snapshot.Block{{Address: a, Size: size, RequestedSize: size, State: snapshot.BlockActiveAllocated, Stack: stack}}})
		}
	}
	out := make([]snapshot.Event, 0, len(evs)+8)
	for i, e := range evs {
		out = append(out, inserts[i]...)
		out = append(out, e)
	}
	c.Traces[dev] = append(out, inserts[len(evs)]...)
	return &c
}

// Encode writes s as a protocol-4 pickle (its traces once) and decodes it
// again, as a file written by torch would be read; name is its Source.
func Encode(s *snapshot.Snapshot, name string) ([]byte, *snapshot.Snapshot, error) {
	var b bytes.Buffer
	if _, err := WriteOptions(&b, s, 0, Options{Repeats: 1}); err != nil {
		return nil, nil, err
	}
	d, err := snapshot.Decode(bytes.NewReader(b.Bytes()), name)
	return b.Bytes(), d, err
}
