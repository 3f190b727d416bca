package allocator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// bumpDevice hands out addresses from a base, upward (or downward with
// down), and fails past a capacity when one is set.
type bumpDevice struct {
	next, vaNext uint64
	down         bool
	capacity     int64 // 0: unlimited
	used         int64
	frees        []uint64
}

func newBump() *bumpDevice { return &bumpDevice{next: 0x7f0000000000, vaNext: 0x7e0000000000} }

func (d *bumpDevice) Malloc(size, stream int64) (uint64, bool) {
	if d.capacity > 0 && d.used+size > d.capacity {
		return 0, false
	}
	d.used += size
	span := uint64(size+RoundLarge-1) / RoundLarge * RoundLarge
	if d.down {
		d.next -= span
		return d.next, true
	}
	addr := d.next
	d.next += span
	return addr, true
}

func (d *bumpDevice) Reserve(size, stream int64) uint64 {
	addr := d.vaNext
	d.vaNext += uint64(size)
	return addr
}

func (d *bumpDevice) Free(addr uint64, size int64)  { d.used -= size }
func (d *bumpDevice) Unmap(addr uint64, size int64) { d.used -= size }

func (d *bumpDevice) Map(addr uint64, size int64) bool {
	if d.capacity > 0 && d.used+size > d.capacity {
		return false
	}
	d.used += size
	return true
}

// records renders what the allocator emitted since the last call, for
// comparison, addresses relative to base.
func records(a *Allocator, base uint64) string {
	var out []string
	for _, r := range a.Drain() {
		switch r.Action {
		case snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted:
			continue
		}
		out = append(out, fmt.Sprintf("%s +%dMiB %d", r.Action, (r.Addr-base)>>20, r.Size))
	}
	return strings.Join(out, "; ")
}

// TestBestFitTieBreak: two equal free blocks in two segments, the older
// one at the higher address (cudaMalloc gave falling addresses). Torch
// 2.11 takes the lower address; main's segment counter the older one.
func TestBestFitTieBreak(t *testing.T) {
	for _, c := range []struct {
		tie       TieBreak
		wantFirst bool // the first segment's block is taken
	}{{TieAddress, false}, {TieSegmentCounter, true}, {TieBlockCounter, true}} {
		s := DefaultSettings()
		s.TieBreak = c.tie
		dev := newBump()
		dev.down = true
		a := New(s, dev)
		first, _ := a.Malloc(12<<20, 0, snapshot.PoolID{})
		second, _ := a.Malloc(12<<20, 0, snapshot.PoolID{})
		a.Free(first, false)
		a.Free(second, false)
		got, _ := a.Malloc(12<<20, 0, snapshot.PoolID{})
		if want := map[bool]uint64{true: first, false: second}[c.wantFirst]; got != want {
			t.Errorf("%s: Malloc took %#x, want %#x (first %#x, second %#x)", c.tie, got, want, first, second)
		}
		// A smaller block wins over any tie: best fit first.
		b, _ := a.Malloc(4<<20, 0, snapshot.PoolID{})
		if b != map[bool]uint64{true: second, false: first}[c.wantFirst] {
			t.Errorf("%s: a 4 MiB request went to %#x, want the other free 12 MiB segment", c.tie, b)
		}
	}
}

// TestStreams: a free block is only reused on its allocation stream.
func TestStreams(t *testing.T) {
	a := New(DefaultSettings(), newBump())
	x, _ := a.Malloc(4096, 7, snapshot.PoolID{})
	a.Free(x, false)
	y, _ := a.Malloc(4096, 9, snapshot.PoolID{})
	if y == x || len(a.segs) != 2 {
		t.Errorf("stream 9 reused stream 7's block (%#x, %#x, %d segments)", x, y, len(a.segs))
	}
	z, _ := a.Malloc(4096, 7, snapshot.PoolID{})
	if z != x {
		t.Errorf("stream 7 got %#x, want its cached %#x", z, x)
	}
}

// TestSplitMerge: the low end is handed out, the remainder follows, and
// frees merge back, deferred frees only when completed.
func TestSplitMerge(t *testing.T) {
	a := New(DefaultSettings(), newBump())
	p := snapshot.PoolID{}
	x, _ := a.Malloc(1000, 0, p)
	y, _ := a.Malloc(1000, 0, p)
	z, _ := a.Malloc(3000, 0, p)
	if y != x+1024 || z != y+1024 {
		t.Fatalf("small blocks at %#x %#x %#x, want consecutive from the low end", x, y, z)
	}
	a.Free(y, true) // record_stream: stays active until completed
	a.Free(x, false)
	segs := a.Segments()
	if len(segs) != 1 || len(segs[0].Blocks) != 4 || segs[0].Blocks[1].State != snapshot.BlockActivePendingFree {
		t.Fatalf("after freeing x and (pending) y: %+v", segs)
	}
	a.FreeCompleted(y)
	a.Free(z, false)
	segs = a.Segments()
	if len(segs) != 1 || len(segs[0].Blocks) != 1 || segs[0].Blocks[0].Size != SmallBuffer {
		t.Errorf("after every free: %+v, want one free 2 MiB block", segs)
	}
	// A large block keeps a remainder of up to 1 MiB inside.
	b := New(DefaultSettings(), newBump())
	w, _ := b.Malloc(19<<20+1, 0, p)
	if got := b.live[w].size; got != 20<<20 {
		t.Errorf("19 MiB + 1 in a 20 MiB segment: block of %d bytes, want the whole 20 MiB", got)
	}
	v, _ := b.Malloc(3<<20, 0, p)
	if got := b.live[v].size; got != 3<<20 || b.pools[poolKey{p, false}].free.len() != 1 {
		t.Errorf("3 MiB in a new 20 MiB segment: block of %d bytes, want 3 MiB and a free remainder", got)
	}
}

// TestOversize: with max_split_size_mb, small requests never take oversize
// blocks, and oversize requests only ones within max_non_split_rounding.
func TestOversize(t *testing.T) {
	s, err := ParseConf("max_split_size_mb:40")
	if err != nil {
		t.Fatal(err)
	}
	a := New(s, newBump())
	p := snapshot.PoolID{}
	big, _ := a.Malloc(50<<20, 0, p)
	a.Free(big, false)
	if got, _ := a.Malloc(30<<20, 0, p); got == big {
		t.Errorf("a 30 MiB request took the free 50 MiB oversize block")
	}
	if got, _ := a.Malloc(45<<20, 0, p); got != big {
		t.Errorf("a 45 MiB request did not take the free 50 MiB block (within 20 MiB)")
	}
	huge, _ := a.Malloc(80<<20, 0, p)
	a.Free(huge, false)
	if got, _ := a.Malloc(55<<20, 0, p); got == huge {
		t.Errorf("a 55 MiB request took an 80 MiB block, 25 MiB past it")
	}
}

// TestOOMRetry: a failed cudaMalloc frees every unsplit cached block
// (large pool first, in best-fit order, then small) and retries; a second
// failure is an oom of the rounded size.
func TestOOMRetry(t *testing.T) {
	dev := newBump()
	base := dev.next
	a := New(DefaultSettings(), dev)
	p := snapshot.PoolID{}
	s1, _ := a.Malloc(1000, 0, p)   // small segment at +0
	l1, _ := a.Malloc(12<<20, 0, p) // +2
	l2, _ := a.Malloc(20<<20, 0, p) // +14
	a.Malloc(3<<20, 0, p)           // +34, a 20 MiB segment split: its rest is not released
	for _, x := range []uint64{s1, l1, l2} {
		a.Free(x, false)
	}
	records(a, base)
	dev.capacity = dev.used + 10<<20 // 24 MiB more fits only once the cache is released
	if _, ok := a.Malloc(24<<20, 0, p); !ok {
		t.Fatal("Malloc after the release failed")
	}
	want := "segment_free +2MiB 12582912; segment_free +14MiB 20971520; segment_free +0MiB 2097152; segment_alloc +54MiB 25165824; alloc +54MiB 25165824"
	if got := records(a, base); got != want {
		t.Errorf("OOM retry recorded %q, want %q", got, want)
	}
	if a.Retries != 1 {
		t.Errorf("retries = %d, want 1", a.Retries)
	}
	if _, ok := a.Malloc(100<<20+1, 0, p); ok || a.OOMs != 1 {
		t.Errorf("a request past the capacity succeeded (OOMs %d)", a.OOMs)
	}
	recs := a.Drain()
	if last := recs[len(recs)-1]; last.Action != snapshot.ActionOOM || last.Size != 100<<20+512 {
		t.Errorf("failed request ended with %+v, want an oom of the rounded size", last)
	}
}

// TestReleaseAvailable: with max_split_size, a failed cudaMalloc first
// frees one cached block of at least max(request, max_split_size), before
// anything else and without counting a retry.
func TestReleaseAvailable(t *testing.T) {
	s, _ := ParseConf("max_split_size_mb:40")
	dev := newBump()
	base := dev.next
	a := New(s, &releasingDevice{bumpDevice: dev})
	p := snapshot.PoolID{}
	x, _ := a.Malloc(50<<20, 0, p)
	y, _ := a.Malloc(90<<20, 0, p)
	a.Free(x, false)
	a.Free(y, false)
	records(a, base)
	a.dev.(*releasingDevice).fail = 1
	// 60 MiB: no cached block within 20 MiB of it; cudaMalloc fails; the
	// 90 MiB block (the smallest ≥ 60 MiB) is released; the retry works.
	if _, ok := a.Malloc(60<<20, 0, p); !ok {
		t.Fatal("Malloc failed")
	}
	if want := "segment_free +50MiB 94371840; segment_alloc +140MiB 62914560; alloc +140MiB 62914560"; records(a, base) != want {
		t.Errorf("recorded %q, want %q", records(a, base), want)
	}
	if a.Retries != 0 {
		t.Errorf("retries = %d, want 0: release_available_cached_blocks is not the retry", a.Retries)
	}
}

// releasingDevice fails the next fail cudaMallocs, then grants.
type releasingDevice struct {
	*bumpDevice
	fail int
}

func (d *releasingDevice) Malloc(size, stream int64) (uint64, bool) {
	if d.fail > 0 {
		d.fail--
		return 0, false
	}
	return d.bumpDevice.Malloc(size, stream)
}

// TestExpandable: pages mapped at the lowest address that fits, holes
// filled first, whole free pages unmapped on release, the address space
// dropped without a record once nothing is mapped.
func TestExpandable(t *testing.T) {
	s, _ := ParseConf("expandable_segments:True")
	dev := newBump()
	base := dev.vaNext
	a := New(s, dev)
	p := snapshot.PoolID{}
	mb := func(n int64) uint64 { return base + uint64(n<<20) }
	x, _ := a.Malloc(3<<20, 0, p)
	if x != base || records(a, base) != "segment_map +0MiB 20971520; alloc +0MiB 3145728" {
		t.Fatalf("first 3 MiB: at %#x, recorded %q", x, records(a, base))
	}
	y, _ := a.Malloc(60<<20, 0, p)
	if y != mb(3) || records(a, base) != "segment_map +20MiB 62914560; alloc +3MiB 62914560" {
		t.Fatalf("60 MiB: at +%d MiB, recorded %q; want the free 17 MiB extended by 3 pages", (y-base)>>20, records(a, base))
	}
	z, _ := a.Malloc(10<<20, 0, p)
	if z != mb(63) {
		t.Fatalf("10 MiB at +%d MiB, want +63 (the mapped remainder)", (z-base)>>20)
	}
	a.Free(y, false)
	records(a, base)
	a.EmptyCache()
	if got := records(a, base); got != "segment_unmap +20MiB 41943040" {
		t.Errorf("release recorded %q, want the two whole pages under the freed block unmapped", got)
	}
	segs := a.Segments()
	if len(segs) != 2 || segs[0].Addr != base || segs[0].Size != 20<<20 || segs[1].Addr != mb(60) || segs[1].Size != 20<<20 {
		t.Fatalf("after the unmap: %+v, want two mapped ranges, +0 and +60, of 20 MiB", segs)
	}
	if a.Reserved != 40<<20 {
		t.Errorf("reserved = %d, want 40 MiB", a.Reserved)
	}
	// 30 MiB: the hole at +20 is filled first, from the free 17 MiB before it.
	w, _ := a.Malloc(30<<20, 0, p)
	if w != mb(3) || records(a, base) != "segment_map +20MiB 20971520; alloc +3MiB 31457280" {
		t.Errorf("30 MiB at +%d MiB recorded %q, want the hole filled from +3", (w-base)>>20, records(a, base))
	}
	for _, b := range []uint64{x, w, z} {
		a.Free(b, false)
	}
	records(a, base)
	a.EmptyCache()
	if got := records(a, base); got != "segment_unmap +60MiB 20971520; segment_unmap +0MiB 41943040" {
		t.Errorf("final release recorded %q, want the 20 MiB block first (best-fit order)", got)
	}
	if len(a.Segments()) != 0 || a.Reserved != 0 || len(a.segs) != 0 {
		t.Errorf("after releasing everything: %d segments, %d reserved, %d reservations", len(a.Segments()), a.Reserved, len(a.segs))
	}
}

// TestGarbageCollect: under a memory fraction with a GC threshold, a
// request the cache cannot serve first frees the unsplit large blocks at
// least as old (in get_free_block calls) as the mean, until reserved
// memory is back under the threshold.
func TestGarbageCollect(t *testing.T) {
	s := DefaultSettings()
	s.MemoryFraction, s.DeviceTotal, s.GCThreshold = 0.5, 400<<20, 0.3 // allowed 200 MiB, GC above 60 MiB
	dev := newBump()
	base := dev.next
	a := New(s, dev)
	p := snapshot.PoolID{}
	A, _ := a.Malloc(20<<20, 0, p) // large-pool get_free_block calls: 1
	B, _ := a.Malloc(20<<20, 0, p) // 2
	C, _ := a.Malloc(20<<20, 0, p) // 3
	a.Free(A, false)               // age base 3
	a.Free(B, false)               // 3
	a.Malloc(40<<20, 0, p)         // 4: reserved 60 MiB, not above the threshold: no GC
	a.Free(C, false)               // 4
	records(a, base)
	a.Malloc(50<<20, 0, p) // 5: ages A 2, B 2, C 1, mean 5/3: A and B go (40 MiB, the target)
	want := "segment_free +0MiB 20971520; segment_free +20MiB 20971520; segment_alloc +100MiB 52428800; alloc +100MiB 52428800"
	if got := records(a, base); got != want {
		t.Errorf("GC recorded %q, want %q", got, want)
	}
	// The fraction itself: past 200 MiB reserved cudaMalloc is not tried.
	if _, ok := a.Malloc(150<<20, 0, p); ok {
		t.Errorf("a request past the memory fraction succeeded")
	}
	if err := a.CheckValid(); err != nil {
		t.Error(err)
	}
}
