package allocator

import (
	"slices"

	"github.com/memscope/memscope/snapshot"
)

// This file returns memory to the device: release_block,
// release_available_cached_blocks, release_cached_blocks and
// garbage_collect_cached_blocks.

// releaseBlock is release_block: cudaFree of an unsplit free block.
func (a *Allocator) releaseBlock(b *block) {
	a.emit(snapshot.ActionSegmentFree, b.addr, b.size, b.stream)
	b.pool.free.remove(b)
	a.Reserved -= b.size
	a.dropSeg(b.seg)
	a.dev.Free(b.addr, b.size)
}

// releaseAvailable is release_available_cached_blocks: with a
// max_split_size, free one unsplit block big enough, else oversize blocks
// from the largest down until enough is released.
func (a *Allocator) releaseAvailable(p *pool, stream, size int64) bool {
	if a.set.MaxSplitSize == NoLimit {
		return false
	}
	key := max(size, a.set.MaxSplitSize)
	f := &p.free
	i := f.lowerBound(stream, key)
	// Blocks at or past max_split_size are never split in torch; the
	// isSplit tests only keep a damaged start state from breaking the model.
	if f.valid(i) && f.at(i).stream == stream && !f.at(i).seg.expandable {
		if f.at(i).isSplit() {
			return false
		}
		a.releaseBlock(f.at(i))
		return true
	}
	if i = f.prev(i); !f.valid(i) {
		return false
	}
	// From the largest block below key down; releasing one leaves the
	// places before it as they were.
	var released int64
	for released < key && f.at(i).size >= a.set.MaxSplitSize && f.at(i).stream == stream {
		cur := f.at(i)
		j := f.prev(i)
		first := !f.valid(j)
		if !first {
			i = j
		}
		if !cur.seg.expandable && !cur.isSplit() {
			released += cur.size
			a.releaseBlock(cur)
		}
		if first {
			break
		}
	}
	return released >= key
}

// releaseCached is release_cached_blocks for the default pool, outside a
// graph capture: every unsplit free block of the large then the small
// pool is freed, and the free pages of expandable segments unmapped.
// Private pools are kept: whether one is freeable is not recorded.
func (a *Allocator) releaseCached() {
	// synchronize_and_free_events: pending frees complete first.
	pend := slices.Clone(a.pend)
	sortBlocks(pend)
	for _, b := range pend {
		a.freeBlock(b)
	}
	var zero snapshot.PoolID
	for _, small := range []bool{false, true} {
		p := a.pools[poolKey{zero, small}]
		if p == nil {
			continue
		}
		a.releaseBlocks(p)
	}
}

// releaseBlocks is release_blocks.
func (a *Allocator) releaseBlocks(p *pool) {
	if p.free.n == p.free.splitN {
		return // every free block is part of a split segment: none to free or unmap
	}
	var unmap []*block
	for _, b := range p.free.wholeOrExpandable() {
		switch {
		case b.seg.expandable:
			unmap = append(unmap, b)
		case !b.isSplit():
			a.releaseBlock(b)
		}
	}
	for _, b := range unmap {
		a.unmapBlock(b)
		if b.unmapped && b.prev == nil && b.next == nil {
			p.unmapped.remove(b)
			a.dropSeg(b.seg)
		}
	}
}

// garbageCollect is garbage_collect_cached_blocks: under a memory fraction
// with a GC threshold, free unsplit large blocks of at least the mean age
// until reserved memory is back under the threshold.
func (a *Allocator) garbageCollect() {
	lim, _ := a.set.allowedMax()
	threshold := int64(a.set.GCThreshold * float64(lim))
	if a.Reserved <= threshold {
		return
	}
	p := a.pools[poolKey{snapshot.PoolID{}, false}]
	if p == nil {
		return
	}
	if p.free.n == p.free.splitN {
		return // no unsplit free block to free
	}
	target := a.Reserved - threshold
	var totalAge int64
	n := 0
	for _, b := range p.free.wholeOrExpandable() {
		if !b.isSplit() {
			totalAge += p.gcCalls - b.gcBase
			n++
		}
	}
	var reclaimed int64
	for freed := true; reclaimed < target && freed && n > 0; {
		ageThreshold := float64(totalAge) / float64(n)
		freed = false
		for _, b := range p.free.wholeOrExpandable() {
			age := p.gcCalls - b.gcBase
			if !b.isSplit() && !b.seg.expandable && float64(age) >= ageThreshold {
				freed = true
				reclaimed += b.size
				totalAge -= age
				n--
				a.releaseBlock(b)
			}
		}
	}
}
