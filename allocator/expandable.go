package allocator

import (
	"slices"

	"github.com/memscope/memscope/snapshot"
)

// This file holds expandable segments (Note [Expandable Segments]): one
// reserved address space per (stream, pool), pages mapped at the lowest
// address where free and unmapped space fits the request, fully free
// pages unmapped on release.

// vaSize is the address space an expandable segment reserves: pages for
// 1.125 × the device's memory (1 TiB's worth when the size is unknown).
func (a *Allocator) vaSize(page int64) int64 {
	total := a.set.DeviceTotal
	if total <= 0 || total > maxSize {
		total = 1 << 40
	}
	want := total + total/8
	return (want + page - 1) / page * page
}

// allocExpandable is try_allocate_expandable_block.
func (a *Allocator) allocExpandable(p *pool, stream, size int64) *block {
	c := a.findExpandable(p, stream, size)
	if c == nil {
		return nil
	}
	if c.unmapped && !a.mapBlock(c, min(c.size, size)) {
		return nil
	}
	for c.size < size {
		next := c.next
		if next == nil || !next.unmapped {
			return nil // cannot happen: findExpandable checked the space
		}
		if !a.mapBlock(next, min(size-c.size, next.size)) {
			return nil
		}
		c = next
	}
	p.free.remove(c)
	return c
}

// findExpandable is find_expandable_block: the lowest address on stream
// where free and unmapped blocks together hold size bytes, else a new
// expandable segment.
func (a *Allocator) findExpandable(p *pool, stream, size int64) *block {
	space := func(b *block) bool {
		var n int64
		for ; n < size && b.allocatable(); b = b.next {
			n += b.size
		}
		return n >= size
	}
	for i := p.unmapped.first(stream); i < len(p.unmapped.blocks) && p.unmapped.blocks[i].stream == stream; i++ {
		c := p.unmapped.blocks[i]
		if c.prev.allocatable() {
			c = c.prev
		}
		if space(c) {
			return c
		}
	}
	page := a.set.LargeSegmentSize
	if p.small {
		page = SmallBuffer
	}
	va := a.vaSize(page)
	addr := a.dev.Reserve(va, stream)
	seg := &segment{addr: addr, size: va, stream: stream, pool: p, counter: a.nextSeg + 1,
		expandable: true, pageSize: page}
	if !a.addSeg(seg) {
		return nil
	}
	a.nextSeg++
	b := a.newBlock(addr, seg.size, stream, p, seg)
	b.unmapped = true
	seg.head = b
	p.unmapped.insert(b)
	return b
}

// mapBlock is map_block: map the pages under the first size bytes of the
// unmapped block b, and merge them with the free blocks around.
func (a *Allocator) mapBlock(b *block, size int64) bool {
	seg := b.seg
	page := seg.pageSize
	off := int64(b.addr - seg.addr)
	begin, end := off/page, (off+size+page-1)/page
	start, n := seg.addr+uint64(begin*page), (end-begin)*page
	if n <= 0 || start != b.addr || n > b.size {
		return false
	}
	if !a.dev.Map(start, n) {
		return false
	}
	b.pool.unmapped.remove(b)
	b.unmapped = false
	if n < b.size {
		rest := a.newBlock(b.addr+uint64(n), b.size-n, b.stream, b.pool, seg)
		rest.unmapped = true
		splice(rest, b, b.next)
		b.pool.unmapped.insert(rest)
		b.size = n
	}
	a.tryMerge(b, b.prev)
	a.tryMerge(b, b.next)
	a.insertFree(b)
	a.Reserved += n
	a.emit(snapshot.ActionSegmentMap, start, n, b.stream)
	return true
}

// unmapBlock is unmap_block: unmap the whole pages inside the free block
// b; the partial pages at either end stay free blocks.
func (a *Allocator) unmapBlock(b *block) {
	seg := b.seg
	page := seg.pageSize
	off := int64(b.addr - seg.addr)
	begin, end := (off+page-1)/page, (off+b.size)/page
	if begin >= end {
		return
	}
	start, n := seg.addr+uint64(begin*page), (end-begin)*page
	b.pool.free.remove(b)
	if before := int64(start - b.addr); before > 0 {
		nb := a.newBlock(b.addr, before, b.stream, b.pool, seg)
		splice(nb, b.prev, b)
		a.insertFree(nb)
	}
	if after := b.size - int64(start-b.addr) - n; after > 0 {
		nb := a.newBlock(start+uint64(n), after, b.stream, b.pool, seg)
		splice(nb, b, b.next)
		a.insertFree(nb)
	}
	b.addr, b.size, b.unmapped = start, n, true
	a.tryMerge(b, b.prev)
	a.tryMerge(b, b.next)
	b.pool.unmapped.insert(b)
	a.Reserved -= n
	a.dev.Unmap(start, n)
	a.emit(snapshot.ActionSegmentUnmap, start, n, b.stream)
}

// sortBlocks orders blocks by address.
func sortBlocks(bs []*block) {
	slices.SortFunc(bs, func(x, y *block) int {
		switch {
		case x.addr < y.addr:
			return -1
		case x.addr > y.addr:
			return 1
		}
		return 0
	})
}
