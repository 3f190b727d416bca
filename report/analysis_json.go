package report

import (
	"encoding/json"
	"io"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/report/jsondoc"
	"github.com/memscope/memscope/snapshot"
)

// writeJSON writes v indented.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// MomentJSON is the attribution at one moment.
type MomentJSON struct {
	Device      int              `json:"device"`
	Label       string           `json:"label"`
	EventIndex  int              `json:"event_index"`
	TimeEpochUS int64            `json:"time_epoch_us"`
	Numbers     Numbers          `json:"numbers"`
	Sites       []SiteJSON       `json:"sites"`
	Categories  map[string]int64 `json:"categories"`
	Streams     []StreamJSON     `json:"streams"`
	// With a joined trace: the live bytes by operator, and the share of the
	// bytes allocated inside the trace's window that found their operator.
	Ops        []OpBytesJSON `json:"ops,omitempty"`
	OpsCovered *float64      `json:"ops_covered,omitempty"`
	// With an export_memory_timeline file as the trace: its bytes by
	// category at this moment.
	Timeline *TimelineSampleJSON `json:"timeline,omitempty"`
}

// OpBytesJSON is jsondoc.OpBytesJSON.
type OpBytesJSON = jsondoc.OpBytesJSON

// opRowsJSON converts the by-operator rows of a joined moment.
func opRowsJSON(rows []attribution.OpBytes, top int) []OpBytesJSON {
	out := []OpBytesJSON{}
	for i, r := range rows {
		if top >= 0 && i == top {
			break
		}
		out = append(out, OpBytesJSON{Op: r.Label, Bytes: r.Bytes.Bytes, Blocks: r.Count})
	}
	return out
}

type StreamJSON struct {
	Stream int64    `json:"stream"`
	Pool   [2]int64 `json:"pool"` // segment_pool_id; [0,0] is the default pool
	Bytes  int64    `json:"bytes"`
	Blocks int      `json:"blocks"`
}

func momentOf(st *snapshot.Stacks, device int, m *attribution.Moment, top int) MomentJSON {
	j := momentJSON(st, m, top)
	j.Device = device
	return j
}

// momentJSON converts a moment, keeping the top sites (all when top < 0). Its
// Device is -1 until the caller sets it.
func momentJSON(st *snapshot.Stacks, m *attribution.Moment, top int) MomentJSON {
	j := MomentJSON{Device: -1, Label: m.Label, EventIndex: m.Index, TimeEpochUS: m.TimeUS,
		Numbers: numbers(m.Numbers), Sites: []SiteJSON{}, Categories: categories(m.Categories),
		Streams: []StreamJSON{}}
	for i, s := range m.Sites {
		if top >= 0 && i == top {
			break
		}
		j.Sites = append(j.Sites, siteJSON(st, s))
	}
	for _, s := range m.Streams {
		j.Streams = append(j.Streams, StreamJSON{s.Stream, [2]int64{s.Pool.A, s.Pool.B}, s.Bytes.Bytes, s.Count})
	}
	return j
}

func categories(c [attribution.NumCategories]attribution.Bytes) map[string]int64 {
	out := map[string]int64{}
	for k := attribution.Category(0); k < attribution.NumCategories; k++ {
		out[k.String()] = c[k].Bytes
	}
	return out
}

func siteJSON(st *snapshot.Stacks, site attribution.SiteBytes) SiteJSON {
	sj := SiteJSON{Label: site.Label, Kind: site.Site.Kind, Named: site.Site.Named(), Bytes: site.Bytes,
		Requested: site.Requested, Blocks: site.Count, Share: site.Share,
		Stack: stackJSON(st, site.Stack), FreeStack: site.FreeStack}
	switch site.Site.Kind {
	case attribution.SiteUser, attribution.SiteLibrary, attribution.SitePython, attribution.SiteBackward:
		fr := frameJSON(st.Frame(site.Site.Frame)) // a backward site's: the forward line it is the gradient of
		sj.Frame = &fr
	}
	if site.Site.HasCaller {
		c := frameJSON(st.Frame(site.Site.Caller))
		sj.Caller = &c
	}
	return sj
}

// LeakJSON is the leak verdict of one device.
type LeakJSON struct {
	Device        int            `json:"device"`
	Found         bool           `json:"found"`
	Reason        string         `json:"reason,omitempty"`
	Steps         []int          `json:"steps"`
	Floors        []int64        `json:"floors"`
	GrowthPerStep int64          `json:"growth_per_step"`
	Sites         []LeakSiteJSON `json:"sites"`
}

type LeakSiteJSON struct {
	SiteJSON
	Steps        int   `json:"steps"`
	BytesPerStep int64 `json:"bytes_per_step"`
}

// leakJSON converts a device's leak verdict.
func leakJSON(st *snapshot.Stacks, d *attribution.Device) LeakJSON {
	l := d.Leak
	j := LeakJSON{Device: d.Device, Found: l.Found, Reason: leakReasonText(l), Steps: append([]int{}, l.Steps...),
		Floors: append([]int64{}, l.Floors...), GrowthPerStep: l.GrowthPerStep, Sites: []LeakSiteJSON{}}
	for _, s := range l.Sites {
		j.Sites = append(j.Sites, LeakSiteJSON{siteJSON(st, s.SiteBytes), s.Steps, s.BytesPerStep})
	}
	return j
}

// FragJSON is the fragmentation at one moment.
type FragJSON struct {
	Label                  string                   `json:"label"`
	EventIndex             int                      `json:"event_index"`
	Reserved               int64                    `json:"reserved"`
	Allocated              int64                    `json:"allocated"`
	Active                 int64                    `json:"active"`
	ReservedMinusAllocated int64                    `json:"reserved_minus_allocated"`
	Free                   int64                    `json:"free"`
	InactiveSplit          int64                    `json:"inactive_split"`
	Holes                  int                      `json:"holes"`
	LargestFreeSmall       int64                    `json:"largest_free_small_pool"`
	LargestFreeLarge       int64                    `json:"largest_free_large_pool"`
	Histogram              []attribution.HoleBucket `json:"histogram"`
	Request                int64                    `json:"request,omitempty"`
	Unusable               int64                    `json:"unusable_for_request,omitempty"`
	Stranded               int64                    `json:"stranded_for_request,omitempty"`
	Headroom               int64                    `json:"headroom_for_request,omitempty"`
	SegmentAllocs          int                      `json:"segment_allocs"`
	SegmentFrees           int                      `json:"segment_frees"`
	Maps                   int                      `json:"segment_maps"`
	Unmaps                 int                      `json:"segment_unmaps"`
	// PrivatePools are the private pools reserved at the moment, left out
	// of Free, Holes, the histogram and the verdict (their free memory
	// serves only their graph); [] for none.
	PrivatePools []PrivatePoolJSON `json:"private_pools"`
	Verdict      string            `json:"verdict"`
}

// DeviceFragJSON is the fragmentation of one device at each moment: the
// peak, the end, and every OOM.
type DeviceFragJSON struct {
	Device  int        `json:"device"`
	Moments []FragJSON `json:"moments"`
	// Simulated, with --simulate: the allocator settings the model says
	// lower the reserved peak over the same requests (as advise's).
	Simulated []AdviceSettingJSON `json:"simulated,omitempty"`
	// SimulatedWhy, with --simulate, says why the model could not be
	// asked (it cannot run the trace, or does not match it); "" when it
	// could.
	SimulatedWhy string `json:"simulated_why,omitempty"`
}

// fragJSON converts one fragmentation result.
func fragJSON(f *attribution.Fragmentation) FragJSON {
	h := f.Histogram
	if h == nil {
		h = []attribution.HoleBucket{}
	}
	return FragJSON{Label: f.Label, EventIndex: f.Index, Reserved: f.Reserved, Allocated: f.Allocated,
		Active: f.Active, ReservedMinusAllocated: f.Cached, Free: f.Free, InactiveSplit: f.InactiveSplit,
		Holes: f.Holes, LargestFreeSmall: f.LargestFree[0], LargestFreeLarge: f.LargestFree[1],
		Histogram: h, Request: f.Request, Unusable: f.Unusable, Stranded: f.Stranded, Headroom: f.Headroom,
		SegmentAllocs: f.SegmentAllocs,
		SegmentFrees:  f.SegmentFrees, Maps: f.Maps, Unmaps: f.Unmaps, PrivatePools: privatePoolsJSON(f.Private),
		Verdict: fragVerdictText(f.Verdict)}
}

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

// oomJSON converts one post-mortem.
func oomJSON(st *snapshot.Stacks, d *attribution.Device, o *attribution.OOM, top int) OOMJSON {
	j := OOMJSON{Device: d.Device, N: o.N, EventIndex: o.Index, Request: o.Request,
		RequestSite:  RequestSiteJSON{Label: o.SiteLabel, Kind: o.Site.Kind},
		RequestStack: stackJSON(st, o.Stack), AllocSize: o.AllocSize, DeviceFree: o.DeviceFree,
		Numbers: numbers(o.Numbers), Capacity: o.Verdict.Kind == attribution.OOMCapacity, VerdictBy: verdictBy(o.Verdict), Verdict: oomVerdictText(o.Verdict), Frag: fragJSON(o.Frag),
		Live: momentOf(st, d.Device, o.At, top)}
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
	j.Simulated = []OOMSettingJSON{}
	for _, s := range d.OOMSettings {
		if s.Err == nil {
			j.Simulated = append(j.Simulated, OOMSettingJSON{s.Conf, s.Served, s.FailsAt, s.PeakReserved})
		}
	}
	return j
}

type DeviceDiffJSON struct {
	Device  int     `json:"device"`
	DeviceB int     `json:"device_b"` // B's device: another one when the sole devices were paired
	PeakA   Numbers `json:"peak_a"`
	PeakB   Numbers `json:"peak_b"`
	// ReservedPeakA and ReservedPeakB: each one's own peak of reserved
	// bytes (max_memory_reserved); peak_a.reserved is reserved at A's
	// allocated peak.
	ReservedPeakA int64               `json:"reserved_peak_a"`
	ReservedPeakB int64               `json:"reserved_peak_b"`
	EndA          Numbers             `json:"end_a"`
	EndB          Numbers             `json:"end_b"`
	Sites         []attribution.Delta `json:"sites"`
	Categories    []attribution.Delta `json:"categories"`
	Phases        []attribution.Delta `json:"phases"`
}

// diffDevicesJSON converts a comparison.
func diffDevicesJSON(d *attribution.Diff) []DeviceDiffJSON {
	out := []DeviceDiffJSON{}
	for _, dd := range d.Devices {
		out = append(out, DeviceDiffJSON{Device: dd.Device, DeviceB: dd.DeviceB, PeakA: numbers(dd.PeakA), PeakB: numbers(dd.PeakB),
			ReservedPeakA: dd.ReservedPeakA, ReservedPeakB: dd.ReservedPeakB,
			EndA: numbers(dd.EndA), EndB: numbers(dd.EndB), Sites: nonNil(dd.Sites),
			Categories: nonNil(dd.Categories), Phases: nonNil(dd.Phases)})
	}
	return out
}

func nonNil(d []attribution.Delta) []attribution.Delta {
	if d == nil {
		return []attribution.Delta{}
	}
	return d
}
