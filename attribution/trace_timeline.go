package attribution

import (
	"math"

	"github.com/memscope/memscope/snapshot"
	"github.com/memscope/memscope/trace"
)

// NotRecorded marks a quantity a source does not record in a Point.
const NotRecorded = -1

// TraceTimeline turns a profiler trace's memory series on one device into
// the snapshot replay's Point shape, so a report can draw either. A trace
// records allocated and reserved bytes (Total Allocated, Total Reserved)
// after each [memory] event; requested and active bytes are not in it and
// are NotRecorded. Index is the memory event's index in the trace; TimeUS
// is epoch µs, the snapshot's clock.
func TraceTimeline(tr *trace.Trace, dev trace.Device) []snapshot.Point {
	s := tr.Series(dev)
	out := make([]snapshot.Point, len(s.Points))
	for i, p := range s.Points {
		out[i] = snapshot.Point{Index: i, TimeUS: int64(math.Round(p.TimeUS)),
			Numbers: snapshot.Numbers{Requested: NotRecorded, Allocated: p.Allocated, Active: NotRecorded, Reserved: p.Reserved}}
	}
	return out
}
