// This file lays out what was live at one moment block by block, for the
// allocator-state view of 'memscope serve': each reserved segment with its
// blocks and holes at their offsets, its pool and stream.

package attribution

import (
	"github.com/memscope/memscope/snapshot"
)

// SegmentLayout is one reserved segment at a moment, block by block.
type SegmentLayout struct {
	Addr       uint64
	Size       int64
	Expandable bool
	Small      bool // the small pool (2 MiB segments for requests up to 1 MiB)
	// Stream is the stream of its first block (of the end-state segment
	// when it has none); Pool its segment_pool_id.
	Stream int64
	Pool   snapshot.PoolID
	// Blocks are its active blocks by address; Holes the free gaps
	// between them, by address too.
	Blocks []LaidBlock
	Holes  []Hole
	SegmentFill
}

// LaidBlock is one active block of a segment: Offset from the segment's
// address, the block's index in Moment.Live.
type LaidBlock struct {
	Offset int64
	Live   int
}

// Hole is one free gap of a segment, at Offset from its address.
type Hole struct {
	Offset, Size int64
}

// SegmentLayouts lays out every reserved range at m (adjacent mapped ranges
// of an expandable segment are one, as for SegmentFills), in address order.
func (d *Device) SegmentLayouts(m *Moment) []SegmentLayout {
	if d.small == nil {
		d.holes(m) // fills d.small
	}
	out := []SegmentLayout{}
	base := 0 // index of s.Live[0] in m.Live
	m.segments(func(s *segmentView) {
		l := SegmentLayout{Addr: s.Addr, Size: int64(s.End - s.Addr), Expandable: s.Expandable, Pool: d.poolOf(s.Addr)}
		small, known := d.small[s.Addr]
		if !known {
			small = !s.Expandable && s.End-s.Addr == smallSegment
		}
		l.Small = small
		l.SegmentFill = SegmentFill{Addr: s.Addr, Size: l.Size, Expandable: s.Expandable, Blocks: len(s.Live), Holes: len(s.Holes)}
		if len(s.Live) > 0 {
			for base < len(m.Live) && m.Live[base].Addr != s.Live[0].Addr {
				base++
			}
			l.Stream = s.Live[0].Stream
		} else {
			l.Stream = d.segmentStream(s.Addr)
		}
		at := s.Addr
		for i := range s.Live {
			b := &s.Live[i]
			if b.Addr > at {
				l.Holes = append(l.Holes, Hole{Offset: int64(at - s.Addr), Size: int64(b.Addr - at)})
			}
			l.Blocks = append(l.Blocks, LaidBlock{Offset: int64(b.Addr - s.Addr), Live: base + i})
			at = max(at, b.Addr+uint64(b.Size))
			if b.PendingFree {
				l.PendingFree += b.Size
			} else {
				l.Allocated += b.Size
			}
		}
		if at < s.End {
			l.Holes = append(l.Holes, Hole{Offset: int64(at - s.Addr), Size: int64(s.End - at)})
		}
		for _, h := range l.Holes {
			l.Free += h.Size
			l.LargestHole = max(l.LargestHole, h.Size)
		}
		out = append(out, l)
	})
	return out
}

// segmentStream is the stream of the end-state segment at addr (0 when
// there is none).
func (d *Device) segmentStream(addr uint64) int64 {
	s := d.an.Snapshot
	for _, i := range s.SegmentsOf(d.Device) {
		if s.Segments[i].Address == addr {
			return s.Segments[i].Stream
		}
	}
	return 0
}

// FragmentationAt measures the free memory at any moment, as Frag does at
// the peak, the end and each OOM. At one of those moments it is Frag's
// own, with its verdict as settled (the peak's by the allocator model
// where it runs), so that every page says what `memscope frag` says.
func (d *Device) FragmentationAt(m *Moment) *Fragmentation {
	for _, f := range d.Frag {
		if f.Index == m.Index {
			return f
		}
	}
	return d.fragmentation(m)
}

// DeathOf returns the event that ended b (its free_requested, or its
// free_completed when no request was recorded), or -1 when it lives to the
// end.
func (d *Device) DeathOf(b *snapshot.LiveBlock) int {
	return d.class.life.deathOf(b)
}
