package attribution

import "sort"

// SegmentFill is how full one reserved segment is at a moment.
type SegmentFill struct {
	Addr       uint64
	Size       int64
	Expandable bool // adjacent mapped ranges of an expandable segment, as one
	// Allocated and PendingFree are the bytes of its allocated blocks and
	// of blocks freed but not yet released (waiting on another stream);
	// Free is the rest, in Holes pieces, the largest LargestHole.
	Allocated, PendingFree, Free int64
	Blocks, Holes                int
	LargestHole                  int64
}

// SegmentFills are the segments at a moment, largest first, cut to a bound.
type SegmentFills struct {
	Shown []SegmentFill
	// Rest sums the segments left out (Addr 0); RestCount counts them.
	Rest      SegmentFill
	RestCount int
}

// SegmentFills measures every reserved range at m (adjacent mapped ranges
// of an expandable segment are one, as for holes) and keeps the largest
// maxShown.
func (d *Device) SegmentFills(m *Moment, maxShown int) SegmentFills {
	var all []SegmentFill
	li := 0
	for ri := 0; ri < len(m.Ranges); ri++ {
		r := m.Ranges[ri]
		start, end := r.Addr, r.End
		for r.Expandable && ri+1 < len(m.Ranges) && m.Ranges[ri+1].Expandable && m.Ranges[ri+1].Addr == end {
			ri++
			end = m.Ranges[ri].End
		}
		sf := SegmentFill{Addr: start, Size: int64(end - start), Expandable: r.Expandable}
		for li < len(m.Live) && m.Live[li].Addr < start {
			li++
		}
		at := start
		gap := func(to uint64) {
			if to > at {
				g := int64(to - at)
				sf.Free += g
				sf.Holes++
				sf.LargestHole = max(sf.LargestHole, g)
			}
		}
		for ; li < len(m.Live) && m.Live[li].Addr < end; li++ {
			b := &m.Live[li]
			gap(b.Addr)
			if b.PendingFree {
				sf.PendingFree += b.Size
			} else {
				sf.Allocated += b.Size
			}
			sf.Blocks++
			at = max(at, b.Addr+uint64(b.Size))
		}
		gap(end)
		all = append(all, sf)
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Size != all[j].Size {
			return all[i].Size > all[j].Size
		}
		return all[i].Addr < all[j].Addr
	})
	out := SegmentFills{Shown: all[:min(len(all), maxShown)]}
	for _, s := range all[len(out.Shown):] {
		out.RestCount++
		out.Rest.Size += s.Size
		out.Rest.Allocated += s.Allocated
		out.Rest.PendingFree += s.PendingFree
		out.Rest.Free += s.Free
		out.Rest.Blocks += s.Blocks
		out.Rest.Holes += s.Holes
		out.Rest.LargestHole = max(out.Rest.LargestHole, s.LargestHole)
	}
	if out.Shown == nil {
		out.Shown = []SegmentFill{}
	}
	return out
}
