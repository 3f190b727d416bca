package allocator

import (
	"github.com/memscope/memscope/snapshot"
)

// block is one Block of torch's allocator: a range of a segment, allocated,
// waiting for its free to complete, free (in its pool's freeSet) or, in an
// expandable segment, unmapped (in its pool's unmappedSet).
type block struct {
	addr      uint64
	size      int64
	requested int64
	stream    int64
	pool      *pool
	seg       *segment
	prev      *block
	next      *block
	counter   int64 // registration counter (TieBlockCounter)
	gcBase    int64 // pool.gcCalls when the block was inserted into the free set
	allocated bool
	pending   bool // freed, its free_completed not yet seen (event_count > 0)
	pendAt    int  // while pending: its index in Allocator.pend
	unmapped  bool // !mapped: only in expandable segments
	inSet     bool
	slotted   bool  // a what-if's slot holds it (whatIf.setBlock)
	split     int64 // the bytes it adds to its pool's free set's splitBytes (0: none)
}

func (b *block) isSplit() bool { return b.prev != nil || b.next != nil }

// allocatable is find_expandable_block's test.
func (b *block) allocatable() bool { return b != nil && !b.allocated && !b.pending }

// segment is one cudaMalloc, or one expandable segment's reserved address
// space (whose mapped ranges the snapshot lists as segments).
type segment struct {
	addr       uint64
	size       int64
	stream     int64
	pool       *pool
	counter    int64 // creation order (TieSegmentCounter)
	expandable bool
	pageSize   int64
	head       *block // the lowest block
}

// pool is one BlockPool: a small or large pool of the default pool or of a
// private pool.
type pool struct {
	id       snapshot.PoolID
	small    bool
	free     freeSet
	unmapped unmappedSet
	gcCalls  int64 // get_free_blocks_call_count
}

// Device answers what the model cannot know: whether the driver grants
// memory, and at which address (ALLOCATOR.md §3.11). Replay answers from
// the recording; a what-if from a capacity model.
type Device interface {
	// Malloc is cudaMalloc of size bytes for stream: the address, or false.
	Malloc(size int64, stream int64) (uint64, bool)
	// Reserve is cuMemAddressReserve of an expandable segment's address
	// space, for stream: its base address.
	Reserve(size int64, stream int64) uint64
	// Map is cuMemCreate of size bytes of pages mapped at addr: false when
	// the device is out of memory.
	Map(addr uint64, size int64) bool
	// Free is cudaFree of a segment; Unmap the release of mapped pages.
	Free(addr uint64, size int64)
	Unmap(addr uint64, size int64)
}

// Record is one trace entry the model emits: what torch would record.
type Record struct {
	Action snapshot.Action
	Addr   uint64
	Size   int64
	Stream int64
}

// Allocator is one device's caching allocator (DeviceCachingAllocator).
// It is not safe for concurrent use.
type Allocator struct {
	set      Settings
	dev      Device
	pools    map[poolKey]*pool
	def      [2]*pool // the default pool's large and small, once made
	poolList []*pool  // creation order, for deterministic release
	// live holds the allocated and pending blocks by address; nil in a
	// model whose caller keeps its blocks (a what-if, by slot), which then
	// frees by block (free, freeCompleted).
	live    map[uint64]*block
	pend    []*block // the pending blocks, in no order
	segs    map[uint64]*segment
	spans   runs[*segment] // segs by address
	nextCtr int64          // registration_counter_global
	nextSeg int64          // segment creation counter
	// spare holds blocks that freeBlock merged away, for newBlock to
	// reuse: a split and the merge that undoes it, the steady state of a
	// training loop, then allocate nothing.
	spare []*block

	// Reserved is total_allocated_memory: bytes of cudaMalloc'd segments
	// plus mapped pages.
	Reserved int64
	// Retries counts num_alloc_retries; OOMs num_ooms.
	Retries, OOMs int

	out []Record // emitted since the last drain
}

type poolKey struct {
	id    snapshot.PoolID
	small bool
}

// New returns an empty allocator with settings s over dev.
func New(s Settings, dev Device) *Allocator {
	return &Allocator{set: s, dev: dev, pools: map[poolKey]*pool{},
		live: map[uint64]*block{}, segs: map[uint64]*segment{}}
}

// Settings returns the allocator's settings.
func (a *Allocator) Settings() Settings { return a.set }

// Drain returns the records emitted since the last Drain. The slice is
// reused by the next operation.
func (a *Allocator) Drain() []Record {
	out := a.out
	a.out = a.out[:0]
	return out
}

func (a *Allocator) emit(act snapshot.Action, addr uint64, size, stream int64) {
	a.out = append(a.out, Record{act, addr, size, stream})
}

func (a *Allocator) pool(id snapshot.PoolID, small bool) *pool {
	def := id.IsDefault()
	s := 0
	if small {
		s = 1
	}
	if def && a.def[s] != nil {
		return a.def[s]
	}
	k := poolKey{id, small}
	p := a.pools[k]
	if p == nil {
		p = &pool{id: id, small: small, free: freeSet{tie: a.set.TieBreak}}
		a.pools[k] = p
		a.poolList = append(a.poolList, p)
	}
	if def {
		a.def[s] = p
	}
	return p
}

func (a *Allocator) newBlock(addr uint64, size, stream int64, p *pool, seg *segment) *block {
	a.nextCtr++
	if n := len(a.spare); n > 0 {
		b := a.spare[n-1]
		a.spare = a.spare[:n-1]
		*b = block{addr: addr, size: size, stream: stream, pool: p, seg: seg, counter: a.nextCtr}
		return b
	}
	return &block{addr: addr, size: size, stream: stream, pool: p, seg: seg, counter: a.nextCtr}
}

// spareMax bounds Allocator.spare.
const spareMax = 64

// recycle keeps b, merged away, for newBlock, unless a what-if's slot may
// still name it (slotted: the model completed its free itself, in a
// release, before the trace's free_completed).
func (a *Allocator) recycle(b *block) {
	if !b.slotted && len(a.spare) < spareMax {
		a.spare = append(a.spare, b)
	}
}

func (a *Allocator) insertFree(b *block) {
	b.gcBase = b.pool.gcCalls
	b.pool.free.insert(b)
}

// Malloc serves a request of orig bytes on stream from pool id (the
// default pool is the zero PoolID). It returns the block's address, or
// false after recording an oom.
func (a *Allocator) Malloc(orig, stream int64, id snapshot.PoolID) (uint64, bool) {
	b := a.malloc(orig, stream, id)
	if b == nil {
		return 0, false
	}
	return b.addr, true
}

// malloc is Malloc returning the block, or nil.
func (a *Allocator) malloc(orig, stream int64, id snapshot.PoolID) *block {
	size := a.set.RoundSize(orig)
	p := a.pool(id, size <= SmallSize)
	allocSize := a.set.AllocationSize(size)
	expandable := a.set.Expandable

	if at, ok := a.getFreeBlock(p, stream, size, expandable); ok {
		b := a.allocFoundAt(p, at, size, stream, expandable)
		b.requested = orig
		a.emit(snapshot.ActionAlloc, b.addr, orig, stream)
		return b
	}
	if _, ok := a.set.allowedMax(); ok && a.set.GCThreshold > 0 {
		a.garbageCollect()
	}
	b := a.allocBlock(p, stream, size, allocSize, expandable)
	if b == nil && a.releaseAvailable(p, stream, size) {
		b = a.allocBlock(p, stream, size, allocSize, expandable)
	}
	if b == nil {
		a.releaseCached()
		a.Retries++
		b = a.allocBlock(p, stream, size, allocSize, expandable)
	}
	if b == nil {
		a.OOMs++
		a.emit(snapshot.ActionOOM, 0, size, stream)
		return nil
	}
	b = a.allocFound(b, size, stream, expandable)
	b.requested = orig
	a.emit(snapshot.ActionAlloc, b.addr, orig, stream)
	return b
}

// getFreeBlock is get_free_block: best fit on stream, with the expandable
// and oversize rules. It returns the block's place in p's free set, where
// allocFoundAt takes it from.
func (a *Allocator) getFreeBlock(p *pool, stream, size int64, expandable bool) (rpos, bool) {
	if _, ok := a.set.allowedMax(); ok && a.set.GCThreshold > 0 {
		p.gcCalls++
	}
	return a.findFree(p, stream, size, expandable)
}

// findFree returns the place of the block of p's free set get_free_block
// takes, or false.
func (a *Allocator) findFree(p *pool, stream, size int64, expandable bool) (rpos, bool) {
	f := &p.free
	i := f.lowerBound(stream, size)
	if !f.valid(i) || f.at(i).stream != stream {
		return i, false
	}
	if f.at(i).seg.expandable {
		if expandable {
			grow := func(b *block) int64 {
				if b.next != nil && b.next.unmapped {
					return b.size + b.next.size
				}
				return b.size
			}
			for f.at(i).seg.expandable {
				j := f.next(i)
				if !f.valid(j) || f.at(j).stream != stream || grow(f.at(j)) >= grow(f.at(i)) {
					break
				}
				i = j
			}
		} else {
			for i = f.next(i); f.valid(i) && f.at(i).seg.expandable && f.at(i).stream == stream; i = f.next(i) {
			}
			if !f.valid(i) || f.at(i).stream != stream {
				return i, false
			}
		}
	}
	b := f.at(i)
	if size < a.set.MaxSplitSize && b.size >= a.set.MaxSplitSize {
		return i, false
	}
	if size >= a.set.MaxSplitSize && b.size >= size+a.set.MaxNonSplitRounding {
		return i, false
	}
	return i, true
}

// WouldReuse reports whether a request of orig bytes on stream would be
// served from cached free blocks, with no new memory.
func (a *Allocator) WouldReuse(orig, stream int64, id snapshot.PoolID) bool {
	size := a.set.RoundSize(orig)
	p := a.pools[poolKey{id, size <= SmallSize}]
	if p == nil {
		return false
	}
	_, ok := a.findFree(p, stream, size, a.set.Expandable)
	return ok
}

// shouldSplit is should_split.
func (a *Allocator) shouldSplit(b *block, size int64, expandable bool) bool {
	rest := b.size - size
	if b.pool.small || expandable {
		return rest >= MinBlockSize
	}
	return size < a.set.MaxSplitSize && rest > SmallSize
}

// allocFound is alloc_found_block: the low end of b becomes the allocated
// block, the rest goes back to the pool.
func (a *Allocator) allocFound(b *block, size, stream int64, expandable bool) *block {
	if a.shouldSplit(b, size, expandable) {
		rest := b
		b = a.newBlock(rest.addr, size, stream, rest.pool, rest.seg)
		splice(b, rest.prev, rest)
		rest.addr += uint64(size)
		rest.size -= size
		a.insertFree(rest)
	}
	b.allocated = true
	a.index(b)
	return b
}

// allocFoundAt is allocFound of the free block at place at of p's free
// set. A split's rest takes the block's entry in the set (rekey: a
// smaller key, so at most a move within the run), not a removal and an
// insertion.
func (a *Allocator) allocFoundAt(p *pool, at rpos, size, stream int64, expandable bool) *block {
	f := &p.free
	b := f.at(at)
	if !a.shouldSplit(b, size, expandable) {
		f.take(at)
		return a.allocFound(b, size, stream, expandable)
	}
	rest := b
	b = a.newBlock(rest.addr, size, stream, rest.pool, rest.seg)
	splice(b, rest.prev, rest)
	rest.addr += uint64(size)
	rest.size -= size
	rest.gcBase = p.gcCalls
	f.rekeyDown(at, rest)
	b.allocated = true
	a.index(b)
	return b
}

// index keeps b in live, when the model keeps blocks by address.
func (a *Allocator) index(b *block) {
	if a.live != nil {
		a.live[b.addr] = b
	}
}

// setPending marks b freed and waiting for its free_completed.
func (a *Allocator) setPending(b *block) {
	b.pending = true
	b.pendAt = len(a.pend)
	a.pend = append(a.pend, b)
}

// allocBlock is alloc_block: a new segment (or mapped pages) for the request.
func (a *Allocator) allocBlock(p *pool, stream, size, allocSize int64, expandable bool) *block {
	if lim, ok := a.set.allowedMax(); ok && a.Reserved+allocSize > lim {
		return nil
	}
	if expandable {
		return a.allocExpandable(p, stream, size)
	}
	addr, ok := a.dev.Malloc(allocSize, stream)
	if !ok {
		return nil
	}
	seg := &segment{addr: addr, size: allocSize, stream: stream, pool: p, counter: a.nextSeg + 1}
	if !a.addSeg(seg) {
		a.dev.Free(addr, allocSize)
		return nil
	}
	a.nextSeg++
	b := a.newBlock(addr, allocSize, stream, p, seg)
	seg.head = b
	a.Reserved += allocSize
	a.emit(snapshot.ActionSegmentAlloc, addr, allocSize, stream)
	return b
}

// Free is free followed, unless pending, by free_block: the block at addr
// stops being allocated; with pending its memory stays in use until
// FreeCompleted (record_stream). It reports whether addr was allocated.
func (a *Allocator) Free(addr uint64, pending bool) bool {
	return a.free(a.live[addr], pending)
}

// free is Free of the live block b (nil: none).
func (a *Allocator) free(b *block, pending bool) bool {
	if b == nil || !b.allocated {
		return false
	}
	b.allocated = false
	a.emit(snapshot.ActionFreeRequested, b.addr, b.requested, b.stream)
	if pending {
		a.setPending(b)
		return true
	}
	a.freeBlock(b)
	return true
}

// FreeCompleted is free_block for a block freed with pending. It reports
// whether addr was such a block.
func (a *Allocator) FreeCompleted(addr uint64) bool {
	return a.freeCompleted(a.live[addr])
}

// freeCompleted is FreeCompleted of the live block b (nil: none).
func (a *Allocator) freeCompleted(b *block) bool {
	if b == nil || b.allocated {
		return false
	}
	a.freeBlock(b)
	return true
}

// freeBlock is free_block: merge with free neighbours, back to the pool.
func (a *Allocator) freeBlock(b *block) {
	a.emit(snapshot.ActionFreeCompleted, b.addr, b.requested, b.stream)
	delete(a.live, b.addr)
	if b.pending {
		last := a.pend[len(a.pend)-1]
		a.pend[b.pendAt], last.pendAt = last, b.pendAt
		a.pend[len(a.pend)-1] = nil
		a.pend = a.pend[:len(a.pend)-1]
	}
	b.pending = false
	b.requested = 0
	// The merged block takes the entry of a neighbour it absorbs (rekeyUp:
	// a larger key), rather than that entry's removal and an insertion.
	keep := b.next
	if !mergeable(b, keep) {
		keep = b.prev
	}
	if !mergeable(b, keep) {
		a.insertFree(b)
		return
	}
	if prev := b.prev; keep == b.next && a.tryMerge(b, prev) > 0 {
		a.recycle(prev)
	}
	f := &b.pool.free
	at := f.placeOf(keep)
	keep.inSet = false
	merge(b, keep)
	b.gcBase = b.pool.gcCalls
	b.inSet = true
	f.rekeyUp(at, b)
	a.recycle(keep)
}

// mergeable reports whether src, a neighbour of the free block dst, is
// free and merges with it (both mapped, or both unmapped).
func mergeable(dst, src *block) bool {
	return src != nil && !src.allocated && !src.pending && dst.unmapped == src.unmapped
}

// tryMerge is try_merge_blocks: dst absorbs src when src is free and
// mapped alike. It returns the bytes absorbed.
func (a *Allocator) tryMerge(dst, src *block) int64 {
	if !mergeable(dst, src) {
		return 0
	}
	if src.unmapped {
		src.pool.unmapped.remove(src)
	} else {
		src.pool.free.remove(src)
	}
	merge(dst, src)
	return src.size
}

// merge makes dst, a neighbour of src, cover both (src is out of its
// set).
func merge(dst, src *block) {
	if dst.prev == src {
		dst.addr = src.addr
		dst.prev = src.prev
		if dst.prev != nil {
			dst.prev.next = dst
		} else {
			dst.seg.head = dst
		}
	} else {
		dst.next = src.next
		if dst.next != nil {
			dst.next.prev = dst
		}
	}
	dst.size += src.size
}

// EmptyCache is torch.cuda.empty_cache(): release_cached_blocks.
func (a *Allocator) EmptyCache() { a.releaseCached() }

// splice links b between before and after (either may be nil), keeping
// the segment's head.
func splice(b, before, after *block) {
	b.prev, b.next = before, after
	if before != nil {
		before.next = b
	} else {
		b.seg.head = b
	}
	if after != nil {
		after.prev = b
	}
}
