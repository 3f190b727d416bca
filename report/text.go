package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/srcpath"
	"github.com/memscope/memscope/internal/textsafe"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// joinWindowsText says why a join found nothing when the trace and the
// snapshot do not overlap in time, naming both windows.
func joinWindowsText(ew *errWriter, j *attribution.Join) {
	switch {
	case j == nil || !j.Disjoint():
	case !j.TraceEvents():
		ew.printf("  the trace has no memory events on device %d: nothing to join\n", j.Device)
	default:
		ew.printf("  the trace's memory events (%s – %s) and the snapshot's recorded events (%s – %s) do not overlap in time:\n  nothing can be joined; give the trace recorded by the same run, during the snapshot's recording\n",
			clock(j.OverlapStartUS), clock(j.OverlapEndUS), clock(j.SnapshotStartUS), clock(j.SnapshotEndUS))
	}
}

// clock writes an epoch µs time as a UTC date and time to the millisecond.
func clock(us int64) string {
	if us == 0 {
		return "time not recorded"
	}
	return time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// offset is a moment's time after the device's first event, "+1.23 ms",
// or "time not recorded".
func offset(d *attribution.Device, us int64) string {
	if !d.Timeline.Timed || len(d.Timeline.Events) == 0 {
		return "time not recorded"
	}
	return "+" + units.Duration(us-d.Timeline.Events[0].TimeUS)
}

// eventWhere says where event index lies in t's history: "event 12", or,
// where there is no event to name, "before the first recorded event" or
// "in the end state" with why (nothing recorded, or a trace of one entry
// from a recording that keeps one) — never "event -1". A nil t names the
// event when there is one.
func eventWhere(t *snapshot.Timeline, index int) string {
	switch {
	case t == nil && index < 0:
		return "before the first event"
	case t == nil:
		return fmt.Sprintf("event %d", index)
	case len(t.Events) == 0:
		return "in the end state: no history recorded"
	case t.OneEntry:
		return "in the end state: the trace holds one entry"
	case index < 0:
		return "before the first recorded event"
	}
	return fmt.Sprintf("event %d", index)
}

func signed(n int64) string {
	if n >= 0 {
		return "+" + units.Bytes(n)
	}
	return units.Bytes(n)
}

// stackText writes a stack the way sites are chosen: the frames that count
// (user and library code), innermost first, with the frames folded away
// (torch, training loops, the standard library, C++) counted.
func stackText(ew *errWriter, an *attribution.Analysis, id snapshot.StackID) {
	st := an.Snapshot.Stacks
	frames := st.Stack(id)
	if len(frames) == 0 {
		ew.printf("    (no stack recorded)\n")
		return
	}
	folded := 0
	tab := an.Filter.For(st)
	for _, fid := range frames {
		fr := st.Frame(fid)
		if !tab.Counts(fid) {
			folded++
			continue
		}
		ew.printf("    %s\n", clip(attribution.FrameLabel(fr), 90))
	}
	if folded > 0 {
		ew.printf("    (%s of torch, training loops, the standard library and C++ folded)\n", nouns(folded, "frame"))
	}
}

// sourceLine starts the text of one file's result with the file's name.
func sourceLine(w io.Writer, source string) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n\n", source)
	return ew.err
}

// siteHeading heads the site column of a text table.
const siteHeading = "site (innermost user or library frame)"

// siteLines is a site's name in a text table, each line clipped to width:
// "file:line function", and for a library site a second line naming the
// user's line that called it.
func siteLines(st *snapshot.Stacks, s attribution.SiteBytes, width int) []string {
	if !s.Site.HasCaller {
		return []string{clip(s.Label, width)}
	}
	const from = "  called from "
	return []string{clip(attribution.SiteKey(st, s.Site), width),
		from + clip(attribution.FrameLabel(st.Frame(s.Site.Caller)), width-len(from))}
}

// clip fits s to n characters by the one rule of labels (srcpath.Clip):
// files lose their directories from the left, never their names or lines.
func clip(s string, n int) string { return srcpath.Clip(s, n) }

// errWriter keeps the first write error so renderers can write freely and
// check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// printf prints to e with its string arguments escaped (see safe.go).
func (e *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, escapeArgs(args)...)
}

// wrap breaks s into lines of at most width columns at spaces, indenting
// every line after the first with indent.
func wrap(s string, width int, indent string) safeText {
	var b strings.Builder
	col := 0
	for i, w := range strings.Fields(textsafe.Escape(s)) {
		n := len([]rune(w))
		if i > 0 && col+1+n > width {
			b.WriteString("\n" + indent)
			col = len(indent)
		} else if i > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += n
	}
	return safeText(b.String())
}

// phasesFrom says where a device's step boundaries came from.
func phasesFrom(d *attribution.Device) string {
	s := stepsFromText(d.Phases.Source, d.Phases.Range, len(d.Timeline.Events))
	if d.Phases.CutElsewhere {
		s += cutByText(d.Phases.CutDevice)
	}
	return s
}

// stepsLine says how many steps were found and from what.
func stepsLine(n int, from string) string {
	if n == 0 {
		return "no steps found: " + from
	}
	return nouns(n, "step") + ", from " + from
}

// engineKnob names the setting that sizes a serving engine's KV pool.
func engineKnob(engine string) string {
	switch engine {
	case "vLLM":
		return "gpu_memory_utilization (the share of the device for weights, activations and the pool)"
	case "SGLang":
		return "mem_fraction_static (the share of the device for weights and the pool)"
	case "LMDeploy":
		return "cache_max_entry_count (the share of free memory for the pool)"
	case "TensorRT-LLM":
		return "KvCacheConfig's free_gpu_memory_fraction"
	}
	return "the engine's memory fraction"
}

// endStateNote says why a device's peak is the snapshot's end state, when
// it has no allocation history: none recorded, or a trace of one entry;
// "" when it has one.
func endStateNote(d *attribution.DeviceSummary) string {
	switch {
	case d.Events == 0:
		return "is the snapshot's end state: no allocation history was recorded"
	case oneEntry(d.Warnings):
		return "is the snapshot's end state: the trace holds one entry, no allocation history (see the warnings)"
	}
	return ""
}

// oneEntry reports whether a device's warnings say its trace holds one
// entry from a recording that keeps one (snapshot.Timeline.OneEntry).
func oneEntry(ws []snapshot.Warning) bool {
	for _, w := range ws {
		if w.Kind == snapshot.WarnOneEntry {
			return true
		}
	}
	return false
}

// privatePoolsText names the private pools reserved at a moment (CUDA
// graphs' and MemPools'), their bytes, and that their free memory serves
// no other request.
func privatePoolsText(ew *errWriter, pools []attribution.PrivatePool, when string) {
	if len(pools) == 0 {
		return
	}
	var reserved, free int64
	var parts []string
	for _, p := range pools {
		reserved += p.Reserved
		free += p.Free
		segs := "segments"
		if p.Segments == 1 {
			segs = "segment"
		}
		parts = append(parts, fmt.Sprintf("pool (%d,%d) %s reserved in %d %s, %s allocated",
			p.Pool.A, p.Pool.B, units.Bytes(p.Reserved), p.Segments, segs, units.Bytes(p.Allocated)))
	}
	ew.printf("\n%s\n", wrap(fmt.Sprintf("private pools %s (CUDA graphs' or torch.cuda.MemPool's): %s reserved, %s of it free; held for their graphs' replays or their MemPool's own allocations, that free memory serves no other request and empty_cache() does not release it: %s",
		when, units.Bytes(reserved), units.Bytes(free), strings.Join(parts, "; ")), 98, "  "))
}
