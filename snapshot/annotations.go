package snapshot

import (
	"cmp"
	"slices"
	"sort"
)

// Range is one external_annotations range on a device: a record_function
// scope such as "memscope/step/3/forward" or "Optimizer.step#AdamW.step".
type Range struct {
	Name    string
	StartUS int64
	EndUS   int64 // 0 while the range is still open at the end
	Depth   int   // nesting depth among the device's ranges, 0 outermost
}

// Contains reports whether time t (µs since the epoch) falls in the range.
func (r *Range) Contains(t int64) bool {
	return r.StartUS <= t && (r.EndUS == 0 || t <= r.EndUS)
}

// Ranges pairs the START and END annotations of device into ranges, in start
// order. An END with no START (its START fell out of the ring buffer) is
// dropped; a START with no END stays open.
func (s *Snapshot) Ranges(device int) []Range {
	annots := s.AnnotationsOf(device)
	var out []Range
	// The ranges still open, by name, as a stack each: top[name] is one
	// past the index in out of the latest, below[i] one past the one
	// opened before out[i] under the same name.
	top := make(map[string]int32, len(annots)/2)
	var below []int32
	depth := 0
	for _, ai := range annots {
		a := &s.Annotations[ai]
		if a.Start {
			below = append(below, top[a.Name])
			top[a.Name] = int32(len(out) + 1)
			out = append(out, Range{Name: a.Name, StartUS: a.TimeUS, Depth: depth})
			depth++
			continue
		}
		j := top[a.Name]
		if j == 0 {
			continue
		}
		out[j-1].EndUS = a.TimeUS
		top[a.Name] = below[j-1]
		depth = max(depth-1, 0)
	}
	// Stable by start; torch writes them in that order already.
	byStart := func(a, b Range) int { return cmp.Compare(a.StartUS, b.StartUS) }
	if !slices.IsSortedFunc(out, byStart) {
		slices.SortStableFunc(out, byStart)
	}
	return out
}

// RangesAt returns the ranges that contain time t, outermost first.
func RangesAt(ranges []Range, t int64) []Range {
	var out []Range
	for _, r := range ranges {
		if r.Contains(t) {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Depth < out[j].Depth })
	return out
}
