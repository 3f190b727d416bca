package snapshot

import "sort"

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
	var out []Range
	open := map[string][]int{} // name → indexes into out of open ranges
	depth := 0
	for _, ai := range s.AnnotationsOf(device) {
		a := &s.Annotations[ai]
		if a.Start {
			open[a.Name] = append(open[a.Name], len(out))
			out = append(out, Range{Name: a.Name, StartUS: a.TimeUS, Depth: depth})
			depth++
			continue
		}
		st := open[a.Name]
		if len(st) == 0 {
			continue
		}
		out[st[len(st)-1]].EndUS = a.TimeUS
		open[a.Name] = st[:len(st)-1]
		depth = max(depth-1, 0)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartUS < out[j].StartUS })
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
