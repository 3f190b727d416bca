package report

import (
	"io"
	"iter"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/trace"
)

// The results of the analysis commands. A command fills one in from the
// libraries' values and writes it with Write or a Writer; these types
// compute nothing beyond choosing what to show.

// Summary is 'memscope summary' of one file.
type Summary struct {
	Sum    *attribution.Summary
	Stacks bool // text: print each top site's full stack
	// AllFrames, with Stacks, prints native frames too (C++, CPython,
	// libc), not only counts them.
	AllFrames bool
}

func (*Summary) Kind() string { return "summary" }

func (r *Summary) writeText(w io.Writer) error {
	return summaryText(w, r.Sum, summaryTextOptions{Stacks: r.Stacks, AllFrames: r.AllFrames})
}

func (r *Summary) fileEntry() any { return summaryFile(r.Sum) }

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
		mj := momentOf(r.Analysis.Snapshot.Stacks, pd.Device.Device, pd.Moment, r.Top)
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

// Leaks is 'memscope leaks' of one file: every device's verdict.
type Leaks struct {
	Source   string
	Analysis *attribution.Analysis
}

func (*Leaks) Kind() string { return "leaks" }

func (r *Leaks) writeText(w io.Writer) error {
	if err := sourceLine(w, r.Source); err != nil {
		return err
	}
	for _, d := range r.Analysis.Devices {
		if err := leakText(w, r.Analysis, d); err != nil {
			return err
		}
	}
	return nil
}

// LeaksFileJSON is the entry of one file in the leaks document.
type LeaksFileJSON struct {
	Source  string     `json:"source"`
	Devices []LeakJSON `json:"devices"`
}

func (r *Leaks) fileEntry() any {
	f := LeaksFileJSON{Source: r.Source, Devices: []LeakJSON{}}
	for _, d := range r.Analysis.Devices {
		f.Devices = append(f.Devices, leakJSON(r.Analysis.Snapshot.Stacks, d))
	}
	return f
}

// Frag is 'memscope frag' of one file: every device's moments.
type Frag struct {
	Source   string
	Analysis *attribution.Analysis
	// Settings, with frag --simulate, are per device (by index in
	// Analysis.Devices) the allocator settings the model says lower the
	// reserved peak; nil without.
	Settings [][]attribution.SettingAdvice
	// SettingsWhy, per device, says why the model could not be asked
	// (attribution.Device.SimulateSettingsWhy); "" where it could.
	SettingsWhy []string
}

func (*Frag) Kind() string { return "frag" }

func (r *Frag) writeText(w io.Writer) error {
	if err := sourceLine(w, r.Source); err != nil {
		return err
	}
	for i, d := range r.Analysis.Devices {
		if err := fragText(w, d); err != nil {
			return err
		}
		if r.Settings != nil {
			ew := &errWriter{w: w}
			switch {
			case i < len(r.SettingsWhy) && r.SettingsWhy[i] != "":
				ew.printf("%s\n", wrap("no allocator setting simulated: "+r.SettingsWhy[i], 100, "  "))
			case len(r.Settings[i]) == 0:
				ew.printf("no allocator setting tried lowers the reserved peak by 1%% or more over the same requests (simulated)\n")
			default:
				settingsAdviceText(ew, r.Settings[i])
			}
			if ew.err != nil {
				return ew.err
			}
		}
	}
	return nil
}

// FragFileJSON is the entry of one file in the frag document.
type FragFileJSON struct {
	Source  string           `json:"source"`
	Devices []DeviceFragJSON `json:"devices"`
}

func (r *Frag) fileEntry() any {
	f := FragFileJSON{Source: r.Source, Devices: []DeviceFragJSON{}}
	for i, d := range r.Analysis.Devices {
		df := DeviceFragJSON{Device: d.Device, Moments: []FragJSON{}}
		for _, fr := range d.Frag {
			df.Moments = append(df.Moments, fragJSON(fr))
		}
		if r.Settings != nil {
			df.Simulated = settingsJSON(r.Settings[i])
			if i < len(r.SettingsWhy) {
				df.SimulatedWhy = r.SettingsWhy[i]
			}
		}
		f.Devices = append(f.Devices, df)
	}
	return f
}

// OOMs is 'memscope oom' of one file: every device's out-of-memory events.
type OOMs struct {
	Source   string
	Analysis *attribution.Analysis
	Top      int // sites to list
}

func (*OOMs) Kind() string { return "oom" }

func (r *OOMs) writeText(w io.Writer) error {
	if err := sourceLine(w, r.Source); err != nil {
		return err
	}
	for _, d := range r.Analysis.Devices {
		if err := oomText(w, r.Analysis, d, r.Top); err != nil {
			return err
		}
	}
	return nil
}

// OOMFileJSON is the entry of one file in the oom document: one entry per
// event, over all devices.
type OOMFileJSON struct {
	Source  string    `json:"source"`
	Devices []OOMJSON `json:"devices"`
}

func (r *OOMs) fileEntry() any {
	f := OOMFileJSON{Source: r.Source, Devices: []OOMJSON{}}
	for _, d := range r.Analysis.Devices {
		for _, o := range d.OOMs {
			f.Devices = append(f.Devices, oomJSON(r.Analysis.Snapshot.Stacks, d, o, r.Top))
		}
	}
	return f
}

// Diff is 'memscope diff' of two snapshots.
type Diff struct {
	A, B string // the two inputs as given
	Diff *attribution.Diff
	Top  int
}

func (*Diff) Kind() string { return "diff" }

func (r *Diff) writeText(w io.Writer) error { return diffText(w, r.A, r.B, r.Diff, r.Top) }

// DiffResultJSON is the result of the diff document.
type DiffResultJSON struct {
	A       string           `json:"a"`
	B       string           `json:"b"`
	Devices []DeviceDiffJSON `json:"devices"`
}

func (r *Diff) document() any {
	return ResultDoc[DiffResultJSON]{Schema: Schema, Kind: "diff",
		Result: DiffResultJSON{A: r.A, B: r.B, Devices: diffDevicesJSON(r.Diff)}}
}

// Ops is 'memscope ops' of one device of one profiler trace.
type Ops struct {
	Source string
	Table  *trace.Table
	Top    int // rows to print; -1 for all
	// CPUOnly says the trace's memory events are all CPU memory: its CPU
	// table is shown, without --cpu, with a note saying so.
	CPUOnly bool
}

func (*Ops) Kind() string { return "ops" }

func (r *Ops) writeText(w io.Writer) error { return opsText(w, r.Source, r.Table, r.Top, r.CPUOnly) }

// OpsFileJSON is an entry of the ops document: one device's table of one
// trace, or the curves of an export_memory_timeline file.
type OpsFileJSON struct {
	Source   string        `json:"source"`
	Table    *OpsJSON      `json:"table,omitempty"`
	Timeline *TimelineJSON `json:"timeline,omitempty"`
}

func (r *Ops) fileEntry() any {
	t := opsJSON(r.Table, r.Top, r.CPUOnly)
	return OpsFileJSON{Source: r.Source, Table: &t}
}

// MemoryTimeline is 'memscope ops' of an export_memory_timeline file: live
// bytes by torch's categories.
type MemoryTimeline struct {
	Source   string
	Timeline *trace.CategoryTimeline
}

func (*MemoryTimeline) Kind() string { return "ops" }

func (r *MemoryTimeline) writeText(w io.Writer) error { return timelineText(w, r.Source, r.Timeline) }

func (r *MemoryTimeline) fileEntry() any {
	t := timelineJSON(r.Timeline)
	return OpsFileJSON{Source: r.Source, Timeline: &t}
}

// Profile is 'memscope pprof': the blocks live at a moment and every
// allocation of one device, as a pprof profile.
type Profile struct {
	Analysis *attribution.Analysis
	Device   *attribution.Device
	Moment   *attribution.Moment
	Allocs   iter.Seq[attribution.Allocation]
}

func (*Profile) Kind() string { return "pprof" }

func (r *Profile) writePProf(w io.Writer) error {
	return writePProf(w, r.Analysis, r.Device, r.Moment, r.Allocs)
}

// Page is 'memscope report': one HTML page of several snapshots' views and
// the extras of HTMLOptions.
type Page struct {
	Views   []*attribution.View
	Options HTMLOptions
}

func (*Page) Kind() string { return "report" }

func (r *Page) writeHTML(w io.Writer) error { return writeHTML(w, r.Views, r.Options) }

// sourceLine starts the text of one file's result with the file's name.
func sourceLine(w io.Writer, source string) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n\n", source)
	return ew.err
}
