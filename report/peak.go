package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
)

// MomentJSON is the attribution at one moment.
type MomentJSON struct {
	Device      int              `json:"device"`
	Label       string           `json:"label"`
	EventIndex  int              `json:"event_index"`
	TimeEpochUS int64            `json:"time_epoch_us"`
	Numbers     Numbers          `json:"numbers"`
	Sites       []SiteJSON       `json:"sites"`
	Categories  map[string]int64 `json:"categories"`
	// CategoryBlocks counts the live blocks of each category.
	CategoryBlocks map[string]int `json:"category_blocks"`
	Streams        []StreamJSON   `json:"streams"`
	// With a joined trace: the live bytes by operator, and the share of the
	// bytes allocated inside the trace's window that found their operator.
	Ops        []OpBytesJSON `json:"ops,omitempty"`
	OpsCovered *float64      `json:"ops_covered,omitempty"`
	// With an export_memory_timeline file as the trace: its bytes by
	// category at this moment.
	Timeline *TimelineSampleJSON `json:"timeline,omitempty"`
}

type StreamJSON struct {
	Stream int64    `json:"stream"`
	Pool   [2]int64 `json:"pool"` // segment_pool_id; [0,0] is the default pool
	Bytes  int64    `json:"bytes"`
	Blocks int      `json:"blocks"`
}

// MomentJSONOf is a device's moment as the documents write it, keeping
// its top sites (all when top < 0).
func MomentJSONOf(tab *attribution.SiteTable, device int, m *attribution.Moment, top int) MomentJSON {
	j := momentJSON(tab, m, top)
	j.Device = device
	return j
}

// momentJSON converts a moment, keeping the top sites (all when top < 0). Its
// Device is -1 until the caller sets it.
func momentJSON(tab *attribution.SiteTable, m *attribution.Moment, top int) MomentJSON {
	j := MomentJSON{Device: -1, Label: m.Label, EventIndex: m.Index, TimeEpochUS: m.TimeUS,
		Numbers: numbers(m.Numbers), Sites: []SiteJSON{}, Categories: categories(m.Categories), CategoryBlocks: categoryBlocks(m.Categories),
		Streams: []StreamJSON{}}
	for i, s := range m.Sites {
		if top >= 0 && i == top {
			break
		}
		j.Sites = append(j.Sites, SiteJSONOf(tab, s))
	}
	for _, s := range m.Streams {
		j.Streams = append(j.Streams, StreamJSON{s.Stream, [2]int64{s.Pool.A, s.Pool.B}, s.Bytes.Bytes, s.Count})
	}
	return j
}

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

// Peak is 'memscope peak' of one file: one moment per device.
type Peak struct {
	Source   string
	Analysis *attribution.Analysis
	Devices  []PeakDevice
	Top      int    // sites to list
	Tree     bool   // text: the call tree instead of the tables
	Phases   bool   // text: the step × phase table after each device
	Trace    string // the joined trace's file, if any
	JoinedBy string // "ops" or "timeline": how the trace was joined, "" for none
}

// PeakDevice is one device's moment, with what a joined trace says of it
// (attribution.Analysis.At).
type PeakDevice = attribution.DeviceAt

func (*Peak) Kind() string { return "peak" }

func (r *Peak) writeText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n\n", r.Source)
	for i, pd := range r.Devices {
		if i > 0 {
			ew.printf("\n")
		}
		if ew.err != nil {
			return ew.err
		}
		d, m := pd.Device, pd.Moment
		if err := momentText(w, r.Analysis, d, m, r.Top, r.Tree); err != nil {
			return err
		}
		switch r.JoinedBy {
		case "ops":
			if err := opBytesText(w, pd.Join, pd.Ops, pd.OpsCovered, m.Allocated, r.Top); err != nil {
				return err
			}
		case "timeline":
			if err := timelineSampleText(w, r.Trace, "at this moment", pd.Sample); err != nil {
				return err
			}
		}
		if r.Phases && !r.Tree {
			ew.printf("\n")
			if err := phasesText(w, d); err != nil {
				return err
			}
		}
	}
	return ew.err
}

// PeakFileJSON is the entry of one file in the peak document.
type PeakFileJSON struct {
	Source  string           `json:"source"`
	Devices []PeakDeviceJSON `json:"devices"`
}

// PeakDeviceJSON is one device of the peak document: the moment, and the
// device's step × phase table (whatever the moment).
type PeakDeviceJSON struct {
	MomentJSON
	StepTable StepTableJSON `json:"step_table"`
}

func (r *Peak) fileEntry() any {
	f := PeakFileJSON{Source: r.Source, Devices: []PeakDeviceJSON{}}
	for _, pd := range r.Devices {
		mj := MomentJSONOf(r.Analysis.Sites(), pd.Device.Device, pd.Moment, r.Top)
		switch r.JoinedBy {
		case "ops":
			covered := pd.OpsCovered
			mj.Ops, mj.OpsCovered = opRowsJSON(pd.Ops, r.Top), &covered
		case "timeline":
			mj.Timeline = timelineSampleJSON(r.Trace, pd.Sample)
		}
		f.Devices = append(f.Devices, PeakDeviceJSON{MomentJSON: mj, StepTable: deviceStepTableJSON(pd.Device)})
	}
	return f
}
