package attribution

import (
	"regexp"
	"sort"
	"strconv"

	"github.com/memscope/memscope/snapshot"
)

// Summary is what 'memscope summary' reports for one snapshot file.
type Summary struct {
	Source   string
	Format   string
	Protocol int
	Devices  []DeviceSummary
	Warnings []snapshot.Warning // about the file as a whole

	Stacks *snapshot.Stacks // the snapshot's table, for rendering stacks
}

// DeviceSummary is the summary of one device.
type DeviceSummary struct {
	Device int

	// The four numbers before the first event, at the peak of allocated
	// bytes, and after the last event. Device used is not in a snapshot:
	// DeviceUsed is nil ("not recorded") unless a run recorded it.
	Start, AtPeak, End snapshot.Numbers
	DeviceUsed         *int64
	// Each quantity's own peak.
	PeakRequested, PeakAllocated, PeakActive, PeakReserved snapshot.Peak

	// When the allocated peak happened: µs after the first event, the
	// annotation ranges around it (outermost first), and the step and phase
	// when a range names them ("memscope/step/3/forward").
	PeakOffsetUS int64
	DurationUS   int64
	PeakRanges   []snapshot.Range
	PeakStep     *int
	PeakPhase    string

	// TopSites are the allocation sites holding the most block bytes at the
	// peak, largest first; LiveAtPeak counts the blocks live then.
	TopSites   []SiteBytes
	LiveAtPeak int

	Events, Segments, Blocks, ActiveBlocks, OOMs int

	Warnings []snapshot.Warning
}

// SiteBytes is the memory one site holds at a moment.
type SiteBytes struct {
	Site      Site
	Label     string
	Bytes     int64 // block bytes
	Requested int64
	Count     int
	Share     float64 // of allocated bytes at that moment
	// Stack is the full stack of the site's largest block.
	Stack snapshot.StackID
	// FreeStack is true when Stack is a free site (the block was allocated
	// before recording began and only its free was recorded).
	FreeStack bool
}

// SummaryOptions tune Summarize.
type SummaryOptions struct {
	Top    int     // sites to keep; 0 keeps none
	Device int     // -1 for every device
	Filter *Filter // nil: the default filter
}

// Summarize replays every device of s and summarises it.
func Summarize(s *snapshot.Snapshot, opt SummaryOptions) *Summary {
	f := opt.Filter
	if f == nil {
		f, _ = NewFilter("", "")
	}
	out := &Summary{Source: s.Source, Format: s.Format.String(), Protocol: s.Protocol,
		Warnings: s.Warnings, Stacks: s.Stacks}
	for _, d := range s.Devices() {
		if opt.Device >= 0 && d != opt.Device {
			continue
		}
		out.Devices = append(out.Devices, summarizeDevice(s, d, opt.Top, f))
	}
	return out
}

func summarizeDevice(s *snapshot.Snapshot, d, top int, f *Filter) DeviceSummary {
	t := snapshot.Replay(s, d, snapshot.ReplayOptions{})
	ds := DeviceSummary{
		Device: d, Start: t.Start, End: t.End,
		PeakRequested: t.PeakRequested, PeakAllocated: t.PeakAllocated,
		PeakActive: t.PeakActive, PeakReserved: t.PeakReserved,
		Events: len(t.Events), OOMs: len(t.OOMs), Warnings: t.Warnings,
	}
	for i := range s.Segments {
		seg := &s.Segments[i]
		if seg.Device != d {
			continue
		}
		ds.Segments++
		ds.Blocks += len(seg.Blocks)
		for j := range seg.Blocks {
			if seg.Blocks[j].State.Active() {
				ds.ActiveBlocks++
			}
		}
	}
	ds.AtPeak = t.StateAt(t.PeakAllocated.Index)
	if n := len(t.Events); n > 0 {
		first := t.Events[0].TimeUS
		ds.DurationUS = t.Events[n-1].TimeUS - first
		if t.PeakAllocated.Index >= 0 {
			ds.PeakOffsetUS = t.PeakAllocated.TimeUS - first
			ds.PeakRanges = snapshot.RangesAt(s.Ranges(d), t.PeakAllocated.TimeUS)
			ds.PeakStep, ds.PeakPhase = stepPhase(ds.PeakRanges)
		}
	}
	live := t.LiveAt(t.PeakAllocated.Index)
	for _, b := range live {
		if !b.PendingFree {
			ds.LiveAtPeak++
		}
	}
	ds.TopSites = TopSites(s.Stacks, live, f, ds.AtPeak.Allocated, top)
	return ds
}

var stepPhaseRE = regexp.MustCompile(`^memscope/step/(-?\d+)/([A-Za-z_]+)$`)

// stepPhase reads the step and phase from the innermost range that names
// them; with none, the phase is the innermost range's name.
func stepPhase(ranges []snapshot.Range) (*int, string) {
	for i := len(ranges) - 1; i >= 0; i-- {
		if m := stepPhaseRE.FindStringSubmatch(ranges[i].Name); m != nil {
			n, _ := strconv.Atoi(m[1])
			return &n, m[2]
		}
	}
	if len(ranges) > 0 {
		return nil, ranges[len(ranges)-1].Name
	}
	return nil, ""
}

// TopSites groups the allocated (not pending-free) blocks of live by site
// and returns the top n by block bytes, with their share of total.
func TopSites(st *snapshot.Stacks, live []snapshot.LiveBlock, f *Filter, total int64, n int) []SiteBytes {
	type acc struct {
		SiteBytes
		largest int64
	}
	by := map[Site]*acc{}
	for i := range live {
		b := &live[i]
		if b.PendingFree {
			continue
		}
		site := f.SiteOf(st, b.Stack)
		if b.AllocIndex < 0 && b.Stack == 0 {
			site = Site{Kind: "before"}
		}
		a := by[site]
		if a == nil {
			a = &acc{SiteBytes: SiteBytes{Site: site, Label: site.Label(st)}}
			by[site] = a
		}
		a.Bytes += b.Size
		a.Requested += b.Requested
		a.Count++
		if b.Size > a.largest {
			a.largest, a.Stack, a.FreeStack = b.Size, b.Stack, b.FreeStack
		}
	}
	out := make([]SiteBytes, 0, len(by))
	for _, a := range by {
		if total > 0 {
			a.Share = float64(a.Bytes) / float64(total)
		}
		out = append(out, a.SiteBytes)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bytes != out[j].Bytes {
			return out[i].Bytes > out[j].Bytes
		}
		return out[i].Label < out[j].Label
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
