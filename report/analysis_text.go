package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// phasesText writes the per-step phase table: the floor at the step's
// start and end, each phase's peak, and which phase holds the step's peak.
func phasesText(w io.Writer, d *attribution.Device) error {
	ew := &errWriter{w: w}
	p := d.Phases
	if len(p.Steps) == 0 {
		ew.printf("%s\n", stepsLine(0, phasesFrom(d)))
		return ew.err
	}
	t := p.Table(p.AllSteps(), 0)
	ew.printf("%s; peak allocated per phase:\n", stepsLine(len(p.Steps), phasesFrom(d)))
	tw := newTable(ew, tabwriter.AlignRight)
	fprintf(tw, "step\tfloor\t")
	for _, n := range t.Phases {
		fprintf(tw, "%s\t", n)
	}
	fprintf(tw, "after\tpeak in\t\n")
	runs := stepRuns(t.Rows)
	for _, run := range runs {
		fprintf(tw, "%s\t", run.steps())
		for _, c := range run.cells {
			fprintf(tw, "%s\t", c)
		}
		fprintf(tw, "\n")
	}
	tw.Flush()
	if t.PeakStep >= 0 {
		ew.printf("* the device's peak: step %d %s\n", t.PeakStep, t.PeakPhase)
	}
	if n, steps := collapsed(runs); n > 0 {
		ew.printf("%s that print alike, shown as one row a run (%s; --json has each step)\n", nouns(steps, "step"), nouns(n, "run"))
	}
	return ew.err
}

// stepRun is consecutive steps whose rows print the same, the device's
// peak never among them but alone.
type stepRun struct {
	first, last int      // step numbers
	cells       []string // the row's cells after the step
}

func (r stepRun) steps() string {
	if r.first == r.last {
		return fmt.Sprint(r.first)
	}
	return fmt.Sprintf("%d–%d", r.first, r.last)
}

// stepRuns folds a step table's rows into runs of consecutive steps whose
// cells print alike: 60 identical steps are one row, "1–60".
func stepRuns(rows []attribution.StepRow) []stepRun {
	var out []stepRun
	for _, r := range rows {
		cells := []string{units.Bytes(r.Floor)}
		for _, v := range r.Peaks {
			if v >= 0 {
				cells = append(cells, units.Bytes(v))
			} else {
				cells = append(cells, "-")
			}
		}
		mark := ""
		if r.HoldsPeak {
			mark = " *"
		}
		cells = append(cells, units.Bytes(r.After), r.PeakIn+mark)
		if n := len(out); n > 0 && !r.HoldsPeak && slices.Equal(out[n-1].cells, cells) && out[n-1].last == r.Step-1 {
			out[n-1].last = r.Step
			continue
		}
		out = append(out, stepRun{first: r.Step, last: r.Step, cells: cells})
	}
	return out
}

// collapsed counts the runs of more than one step and the steps in them.
func collapsed(runs []stepRun) (n, steps int) {
	for _, r := range runs {
		if r.last > r.first {
			n++
			steps += r.last - r.first + 1
		}
	}
	return n, steps
}

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

// momentText writes the attribution of one moment: the numbers, the top
// sites, the categories and the streams, or the call tree.
func momentText(w io.Writer, an *attribution.Analysis, d *attribution.Device, m *attribution.Moment, top int, tree bool) error {
	ew := &errWriter{w: w}
	ew.printf("device %d at %s", d.Device, m.Label)
	if where := eventWhere(d.Timeline, m.Index); m.Index >= 0 && !d.Timeline.OneEntry && len(d.Timeline.Events) > 0 {
		ew.printf(" (%s, %s)", where, offset(d, m.TimeUS))
	} else {
		ew.printf(" (%s)", where)
	}
	ew.printf(": requested %s, allocated %s, active %s, reserved %s\n",
		units.Bytes(m.Requested), units.Bytes(m.Allocated), units.Bytes(m.Active), units.Bytes(m.Reserved))
	if tree {
		ew.printf("\ncall tree (allocated bytes, outermost frame first; nodes under 1%% left out):\n")
		treeText(ew, an, m.Tree, 0, m.Allocated)
		return ew.err
	}
	sitesText(ew, an, m.Sites, m.Allocated, top, "sites")
	categoriesText(ew, m.Categories, m.Allocated)
	if len(m.Streams) > 1 {
		ew.printf("\nby stream and pool:\n")
		for _, s := range m.Streams {
			ew.printf("  %12s  stream %d, pool (%d,%d) (%s)\n", units.Bytes(s.Bytes.Bytes), s.Stream, s.Pool.A, s.Pool.B, nouns(s.Count, "block"))
		}
	}
	return ew.err
}

func sitesText(ew *errWriter, an *attribution.Analysis, sites []attribution.SiteBytes, total int64, top int, title string) {
	if len(sites) == 0 {
		return
	}
	ew.printf("\n%s, top %d of %d:\n", title, min(top, len(sites)), len(sites))
	tw := newTable(ew, 0)
	fprintf(tw, "  %10s\t%6s\t%6s\t%s\n", "allocated", "share", "blocks", siteHeading)
	for i, s := range sites {
		if i == top {
			break
		}
		share := 0.0
		if total > 0 {
			share = 100 * float64(s.Bytes) / float64(total)
		}
		lines := siteLines(an.Snapshot.Stacks, s, 70)
		fprintf(tw, "  %10s\t%5.1f%%\t%6d\t%s\n", units.Bytes(s.Bytes), share, s.Count, lines[0])
		for _, l := range lines[1:] {
			fprintf(tw, "\t\t\t%s\n", l)
		}
	}
	tw.Flush()
}

func categoriesText(ew *errWriter, cats [attribution.NumCategories]attribution.Bytes, total int64) {
	ew.printf("\nby category:\n")
	order := make([]attribution.Category, 0, attribution.NumCategories)
	for c := attribution.Category(0); c < attribution.NumCategories; c++ {
		if cats[c].Count > 0 {
			order = append(order, c)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return cats[order[i]].Bytes > cats[order[j]].Bytes })
	for _, c := range order {
		share := 0.0
		if total > 0 {
			share = 100 * float64(cats[c].Bytes) / float64(total)
		}
		ew.printf("  %12s %5.1f%%  %-16s (%s)\n", units.Bytes(cats[c].Bytes), share, c, nouns(cats[c].Count, "block"))
	}
}

// treeText writes the call tree under n, nodes under 1% of total left
// out. The root's lines account for every byte: the total first, and
// after its children, what the children left out hold; blocks with no
// Python frame are nodes named by their site (attribution.Node.Label),
// "(allocated before recording began)" and the like where nothing names
// them better.
func treeText(ew *errWriter, an *attribution.Analysis, n *attribution.Node, depth int, total int64) {
	share := func(b int64) float64 { return 100 * float64(b) / float64(max(total, 1)) }
	if n.Root {
		ew.printf("  %10s %5.1f%%  (all %s allocated)\n", units.Bytes(n.Bytes), share(n.Bytes), nouns(n.Count, "block"))
	}
	var cut int64
	cutN := 0
	for _, c := range n.Children {
		if total > 0 && float64(c.Bytes) < 0.01*float64(total) {
			cut += c.Bytes
			cutN++
			continue
		}
		// The indent shows the depth up to treeIndent levels, then the
		// depth is written; the frame's text is clipped from the left of
		// its path, never the indent.
		indent := strings.Repeat("  ", min(depth, treeIndent))
		if depth > treeIndent {
			indent += fmt.Sprintf("[%d] ", depth)
		}
		label := c.Label
		if label == "" {
			label = attribution.FrameLabel(an.Snapshot.Stacks.Frame(c.Frame))
		}
		text := clip(label, max(40, 78-len(indent)))
		ew.printf("  %10s %5.1f%%  %s%s\n", units.Bytes(c.Bytes), share(c.Bytes), safeText(indent), text)
		treeText(ew, an, c, depth+1, total)
	}
	if n.Root && cutN > 0 {
		ew.printf("  %10s %5.1f%%  (%s under 1%% each, left out)\n", units.Bytes(cut), share(cut), nouns(cutN, "more node"))
	}
	if n.Root && n.Folded > 0 {
		ew.printf("  (%s of C++ and CPython folded)\n", nouns(n.Folded, "native frame"))
	}
}

// treeIndent is the deepest level the call tree's text indents.
const treeIndent = 16

// leakText writes the leak verdict: floors per steady step and the sites
// whose blocks survive.
func leakText(w io.Writer, an *attribution.Analysis, d *attribution.Device) error {
	ew := &errWriter{w: w}
	l := d.Leak
	ew.printf("device %d: ", d.Device)
	switch {
	case l.Reason != attribution.LeakDecided:
		ew.printf("no verdict: %s\n", leakReasonText(l))
		return ew.err
	case l.Found:
		ew.printf("LEAK: the floor grows by %s per step over %s\n", units.Bytes(l.GrowthPerStep), nouns(len(l.Steps), "steady step"))
	default:
		ew.printf("no leak: the floor does not grow step over step (%s)\n", nouns(len(l.Steps), "steady step"))
	}
	ew.printf("\nfloor after each steady step (allocated):\n")
	for i, s := range l.Steps {
		delta := ""
		if i > 0 {
			delta = "  " + signed(l.Floors[i]-l.Floors[i-1])
		}
		ew.printf("  step %-4d %12s%s\n", s, units.Bytes(l.Floors[i]), delta)
	}
	if len(l.Sites) > 0 {
		ew.printf("\nsites of blocks born in steady steps and live at the end:\n")
		tw := newTable(ew, 0)
		fprintf(tw, "  %10s\t%10s\t%5s\t%s\n", "live", "per step", "steps", "site")
		for _, s := range l.Sites {
			lines := siteLines(an.Snapshot.Stacks, s.SiteBytes, 66)
			fprintf(tw, "  %10s\t%10s\t%5d\t%s\n", units.Bytes(s.Bytes), units.Bytes(s.BytesPerStep), s.Steps, lines[0])
			for _, l := range lines[1:] {
				fprintf(tw, "\t\t\t%s\n", l)
			}
		}
		tw.Flush()
	}
	return ew.err
}

func signed(n int64) string {
	if n >= 0 {
		return "+" + units.Bytes(n)
	}
	return units.Bytes(n)
}

// fragText writes the fragmentation at each moment and the verdicts.
func fragText(w io.Writer, d *attribution.Device) error {
	ew := &errWriter{w: w}
	ew.printf("device %d: free memory inside reserved segments\n\n", d.Device)
	tw := newTable(ew, tabwriter.AlignRight)
	fprintf(tw, "moment\treserved\tallocated\treserved-alloc\tfree\tinactive split\tholes\tlargest small\tlargest large\t\n")
	for _, f := range d.Frag {
		fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t\n", f.Label, units.Bytes(f.Reserved), units.Bytes(f.Allocated),
			units.Bytes(f.Cached), units.Bytes(f.Free), units.Bytes(f.InactiveSplit), f.Holes,
			units.Bytes(f.LargestFree[0]), units.Bytes(f.LargestFree[1]))
	}
	tw.Flush()
	for _, f := range d.Frag {
		privatePoolsText(ew, f.Private, "at "+f.Label)
	}
	if len(d.Frag) > 0 {
		f := d.Frag[0]
		ew.printf("\nsegment churn over the trace: %d cudaMalloc, %d cudaFree, %d maps, %d unmaps, %d OOMs\n",
			f.SegmentAllocs, f.SegmentFrees, f.Maps, f.Unmaps, f.OOMs)
	}
	for _, f := range d.Frag {
		if len(f.Histogram) > 0 {
			ew.printf("\nfree holes at %s by size:\n", f.Label)
			for _, b := range f.Histogram {
				if b.Count > 0 {
					ew.printf("  %10s – %-10s %5d %-5s %12s\n", units.Bytes(b.Min), units.Bytes(b.Max), b.Count, pluralNoun(b.Count, "hole"), units.Bytes(b.Bytes))
				}
			}
		}
		ew.printf("verdict at %s: %s\n", f.Label, wrap(fragVerdictText(f.Verdict), 84, "    "))
	}
	return ew.err
}

// oomText writes the post-mortem of every OOM of the device.
func oomText(w io.Writer, an *attribution.Analysis, d *attribution.Device, top int) error {
	ew := &errWriter{w: w}
	if len(d.OOMs) == 0 {
		ew.printf("device %d: no out-of-memory event recorded\n", d.Device)
		return ew.err
	}
	for _, o := range d.OOMs {
		ew.printf("device %d, out of memory %d at event %d", d.Device, o.N, o.Index)
		if len(d.Timeline.Events) > 0 {
			ew.printf(" (%s)", offset(d, o.TimeUS))
		}
		ew.printf("\n  request %s%s from %s\n", units.Bytes(o.Request), oomStepPhase(o), clip(o.SiteLabel, 80))
		stackText(ew, an, o.Stack)
		ew.printf("  allocated %s, reserved %s (%s reserved but unallocated); device free %s",
			units.Bytes(o.Allocated), units.Bytes(o.Reserved), units.Bytes(o.Reserved-o.Allocated), units.Bytes(o.DeviceFree))
		if o.Cap != nil {
			ew.printf("; per-process cap between %s and %s", units.Bytes(o.Cap.Low), units.Bytes(o.Cap.High))
		}
		ew.printf("\n")
		ew.printf("  largest free block: small pool %s, large pool %s; %s of free memory in holes smaller than the request\n",
			units.Bytes(o.Frag.LargestFree[0]), units.Bytes(o.Frag.LargestFree[1]), units.Bytes(o.Frag.Unusable))
		ew.printf("  verdict: %s\n", wrap(oomVerdictText(o.Verdict), 88, "    "))
		if n := o.Needs; n != nil {
			ew.printf("  %s\n", wrap(stepNeedsText(n), 88, "    "))
		}
		if o.N == len(d.OOMs) {
			oomSettingsText(ew, d.OOMSettings)
		}
		sitesText(ew, an, o.At.Sites, o.Allocated, top, "live at the OOM by site")
		categoriesText(ew, o.At.Categories, o.Allocated)
		ew.printf("\n")
	}
	return ew.err
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

// diffText writes a comparison: peak and end, then the largest changes by
// site, category and phase.
func diffText(w io.Writer, nameA, nameB string, d *attribution.Diff, top int) error {
	ew := &errWriter{w: w}
	ew.printf("A: %s\nB: %s\n", nameA, nameB)
	for _, dd := range d.Devices {
		ew.printf("\ndevice %d", dd.Device)
		if dd.DeviceB != dd.Device {
			ew.printf(" of A against device %d of B (the sole device of each)", dd.DeviceB)
		}
		switch {
		case dd.OnlyA:
			ew.printf(" (only in A)")
		case dd.OnlyB:
			ew.printf(" (only in B)")
		}
		ew.printf("\n")
		tw := newTable(ew, tabwriter.AlignRight)
		fprintf(tw, "\tA\tB\tB − A\t\n")
		row := func(name string, a, b int64) {
			fprintf(tw, "%s\t%s\t%s\t%s\t\n", name, units.Bytes(a), units.Bytes(b), signed(b-a))
		}
		row("peak allocated", dd.PeakA.Allocated, dd.PeakB.Allocated)
		row("reserved at that peak", dd.PeakA.Reserved, dd.PeakB.Reserved)
		row("peak reserved", dd.ReservedPeakA, dd.ReservedPeakB)
		row("end allocated", dd.EndA.Allocated, dd.EndB.Allocated)
		row("end reserved", dd.EndA.Reserved, dd.EndB.Reserved)
		tw.Flush()
		deltaText(ew, "phases (highest peak of each)", dd.Phases, top)
		deltaText(ew, "categories at the peak", dd.Categories, top)
		deltaText(ew, "sites at the peak (by the frame that allocated)", dd.Sites, top)
	}
	return ew.err
}

func deltaText(ew *errWriter, title string, rows []attribution.Delta, top int) {
	if len(rows) == 0 {
		return
	}
	ew.printf("\n%s, largest change first:\n", title)
	tw := newTable(ew, 0)
	fprintf(tw, "  %10s\t%10s\t%11s\t%s\n", "A", "B", "B − A", "")
	for i, r := range rows {
		if i == top {
			break
		}
		fprintf(tw, "  %10s\t%10s\t%11s\t%s\n", units.Bytes(r.A), units.Bytes(r.B), signed(r.Change), clip(r.Name, 72))
		if c := callersText(r); c != "" {
			fprintf(tw, "  \t\t\t  %s\n", c)
		}
	}
	tw.Flush()
}

// callersText names a site row's callers: "called from train.py:202 fwd"
// when both sides called from the same line, else each side's, marked A
// and B; "" when neither has one.
func callersText(r attribution.Delta) string {
	side := func(c string, n int) string {
		s := clip(c, 60)
		if n > 1 {
			s += fmt.Sprintf(" and %d more", n-1)
		}
		return s
	}
	switch {
	case r.CallerA == "" && r.CallerB == "":
		return ""
	case r.CallerA == r.CallerB && r.CallersA == r.CallersB:
		return "called from " + side(r.CallerA, r.CallersA)
	case r.CallerA == "":
		return "called from " + side(r.CallerB, r.CallersB) + " (B)"
	case r.CallerB == "":
		return "called from " + side(r.CallerA, r.CallersA) + " (A)"
	}
	return "called from " + side(r.CallerA, r.CallersA) + " (A), " + side(r.CallerB, r.CallersB) + " (B)"
}

// opBytesText writes the live bytes of a moment by operator (from a joined
// profiler trace).
func opBytesText(w io.Writer, j *attribution.Join, rows []attribution.OpBytes, covered float64, total int64, top int) error {
	ew := &errWriter{w: w}
	ew.printf("\nby operator (joined with the profiler trace; %.1f%% of the bytes allocated in its window found their op):\n", 100*covered)
	joinWindowsText(ew, j)
	for i, r := range rows {
		if i == top {
			break
		}
		share := 0.0
		if total > 0 {
			share = 100 * float64(r.Bytes.Bytes) / float64(total)
		}
		ew.printf("  %10s %5.1f%% %5d  %s\n", units.Bytes(r.Bytes.Bytes), share, r.Count, clipTail(r.Label, 70))
	}
	return ew.err
}

// oomStepPhase says in which step and phase a failed request was made.
func oomStepPhase(o *attribution.OOM) string {
	switch {
	case o.Step >= 0:
		return fmt.Sprintf(" in step %d %s,", o.Step, o.Phase)
	case o.Phase != "":
		return " in " + o.Phase + ","
	}
	return ""
}

// oomSettingsText says what the allocator model says other settings would
// have done with the same requests under the same capacity.
func oomSettingsText(ew *errWriter, sims []attribution.OOMSetting) {
	var lines []string
	for _, s := range sims {
		switch {
		case s.Err != nil:
		case s.Served:
			lines = append(lines, fmt.Sprintf("    %s: every request served, reserved peak %s", s.Conf, units.Bytes(s.PeakReserved)))
		case s.Uncertain:
			lines = append(lines, fmt.Sprintf("    %s: cannot tell: every request served, reserved peak %s, but not had the program kept the %s cached at the recording's start", s.Conf, units.Bytes(s.PeakReserved), units.Bytes(s.StartUnknown)))
		default:
			lines = append(lines, fmt.Sprintf("    %s: still out of memory (at event %d)", s.Conf, s.FailsAt))
		}
		switch {
		case s.Err == nil && s.StartPlaced:
			lines[len(lines)-1] += " (from the recording's start state re-made under this setting)"
		case s.Err == nil && s.Window:
			lines[len(lines)-1] += " (from the segments rebuilt at the recording's start, as the recorded settings laid them out)"
		}
	}
	if len(lines) == 0 {
		return
	}
	ew.printf("  simulated, the same requests under the same capacity (memscope whatif):\n")
	for _, l := range lines {
		ew.printf("%s\n", l)
	}
}

// stepNeedsText says how much more an OOM'd step needed.
func stepNeedsText(n *attribution.StepNeeds) string {
	return fmt.Sprintf("the step needed about %s more: the rest of %s's two moments per parameter (2 × %s of parameters − %s of state made), so it would have peaked at %s allocated at least; that much has to fit under the limit, or the state has to shrink (8-bit or bf16 moments, a stateless or sharded optimizer, offload)",
		units.Bytes(n.More), n.Optimizer, units.Bytes(n.Params), units.Bytes(n.State), units.Bytes(n.Peak))
}
