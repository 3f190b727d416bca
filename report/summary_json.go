package report

import (
	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/snapshot"
)

// SummaryDoc is the JSON document of 'memscope summary --json'. Sizes are
// raw bytes; times are µs (offsets from the first event, or since the epoch
// where the name ends in _epoch_us).
type SummaryDoc = FilesDoc[SummaryFile]

type SummaryFile struct {
	Source   string          `json:"source"`
	Format   string          `json:"format"`
	Protocol int             `json:"protocol,omitempty"`
	Devices  []SummaryDevice `json:"devices"`
	Warnings []string        `json:"warnings"`
}

type Numbers struct {
	Requested int64 `json:"requested"`
	Allocated int64 `json:"allocated"`
	Active    int64 `json:"active"`
	Reserved  int64 `json:"reserved"`
}

type PeakJSON struct {
	Bytes       int64 `json:"bytes"`
	EventIndex  int   `json:"event_index"` // -1: before the first event
	TimeEpochUS int64 `json:"time_epoch_us"`
}

type RangeJSON struct {
	Name         string `json:"name"`
	StartEpochUS int64  `json:"start_epoch_us"`
	EndEpochUS   int64  `json:"end_epoch_us"` // 0: still open
}

type FrameJSON struct {
	Name     string `json:"name"`
	Filename string `json:"filename"`
	Line     int64  `json:"line"`
}

type SiteJSON struct {
	Label string `json:"label"`
	Kind  string `json:"kind"` // user, library, python, backward, none (no Python frame), before (predates recording), unrecorded
	// Named is false for the sites that name no origin: "(allocated
	// before recording began)", "(no Python frame…)", "(no history
	// recorded)" (attribution.Site.Named).
	Named bool       `json:"named"`
	Frame *FrameJSON `json:"frame"`
	// Caller is, for a library site, the user's frame that called into the
	// library; null otherwise.
	Caller    *FrameJSON  `json:"caller"`
	Bytes     int64       `json:"bytes"`
	Requested int64       `json:"requested"`
	Blocks    int         `json:"blocks"`
	Share     float64     `json:"share"`
	Stack     []FrameJSON `json:"stack"` // the largest block's stack, innermost first
	FreeStack bool        `json:"stack_is_free_site"`
}

type FindingJSON struct {
	Kind    string `json:"kind"`
	Problem bool   `json:"problem"`
	Text    string `json:"text"`
}

// InferenceJSON is attribution.Inference: where an inference run's memory
// is. Bytes are raw.
type InferenceJSON struct {
	Calls             int    `json:"calls"`
	Weights           int64  `json:"weights"`
	KVCache           int64  `json:"kv_cache"`
	KVCacheBlocks     int    `json:"kv_cache_blocks"`
	KVCacheRequested  int64  `json:"kv_cache_requested"`
	Growing           bool   `json:"growing"`
	KVAfterPrefill    int64  `json:"kv_after_prefill"`
	DecodeSteps       int    `json:"decode_steps"`
	GrowthPerStep     int64  `json:"growth_per_step"`
	PeakPhase         string `json:"peak_phase"`
	PeakIndex         int    `json:"peak_index"`
	Peak              int64  `json:"peak"`
	Activations       int64  `json:"activations"`
	DecodePeakIndex   int    `json:"decode_peak_index"`
	DecodePeak        int64  `json:"decode_peak"`
	DecodeActivations int64  `json:"decode_activations"`
	Engine            string `json:"engine"`
	Trainer           int64  `json:"trainer"`
}

type SummaryDevice struct {
	Device           int                 `json:"device"`
	Start            Numbers             `json:"start"`
	AtPeak           Numbers             `json:"at_peak"`
	End              Numbers             `json:"end"`
	DeviceUsed       *int64              `json:"device_used"`      // null: not recorded
	DeviceUsedPeak   *int64              `json:"device_used_peak"` // null outside a capture run
	Peaks            map[string]PeakJSON `json:"peaks"`            // requested, allocated, active, reserved
	PeakOffsetUS     int64               `json:"peak_offset_us"`
	DurationUS       int64               `json:"duration_us"`
	TimesRecorded    bool                `json:"times_recorded"` // false: no time_us, offsets are 0
	PeakRanges       []RangeJSON         `json:"peak_ranges"`
	PeakStep         *int                `json:"peak_step"`
	PeakPhase        string              `json:"peak_phase"`
	Steps            int                 `json:"steps"`
	StepsSource      string              `json:"steps_source"` // harness, optimizer, profiler, record_function, dataloader, pattern, kv cache, none
	StepsFrom        string              `json:"steps_from"`   // the same in words
	TopSites         []SiteJSON          `json:"top_sites"`
	LiveBlocksAtPeak int                 `json:"live_blocks_at_peak"`
	Events           int                 `json:"events"`
	Segments         int                 `json:"segments"`
	Blocks           int                 `json:"blocks"`
	ActiveBlocks     int                 `json:"active_blocks"`
	OOMs             int                 `json:"ooms"`
	EndStats         EndStatsJSON        `json:"end_stats"`
	Categories       map[string]int64    `json:"categories_at_peak"` // allocated bytes by category
	// PrivatePoolsAtPeak and PrivatePoolsAtEnd: the private pools (CUDA
	// graphs', MemPools') reserved at the peak and at the end; [] for none.
	PrivatePoolsAtPeak []PrivatePoolJSON   `json:"private_pools_at_peak"`
	PrivatePoolsAtEnd  []PrivatePoolJSON   `json:"private_pools_at_end"`
	StepTable          StepTableJSON       `json:"step_table"` // allocated bytes per step and phase
	Findings           []FindingJSON       `json:"findings"`
	Fixes              []AdviceFixJSON     `json:"fixes"`     // advise's first three, cheapest first
	Inference          *InferenceJSON      `json:"inference"` // null unless a KV cache was recognised
	Ops                []OpBytesJSON       `json:"ops_at_peak,omitempty"`
	OpsCovered         *float64            `json:"ops_covered,omitempty"`
	TimelineAtPeak     *TimelineSampleJSON `json:"timeline_at_peak,omitempty"`
	Warnings           []string            `json:"warnings"`
}

// EndStatsJSON is the end state as torch.cuda.memory_stats() counts it:
// each field is torch's NAME.all.current (segment, inactive_split,
// inactive_split_bytes), computed from the snapshot's segments.
type EndStatsJSON struct {
	Segment            int   `json:"segment"` // expandable segments left out, as torch counts them
	InactiveSplit      int   `json:"inactive_split"`
	InactiveSplitBytes int64 `json:"inactive_split_bytes"`
}

func summaryFile(s *attribution.Summary) SummaryFile {
	f := SummaryFile{Source: s.Source, Format: s.Format, Protocol: s.Protocol,
		Devices: []SummaryDevice{}, Warnings: warningStrings(s.Warnings)}
	for i := range s.Devices {
		d := &s.Devices[i]
		sd := SummaryDevice{
			Device: d.Device, Start: numbers(d.Start), AtPeak: numbers(d.AtPeak), End: numbers(d.End),
			DeviceUsed: d.DeviceUsed, DeviceUsedPeak: d.DeviceUsedPeak,
			Peaks: map[string]PeakJSON{
				"requested": peak(d.PeakRequested), "allocated": peak(d.PeakAllocated),
				"active": peak(d.PeakActive), "reserved": peak(d.PeakReserved),
			},
			PeakOffsetUS: d.PeakOffsetUS, DurationUS: d.DurationUS, TimesRecorded: d.Timed,
			PeakRanges: []RangeJSON{}, PeakStep: d.PeakStep, PeakPhase: d.PeakPhase,
			Steps: d.Steps, StepsSource: d.StepsSource, StepsFrom: stepsFromText(d.StepsSource, d.StepsRange, d.Events) + cutByText(d.StepsCutBy),
			TopSites: []SiteJSON{}, LiveBlocksAtPeak: d.LiveAtPeak,
			Events: d.Events, Segments: d.Segments, Blocks: d.Blocks, ActiveBlocks: d.ActiveBlocks,
			OOMs: d.OOMs, Warnings: deviceWarnings(d),
			EndStats:           EndStatsJSON{d.TorchSegments, d.InactiveSplit, d.InactiveSplitBytes},
			PrivatePoolsAtPeak: privatePoolsJSON(d.PrivatePools), PrivatePoolsAtEnd: privatePoolsJSON(d.PrivatePoolsEnd),
			StepTable: stepTableJSON(d.StepTable),
		}
		sd.Categories = map[string]int64{}
		for c := attribution.Category(0); c < attribution.NumCategories; c++ {
			sd.Categories[c.String()] = d.Categories[c].Bytes
		}
		if inf := d.Inference; inf != nil {
			sd.Inference = inferenceJSON(inf)
		}
		if d.Joined {
			sd.Ops, sd.OpsCovered = opRowsJSON(d.Ops, -1), &d.OpsCovered
		}
		if d.Timeline != nil {
			sd.TimelineAtPeak = timelineSampleJSON(s.TimelineSource, *d.Timeline)
		}
		sd.Fixes = adviceFixesJSON(d.Fixes)
		sd.Findings = []FindingJSON{}
		for _, f := range d.Findings {
			sd.Findings = append(sd.Findings, FindingJSON{f.Kind.String(), f.Problem(), findingText(f)})
		}
		for _, r := range d.PeakRanges {
			sd.PeakRanges = append(sd.PeakRanges, RangeJSON{r.Name, r.StartUS, r.EndUS})
		}
		for _, site := range d.TopSites {
			sd.TopSites = append(sd.TopSites, siteJSON(s.Stacks, site))
		}
		f.Devices = append(f.Devices, sd)
	}
	return f
}

func numbers(n snapshot.Numbers) Numbers {
	return Numbers{n.Requested, n.Allocated, n.Active, n.Reserved}
}

func peak(p snapshot.Peak) PeakJSON { return PeakJSON{p.Bytes, p.Index, p.TimeUS} }

func frameJSON(f *snapshot.Frame) FrameJSON {
	return FrameJSON{Name: f.Name, Filename: f.Filename, Line: f.Line}
}

func stackJSON(st *snapshot.Stacks, id snapshot.StackID) []FrameJSON {
	out := []FrameJSON{}
	for _, fid := range st.Stack(id) {
		out = append(out, frameJSON(st.Frame(fid)))
	}
	return out
}

func warningStrings(ws []snapshot.Warning) []string {
	out := []string{}
	for _, w := range ws {
		out = append(out, w.Message)
	}
	return out
}

func inferenceJSON(inf *attribution.Inference) *InferenceJSON {
	return &InferenceJSON{Calls: inf.Calls, Weights: inf.Weights.Bytes, KVCache: inf.KVCache.Bytes,
		KVCacheBlocks: inf.KVCache.Count, KVCacheRequested: inf.KVRequested, Growing: inf.Growing,
		KVAfterPrefill: inf.KVAfterPrefill, DecodeSteps: inf.DecodeSteps, GrowthPerStep: inf.GrowthPerStep,
		PeakPhase: inf.PeakPhase, PeakIndex: inf.PeakIndex, Peak: inf.Peak, Activations: inf.Activations,
		DecodePeakIndex: inf.DecodePeakIndex, DecodePeak: inf.DecodePeak, DecodeActivations: inf.DecodeActivations,
		Engine: inf.Engine, Trainer: inf.Trainer}
}
