package allocator

import (
	"errors"
	"fmt"
)

// CheckValid verifies the allocator's invariants: every segment's blocks
// tile it end to end with consistent links; a block is in its pool's free
// set exactly when free and mapped, in the unmapped set exactly when
// unmapped; no two free blocks of like mapping touch (they would have
// merged), and each free set counts its split blocks; live holds
// exactly the allocated and pending blocks; no spare
// block is in a segment; Reserved is the sum of cudaMalloc'd and mapped
// bytes.
func (a *Allocator) CheckValid() error {
	var reserved int64
	inFree, inUnmapped, live, pending := 0, 0, 0, 0
	spare := make(map[*block]bool, len(a.spare))
	for _, b := range a.spare {
		if spare[b] || b.slotted {
			return fmt.Errorf("a spare block (%#x) kept twice or still in a what-if's slot", b.addr)
		}
		spare[b] = true
	}
	for addr, seg := range a.segs {
		if seg.addr != addr {
			return fmt.Errorf("segment %#x filed under %#x", seg.addr, addr)
		}
		if seg.head == nil || seg.head.prev != nil || seg.head.addr != seg.addr {
			return fmt.Errorf("segment %#x: its head block does not start it", addr)
		}
		cursor := seg.addr
		var total int64
		for b := seg.head; b != nil; b = b.next {
			switch {
			case spare[b]:
				return fmt.Errorf("segment %#x: block at %#x is also spare", addr, b.addr)
			case b.addr != cursor:
				return fmt.Errorf("segment %#x: block at %#x, want %#x", addr, b.addr, cursor)
			case b.size <= 0:
				return fmt.Errorf("segment %#x: block at %#x of %d bytes", addr, b.addr, b.size)
			case b.seg != seg || b.pool != seg.pool:
				return fmt.Errorf("segment %#x: block at %#x belongs elsewhere", addr, b.addr)
			case b.next != nil && b.next.prev != b:
				return fmt.Errorf("segment %#x: broken link after %#x", addr, b.addr)
			case b.unmapped && !seg.expandable:
				return fmt.Errorf("segment %#x: an unmapped block outside an expandable segment", addr)
			case b.unmapped && (b.allocated || b.pending):
				return fmt.Errorf("segment %#x: unmapped block at %#x in use", addr, b.addr)
			case b.allocated && b.pending:
				return fmt.Errorf("segment %#x: block at %#x both allocated and pending", addr, b.addr)
			case b.pending && (b.pendAt >= len(a.pend) || a.pend[b.pendAt] != b):
				return fmt.Errorf("segment %#x: pending block at %#x not in the pending list", addr, b.addr)
			}
			if b.pending {
				pending++
			}
			free := !b.allocated && !b.pending
			if b.inSet != free {
				return fmt.Errorf("segment %#x: block at %#x free %v but in its set %v", addr, b.addr, free, b.inSet)
			}
			if n := b.next; n != nil && free && !n.allocated && !n.pending && n.unmapped == b.unmapped {
				return fmt.Errorf("segment %#x: free blocks at %#x and %#x not merged", addr, b.addr, n.addr)
			}
			switch {
			case b.unmapped:
				inUnmapped++
			case free:
				inFree++
				reserved += b.size
			default:
				live++
				reserved += b.size
				if a.live != nil && a.live[b.addr] != b {
					return fmt.Errorf("segment %#x: block at %#x in use but not live", addr, b.addr)
				}
			}
			cursor += uint64(b.size)
			total += b.size
		}
		if total != seg.size {
			return fmt.Errorf("segment %#x: blocks of %d bytes in %d", addr, total, seg.size)
		}
	}
	if pending != len(a.pend) {
		return fmt.Errorf("%d blocks pending, %d in the pending list", pending, len(a.pend))
	}
	if a.live != nil && live != len(a.live) {
		return fmt.Errorf("%d blocks in use, %d live", live, len(a.live))
	}
	nFree, nUnmapped := 0, 0
	for _, p := range a.poolList {
		nFree += p.free.len()
		nUnmapped += len(p.unmapped.blocks)
		bs := p.free.all()
		for i := 1; i < len(bs); i++ {
			if !p.free.less(bs[i-1], bs[i]) {
				return errors.New("a free set out of order")
			}
		}
		for _, ch := range p.free.chunks {
			if len(ch) == 0 || len(ch) > runMax {
				return fmt.Errorf("a free set's run holds %d blocks", len(ch))
			}
		}
		if len(bs) != p.free.n {
			return fmt.Errorf("a free set counts %d blocks and holds %d", p.free.n, len(bs))
		}
		n, bytes := 0, int64(0)
		for _, b := range bs {
			if !b.seg.expandable && b.isSplit() {
				n++
				bytes += b.size
			}
		}
		if n != p.free.splitN || bytes != p.free.splitBytes {
			return fmt.Errorf("a free set counts %d split blocks of %d bytes and holds %d of %d", p.free.splitN, p.free.splitBytes, n, bytes)
		}
	}
	if nFree != inFree || nUnmapped != inUnmapped {
		return fmt.Errorf("sets hold %d free and %d unmapped blocks, segments %d and %d", nFree, nUnmapped, inFree, inUnmapped)
	}
	if reserved != a.Reserved {
		return fmt.Errorf("reserved %d, segments hold %d", a.Reserved, reserved)
	}
	return nil
}
