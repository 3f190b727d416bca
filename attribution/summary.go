package attribution

import (
	"sort"

	"github.com/memscope/memscope/snapshot"
	"github.com/memscope/memscope/trace"
)

// Summary is what 'memscope summary' reports for one snapshot file.
type Summary struct {
	Source   string
	Format   string
	Protocol int
	Devices  []DeviceSummary
	Warnings []snapshot.Warning // about the file as a whole
	// TimelineSource names the memory timeline file joined (JoinTimeline).
	TimelineSource string

	Stacks *snapshot.Stacks // the snapshot's table, for rendering stacks
	// Sites is the analysis's filter's table of Stacks: which frames its
	// site rule keeps, for rendering stacks with the rest folded.
	Sites *SiteTable
}

// DeviceSummary is the summary of one device.
type DeviceSummary struct {
	Device int

	// The four numbers before the first event, at the peak of allocated
	// bytes, and after the last event. Device used is not in a snapshot:
	// DeviceUsed is nil ("not recorded") unless a run recorded it.
	Start, AtPeak, End snapshot.Numbers
	DeviceUsed         *int64
	// DeviceUsedPeak is the highest device used a capture run sampled (per
	// step, with torch.cuda.mem_get_info); nil outside a capture run.
	DeviceUsedPeak *int64
	// Each quantity's own peak.
	PeakRequested, PeakAllocated, PeakActive, PeakReserved snapshot.Peak

	// When the allocated peak happened: µs after the first event, the
	// annotation ranges around it (outermost first), and the step and phase
	// when a range names them ("memscope/step/3/forward").
	PeakOffsetUS int64
	DurationUS   int64
	// Timed is false when the trace records no time_us (torch before 2.2,
	// torch_npu): then events have an order and the offsets are 0.
	Timed      bool
	PeakRanges []snapshot.Range
	PeakStep   *int
	PeakPhase  string
	// Steps is how many steps the trace holds; StepsSource and StepsRange
	// say where their boundaries came from (Phases.Source, Phases.Range).
	Steps                   int
	StepsSource, StepsRange string
	// StepsCutBy is the other device whose out-of-memory error ended this
	// device's one pass (Phases.CutDevice); -1 when none did.
	StepsCutBy int

	// TopSites are the allocation sites holding the most block bytes at the
	// peak, largest first; LiveAtPeak counts the blocks live then.
	TopSites   []SiteBytes
	LiveAtPeak int
	// Categories holds the allocated bytes at the peak by category.
	Categories [NumCategories]Bytes
	// PrivatePools are the private pools reserved at the peak (CUDA
	// graphs', MemPools'), nil for none; PrivatePoolsEnd those at the end
	// (Device.Frag's).
	PrivatePools    []PrivatePool
	PrivatePoolsEnd []PrivatePool
	// StepTable is the step × phase table of every step (Phases.Table).
	StepTable StepTable
	Findings  []Finding
	// Fixes are the first SummaryFixes of Advise's fixes, cheapest first
	// (none outside a training step's peak).
	Fixes []AdviceFix
	// Inference is the device's Inference (nil for none).
	Inference *Inference

	// With a joined profiler trace: the peak's bytes by operator (top
	// rows), and the share of the bytes allocated in the trace's window
	// that found their operator.
	Ops        []OpBytes
	OpsCovered float64
	Joined     bool
	Join       *Join // the join itself: its windows
	// With a profiler memory timeline (export_memory_timeline) of the same
	// run: its live bytes by torch's categories at the allocated peak.
	Timeline *trace.Sample

	Events, Segments, Blocks, ActiveBlocks, OOMs int
	// TorchSegments, InactiveSplit and InactiveSplitBytes are the end
	// state as torch.cuda.memory_stats() counts it (segment.all.current,
	// inactive_split.all.current, inactive_split_bytes.all.current): the
	// segments, expandable ones left out (torch counts a mapping, not a
	// segment); the free blocks of segments split into several blocks and
	// their bytes, expandable segments left out (their free pages can be
	// unmapped). Every pool counts, private ones too.
	TorchSegments, InactiveSplit int
	InactiveSplitBytes           int64
	// AllocRetries is torch's num_alloc_retries (Device.AllocRetries);
	// nil where it cannot be told.
	AllocRetries *int

	// Warnings are the replay's; Lost what a wrapped ring buffer lost, to
	// be said with the snapshot.WarnWrapped one (nil when not estimated).
	Warnings []snapshot.Warning
	Lost     *Lost
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

// Summarize condenses an analysis into what 'memscope summary' reports,
// keeping the top sites at the peak. It computes nothing new.
func Summarize(a *Analysis, top int) *Summary {
	s := a.Snapshot
	out := &Summary{Source: s.Source, Format: s.Format.String(), Protocol: s.Protocol,
		Warnings: s.Warnings, Stacks: s.Stacks, Sites: a.Filter.For(s.Stacks)}
	for _, d := range a.Devices {
		out.Devices = append(out.Devices, summarizeDevice(s, d, top))
	}
	return out
}

func summarizeDevice(s *snapshot.Snapshot, dev *Device, top int) DeviceSummary {
	t := dev.Timeline
	d := dev.Device
	ds := DeviceSummary{
		Device: d, Start: t.Start, AtPeak: dev.Peak.Numbers, End: t.End,
		PeakRequested: t.PeakRequested, PeakAllocated: t.PeakAllocated,
		PeakActive: t.PeakActive, PeakReserved: t.PeakReserved,
		Events: len(t.Events), OOMs: len(t.OOMs), Warnings: dev.Warnings, Lost: dev.Lost, Timed: t.Timed,
		PrivatePools: dev.Frag[0].Private, PrivatePoolsEnd: dev.Frag[1].Private,
		StepTable: dev.Phases.Table(dev.Phases.AllSteps(), 0),
	}
	for _, i := range s.SegmentsOf(d) {
		seg := &s.Segments[i]
		ds.Segments++
		ds.Blocks += len(seg.Blocks)
		if !seg.Expandable {
			ds.TorchSegments++
		}
		split := !seg.Expandable && len(seg.Blocks) > 1
		for j := range seg.Blocks {
			b := &seg.Blocks[j]
			if b.State.Active() {
				ds.ActiveBlocks++
			} else if split && b.State == snapshot.BlockInactive {
				ds.InactiveSplit++
				ds.InactiveSplitBytes += b.Size
			}
		}
	}
	if n := len(t.Events); n > 0 {
		first := t.Events[0].TimeUS
		ds.DurationUS = t.Events[n-1].TimeUS - first
		if t.PeakAllocated.Index >= 0 {
			ds.PeakOffsetUS = t.PeakAllocated.TimeUS - first
			ds.PeakRanges = snapshot.RangesAt(dev.ranges, t.PeakAllocated.TimeUS)
		}
	}
	if n, ok := dev.AllocRetries(); ok {
		ds.AllocRetries = &n
	}
	ds.Steps, ds.StepsSource, ds.StepsRange = len(dev.Phases.Steps), dev.Phases.Source, dev.Phases.Range
	ds.StepsCutBy = -1
	if dev.Phases.CutElsewhere {
		ds.StepsCutBy = dev.Phases.CutDevice
	}
	if dev.Phases.PeakPhase >= 0 {
		ph := dev.Phases.List[dev.Phases.PeakPhase]
		if ph.Step >= 0 {
			n := ph.Step
			ds.PeakStep = &n
		}
		ds.PeakPhase = ph.Name
	}
	for _, site := range dev.Peak.Sites {
		ds.LiveAtPeak += site.Count
	}
	ds.TopSites = dev.Peak.Sites[:min(top, len(dev.Peak.Sites))]
	ds.Categories = dev.Peak.Categories
	ds.Findings = dev.Findings()
	if ad := dev.Advise(AdviseOptions{}); ad.Training && ad.Step >= 0 {
		ds.Fixes = ad.Fixes[:min(SummaryFixes, len(ad.Fixes))]
	}
	ds.Inference = dev.Inference
	return ds
}

// SummaryFixes is how many of Advise's fixes a summary keeps.
const SummaryFixes = 3

// JoinTrace adds the peak's bytes by operator from the profiler trace of
// the same run, keeping the top rows.
func (s *Summary) JoinTrace(a *Analysis, tr *trace.Trace, top int) {
	byDevice := map[int][]*Device{}
	for _, d := range a.Devices {
		byDevice[d.Device] = append(byDevice[d.Device], d)
	}
	for i := range s.Devices {
		ds := &s.Devices[i]
		for _, d := range byDevice[ds.Device] {
			j := d.JoinTrace(tr)
			rows, covered := j.ByOp(d.Peak)
			ds.Ops, ds.OpsCovered, ds.Joined, ds.Join = rows[:min(top, len(rows))], covered, true, j
		}
	}
}

// JoinProfile joins the profiler's output of the same run, the file
// source: a trace by operator (JoinTrace, top rows), or a memory timeline
// (JoinTimeline). An empty Profile joins nothing.
func (s *Summary) JoinProfile(a *Analysis, source string, p trace.Profile, top int) {
	if p.Trace != nil {
		s.JoinTrace(a, p.Trace, top)
	}
	if p.Timeline != nil {
		s.JoinTimeline(source, p.Timeline)
	}
}

// JoinTimeline reads the profiler's memory timeline (the file source) at
// each device's allocated peak; the two share the epoch µs clock. The
// timeline is of one device, the one it was exported for (cuda:0 by
// default).
func (s *Summary) JoinTimeline(source string, ct *trace.CategoryTimeline) {
	s.TimelineSource = source
	for i := range s.Devices {
		smp := ct.Sample(s.Devices[i].PeakAllocated.TimeUS)
		s.Devices[i].Timeline = &smp
	}
}

// Findings lists the device's verdicts: leak, fragmentation at the peak,
// and each OOM.
func (d *Device) Findings() []Finding {
	out := []Finding{{Kind: FindingLeak, Severity: d.Leak.Severity(), Leak: d.Leak}}
	if len(d.Frag) > 0 {
		f := d.Frag[0]
		out = append(out, Finding{Kind: FindingFragmentation, Severity: f.Verdict.Severity, Frag: f})
	}
	for _, o := range d.OOMs {
		out = append(out, Finding{Kind: FindingOOM, Severity: SeverityProblem, OOM: o})
	}
	return out
}

// TopSites groups the allocated (not pending-free) blocks of live by site
// and returns the top n by block bytes, with their share of total. Sites are
// looked up per stack in the filter's table: no frame is matched here, and
// a block with neither a stack nor an allocation in the trace is
// "(allocated before recording began)". Device.At names each block as
// Device.SiteOfBlock does.
func TopSites(st *snapshot.Stacks, live []snapshot.LiveBlock, f *Filter, total int64, n int) []SiteBytes {
	before := func(b *snapshot.LiveBlock) (Site, bool) {
		return Site{Kind: SiteBefore}, b.AllocIndex < 0 && b.Stack == 0
	}
	return topSites(st, live, f, total, n, before)
}

// beforeSite is the site of blocks with neither an allocation in the trace
// nor a stack: allocated before recording began, or, on a device with no
// recorded history at all (no trace, or a trace of one entry from a
// recording that keeps one), simply not recorded.
func (d *Device) beforeSite() Site {
	if len(d.Timeline.Events) == 0 || d.Timeline.OneEntry {
		return Site{Kind: SiteUnrecorded}
	}
	return Site{Kind: SiteBefore}
}

// BlockSite is SiteOfBlock for the blocks whose site their stack does not
// decide: those live before recording with no stack, and those of stacks
// with no Python frame; ok is false for the others (a cache of sites by
// stack may hold theirs).
func (d *Device) BlockSite(b *snapshot.LiveBlock) (Site, bool) {
	if b.AllocIndex < 0 && b.Stack == 0 || d.origins.tab.perBlock(b.Stack) {
		return d.SiteOfBlock(b), true
	}
	return Site{}, false
}

// topSites is TopSites with perBlock naming the blocks whose site is not
// their stack's (ok true).
func topSites(st *snapshot.Stacks, live []snapshot.LiveBlock, f *Filter, total int64, n int, perBlock func(*snapshot.LiveBlock) (Site, bool)) []SiteBytes {
	type acc struct {
		SiteBytes
		largest int64
	}
	tab := f.For(st)
	by := map[int32]*acc{}     // by the stack's site index
	special := map[Site]*acc{} // blocks perBlock names
	var order []*acc
	for i := range live {
		b := &live[i]
		if b.PendingFree {
			continue
		}
		var a *acc
		if site, ok := perBlock(b); ok {
			if a = special[site]; a == nil {
				a = &acc{SiteBytes: SiteBytes{Site: site, Label: site.Label(st)}}
				special[site] = a
				order = append(order, a)
			}
		} else {
			k := tab.siteIndex(b.Stack)
			if a = by[k]; a == nil {
				site := tab.Site(b.Stack)
				a = &acc{SiteBytes: SiteBytes{Site: site, Label: site.Label(st)}}
				by[k] = a
				order = append(order, a)
			}
		}
		a.Bytes += b.Size
		a.Requested += b.Requested
		a.Count++
		if b.Size > a.largest {
			a.largest, a.Stack, a.FreeStack = b.Size, b.Stack, b.FreeStack
		}
	}
	out := make([]SiteBytes, 0, len(order))
	for _, a := range order {
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
