package snapshot

import (
	"slices"
	"sync"
)

// deviceIndex lists, per device, the indexes of its segments and
// annotations, and the devices in order: what every per-device pass
// (replay, ranges, fragmentation, summaries) needs, found once instead of
// by a scan of the whole snapshot per device, which made 10⁵ devices
// quadratic. It is built on first use and rebuilt when the Segments,
// Annotations or Traces slices are replaced or change length; a caller
// that changes a segment's or an annotation's Device in place after the
// first replay must replace the slice.
type deviceIndex struct {
	segs, anns   []int32 // indexes grouped by device: segs[segAt[d]:segAt[d+1]]…
	segDev       map[int][2]int32
	annDev       map[int][2]int32
	devices      []int
	seg0         *Segment
	ann0         *Annotation
	tr0          *[]Event
	nSeg, nAnn   int
	nTr, nonzero int
}

var indexMu sync.Mutex

func (s *Snapshot) index() *deviceIndex {
	indexMu.Lock()
	defer indexMu.Unlock()
	if x := s.devIndex; x != nil && x.fresh(s) {
		return x
	}
	x := buildIndex(s)
	s.devIndex = x
	return x
}

func first[T any](v []T) *T {
	if len(v) == 0 {
		return nil
	}
	return &v[0]
}

func nonEmpty(tr [][]Event) int {
	n := 0
	for _, t := range tr {
		if len(t) > 0 {
			n++
		}
	}
	return n
}

// fresh reports whether x still describes s. It costs one pass over the
// traces' lengths only when their count is small (the common case); with
// many devices it trusts the outer slice.
func (x *deviceIndex) fresh(s *Snapshot) bool {
	if x.nSeg != len(s.Segments) || x.seg0 != first(s.Segments) ||
		x.nAnn != len(s.Annotations) || x.ann0 != first(s.Annotations) ||
		x.nTr != len(s.Traces) || x.tr0 != first(s.Traces) {
		return false
	}
	return len(s.Traces) > 64 || nonEmpty(s.Traces) == x.nonzero
}

func buildIndex(s *Snapshot) *deviceIndex {
	x := &deviceIndex{seg0: first(s.Segments), ann0: first(s.Annotations), tr0: first(s.Traces),
		nSeg: len(s.Segments), nAnn: len(s.Annotations), nTr: len(s.Traces), nonzero: nonEmpty(s.Traces)}
	x.segs, x.segDev = group(len(s.Segments), func(i int) int { return s.Segments[i].Device })
	x.anns, x.annDev = group(len(s.Annotations), func(i int) int { return s.Annotations[i].Device })
	seen := map[int]bool{}
	for d := range x.segDev {
		seen[d] = true
	}
	for d, tr := range s.Traces {
		if len(tr) > 0 {
			seen[d] = true
		}
	}
	for d := range seen {
		x.devices = append(x.devices, d)
	}
	slices.Sort(x.devices)
	return x
}

// group sorts the indexes 0..n-1 by device, keeping file order within a
// device, and returns them with each device's span.
func group(n int, device func(int) int) ([]int32, map[int][2]int32) {
	count := map[int]int32{}
	for i := range n {
		count[device(i)]++
	}
	spans := make(map[int][2]int32, len(count))
	keys := make([]int, 0, len(count))
	for d := range count {
		keys = append(keys, d)
	}
	slices.Sort(keys)
	var at int32
	for _, d := range keys {
		spans[d] = [2]int32{at, at}
		at += count[d]
	}
	out := make([]int32, n)
	for i := range n {
		d := device(i)
		sp := spans[d]
		out[sp[1]] = int32(i)
		sp[1]++
		spans[d] = sp
	}
	return out, spans
}

// SegmentsOf returns the indexes into s.Segments of device's segments, in
// file order. The slice is shared: do not modify it.
func (s *Snapshot) SegmentsOf(device int) []int32 {
	x := s.index()
	sp := x.segDev[device]
	return x.segs[sp[0]:sp[1]:sp[1]]
}

// AnnotationsOf returns the indexes into s.Annotations of device's
// annotations, in file order. The slice is shared: do not modify it.
func (s *Snapshot) AnnotationsOf(device int) []int32 {
	x := s.index()
	sp := x.annDev[device]
	return x.anns[sp[0]:sp[1]:sp[1]]
}
