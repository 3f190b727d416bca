package report

import (
	"fmt"
	"io"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
)

// OOMJSON is the post-mortem of one OOM.
type OOMJSON struct {
	Device       int             `json:"device"`
	N            int             `json:"n"`
	EventIndex   int             `json:"event_index"`
	Request      int64           `json:"request"`
	RequestSite  RequestSiteJSON `json:"request_site"`
	RequestStack []FrameJSON     `json:"request_stack"` // innermost first; [] when none was recorded
	Step         *int            `json:"step"`          // null outside steps
	Phase        string          `json:"phase"`         // "" when the trace has no phases
	AllocSize    int64           `json:"alloc_size"`
	Pool         string          `json:"pool"` // the request's: small (≤ 1 MiB) or large
	DeviceFree   int64           `json:"device_free"`
	Cap          *CapJSON        `json:"cap"` // null: no per-process cap applied
	Numbers      Numbers         `json:"numbers"`
	Capacity     bool            `json:"capacity"`
	VerdictBy    string          `json:"verdict_by"` // "simulation" or "free blocks"
	Verdict      string          `json:"verdict"`
	Frag         FragJSON        `json:"fragmentation"`
	Live         MomentJSON      `json:"live"`
	// Simulated: other allocator settings over the device's same requests
	// and capacity (the allocator model); [] when it cannot run the trace.
	Simulated []OOMSettingJSON `json:"simulated"`
}

// OOMSettingJSON is one simulated setting of an OOM's device.
type OOMSettingJSON struct {
	Conf         string `json:"conf"`
	Served       bool   `json:"served"`
	FailsAt      int    `json:"fails_at"` // event index of the request it could not serve; -1 when served
	PeakReserved int64  `json:"peak_reserved"`
}

// RequestSiteJSON is the site of a failed request, named like a Site.
type RequestSiteJSON struct {
	Label string     `json:"label"`
	Kind  string     `json:"kind"`
	Frame *FrameJSON `json:"frame"`
}

// CapJSON brackets a per-process memory limit: low ≤ limit < high.
type CapJSON struct {
	Low  int64 `json:"low"`
	High int64 `json:"high"`
}

// verdictBy says what decided an OOM verdict's kind.
func verdictBy(v attribution.OOMVerdict) string {
	if v.Simulated {
		return "simulation"
	}
	return "free blocks"
}

// OOMJSONOf is one post-mortem as the oom document writes it, keeping
// the top sites live then.
func OOMJSONOf(tab *attribution.SiteTable, d *attribution.Device, o *attribution.OOM, top int) OOMJSON {
	st := tab.Stacks()
	j := OOMJSON{Device: d.Device, N: o.N, EventIndex: o.Index, Request: o.Request,
		RequestSite:  RequestSiteJSON{Label: o.SiteLabel, Kind: o.Site.Kind},
		RequestStack: StackJSONOf(tab, o.Stack), AllocSize: o.AllocSize, Pool: o.Verdict.Pool.String(), DeviceFree: o.DeviceFree,
		Numbers: numbers(o.Numbers), Capacity: o.Verdict.Kind == attribution.OOMCapacity, VerdictBy: verdictBy(o.Verdict), Verdict: oomVerdictText(o.Verdict), Frag: FragJSONOf(o.Frag),
		Live: MomentJSONOf(tab, d.Device, o.At, top)}
	if o.Site.Kind == attribution.SiteUser || o.Site.Kind == attribution.SiteLibrary || o.Site.Kind == attribution.SitePython {
		fr := frameJSON(st.Frame(o.Site.Frame))
		j.RequestSite.Frame = &fr
	}
	if o.Step >= 0 {
		n := o.Step
		j.Step = &n
	}
	j.Phase = o.Phase
	if o.Cap != nil {
		j.Cap = &CapJSON{o.Cap.Low, o.Cap.High}
	}
	j.Simulated = OOMSettingsJSONOf(d)
	return j
}

// OOMSettingsJSONOf is the device's OOM under other allocator settings, as
// the oom document writes it: the settings the model could run.
func OOMSettingsJSONOf(d *attribution.Device) []OOMSettingJSON {
	out := []OOMSettingJSON{}
	for _, s := range d.OOMSettings {
		if s.Err == nil {
			out = append(out, OOMSettingJSON{s.Conf, s.Served, s.FailsAt, s.PeakReserved})
		}
	}
	return out
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
			f.Devices = append(f.Devices, OOMJSONOf(r.Analysis.Sites(), d, o, r.Top))
		}
	}
	return f
}
