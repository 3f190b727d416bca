package allocator

import (
	"fmt"

	"github.com/memscope/memscope/snapshot"
)

// compareEnd compares the simulated end state with the snapshot's
// segments of device, block for block.
func (r *replayer) compareEnd(s *snapshot.Snapshot, device int) {
	rep := r.rep
	rep.EndChecked = true
	model := r.a.Segments()
	byAddr := make(map[uint64]*SegmentState, len(model))
	for i := range model {
		byAddr[model[i].Addr] = &model[i]
	}
	first := func(d EndDivergence) {
		if rep.EndFirst == nil {
			rep.EndFirst = &d
		}
	}
	seen := 0
	for _, si := range s.SegmentsOf(device) {
		want := &s.Segments[si]
		got := byAddr[want.Address]
		ok := got != nil && got.Size == want.TotalSize && len(got.Blocks) == len(want.Blocks)
		if got == nil {
			first(EndDivergence{Segment: want.Address, Block: -1,
				Want: fmt.Sprintf("%d bytes", want.TotalSize), Got: "no segment"})
		} else {
			seen++
			if got.Size != want.TotalSize || len(got.Blocks) != len(want.Blocks) {
				first(EndDivergence{Segment: want.Address, Block: -1,
					Want: fmt.Sprintf("%d bytes in %d blocks", want.TotalSize, len(want.Blocks)),
					Got:  fmt.Sprintf("%d bytes in %d blocks", got.Size, len(got.Blocks))})
			}
		}
		for bi := range want.Blocks {
			wb := &want.Blocks[bi]
			match := got != nil && bi < len(got.Blocks) && blockEqual(&got.Blocks[bi], wb)
			rep.EndBlocks.add(match)
			if !match {
				ok = false
				if got != nil && bi < len(got.Blocks) {
					gb := &got.Blocks[bi]
					first(EndDivergence{Segment: want.Address, Block: bi, Want: blockWords(wb.Address, wb.Size, wb.RequestedSize, wb.State),
						Got: blockWords(gb.Addr, gb.Size, gb.Requested, gb.State)})
				}
			}
		}
		rep.EndSegments.add(ok)
	}
	if len(model) > seen {
		inSnap := make(map[uint64]bool, len(model))
		for _, si := range s.SegmentsOf(device) {
			inSnap[s.Segments[si].Address] = true
		}
		for i := range model {
			if !inSnap[model[i].Addr] {
				rep.EndSegments.add(false)
				first(EndDivergence{Segment: model[i].Addr, Block: -1, Want: "no segment",
					Got: fmt.Sprintf("%d bytes", model[i].Size)})
			}
		}
	}
}

func blockEqual(g *BlockState, w *snapshot.Block) bool {
	if g.Addr != w.Address || g.Size != w.Size || g.State != w.State {
		return false
	}
	return !w.State.Active() || g.Requested == w.RequestedSize
}

func blockWords(addr uint64, size, req int64, st snapshot.BlockState) string {
	if st.Active() {
		return fmt.Sprintf("%s block of %d bytes (%d requested) at %#x", st, size, req, addr)
	}
	return fmt.Sprintf("%s block of %d bytes at %#x", st, size, addr)
}
