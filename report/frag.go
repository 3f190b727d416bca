package report

import (
	"io"
	"text/tabwriter"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
)

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
	// FreeShare is free as a share (0–1) of reserved outside the private
	// pools; Fragmented, whether the verdict calls it a problem.
	FreeShare  float64 `json:"free_share"`
	Fragmented bool    `json:"fragmented"`
	Verdict    string  `json:"verdict"`
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

// FragJSONOf is one fragmentation result as the frag document writes it.
func FragJSONOf(f *attribution.Fragmentation) FragJSON {
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
		FreeShare: jsonNumber(f.Verdict.Share), Fragmented: f.Verdict.Problem(), Verdict: fragVerdictText(f.Verdict)}
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
			df.Moments = append(df.Moments, FragJSONOf(fr))
		}
		if r.Settings != nil {
			df.Simulated = SettingsJSONOf(r.Settings[i])
			if i < len(r.SettingsWhy) {
				df.SimulatedWhy = r.SettingsWhy[i]
			}
		}
		f.Devices = append(f.Devices, df)
	}
	return f
}
