// Package jsondoc holds the JSON documents memscope writes, as Go types:
// the one definition of their shape (docs/json.md). report builds them
// from analyses and writes them (its names for these types are aliases);
// readers of a document (attribution.SummaryRanks reading 'memscope
// summary --json') decode into the same types, so a field is added once.
// The package holds types only and imports nothing of memscope's.
package jsondoc

// Schema is the schema every document of report carries (report.Schema).
const Schema = "memscope/v1"

// SummaryDoc is the JSON document of 'memscope summary --json'. Sizes are
// raw bytes; times are µs (offsets from the first event, or since the epoch
// where the name ends in _epoch_us).
type SummaryDoc = FilesDoc[SummaryFile]

// FilesDoc is the document of the commands that read several files: one
// entry per file (per file and device for ops). T is the entry's type; the
// documented entry types are listed in docs/json.md.
type FilesDoc[T any] struct {
	Schema string `json:"schema"`
	Kind   string `json:"kind"`
	Files  []T    `json:"files"`
}

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
	// Folded: in a stack, a frame the site rule folds (plumbing: torch,
	// the standard library, C++…; --ignore and --focus change it).
	Folded bool `json:"folded,omitempty"`
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
	AllocRetries     *int                `json:"num_alloc_retries"` // torch's count; null: the recording began late or the model does not follow it
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

// PrivatePoolJSON is one private pool (a CUDA graph's, a
// torch.cuda.MemPool's) at a moment (attribution.PrivatePool). Its free
// bytes serve only its own graph's replays or the pool's allocations, and
// empty_cache() does not release them.
type PrivatePoolJSON struct {
	Pool      [2]int64 `json:"pool"` // segment_pool_id, as torch names it: (0, 1)…
	Reserved  int64    `json:"reserved"`
	Allocated int64    `json:"allocated"`
	Free      int64    `json:"free"` // reserved − allocated
	Segments  int      `json:"segments"`
}

// StepTableJSON is the step × phase table of one device
// (attribution.StepTable over every step), as 'peak' prints it after its
// moment: allocated bytes per step and phase.
type StepTableJSON struct {
	// Phases are the table's columns, in the order the names first appear
	// in the steps.
	Phases []string      `json:"phases"`
	Rows   []StepRowJSON `json:"rows"`
	// PeakStep and PeakPhase name the phase holding the device's
	// allocated peak; PeakStep is null when that phase is outside every
	// step (setup) or no phase holds it, PeakPhase "" when none does.
	PeakStep  *int   `json:"peak_step"`
	PeakPhase string `json:"peak_phase"`
}

// StepRowJSON is one step of the table.
type StepRowJSON struct {
	Step  int   `json:"step"`
	Floor int64 `json:"floor"` // allocated at the step's first event
	After int64 `json:"after"` // allocated after its last event
	Peak  int64 `json:"peak"`  // the highest allocated inside the step
	// PeakPhase is the phase holding the step's peak.
	PeakPhase string `json:"peak_phase"`
	// PhasePeaks holds, by phase name, the phase's highest allocated peak
	// in this step: with gradient accumulation, the highest of its
	// micro-batches'. A phase the step does not have is absent.
	PhasePeaks map[string]int64 `json:"phase_peaks"`
	// HoldsPeak is true for the step holding the device's peak.
	HoldsPeak bool `json:"holds_peak"`
}

// AdviceFixJSON is one fix, worded from the catalog budget shares.
type AdviceFixJSON struct {
	Name              string         `json:"name"`
	Term              string         `json:"term"`
	Cost              string         `json:"cost"`
	CostRank          int            `json:"cost_rank"`
	Removes           int64          `json:"removes"`
	Blocks            int            `json:"blocks"`
	NewPeak           int64          `json:"new_peak"`
	NewPeakEventIndex int            `json:"new_peak_event_index"`
	Ranks             int64          `json:"ranks,omitempty"`
	Chunks            int64          `json:"chunks,omitempty"`
	Fit               *BudgetFitJSON `json:"fit,omitempty"`
	Limit             *LimitFitJSON  `json:"limit,omitempty"`
}

// BudgetFitJSON is the prediction held against a device (budget.Fit), its
// verdict in words.
type BudgetFitJSON struct {
	Device          string  `json:"device"` // name, or "" for a size
	Memory          int64   `json:"memory"`
	Need            int64   `json:"need"`
	Headroom        int64   `json:"headroom"`
	HeadroomPercent float64 `json:"headroom_percent"`
	Verdict         string  `json:"verdict"` // fits, tight, does not fit
}

// LimitFitJSON is an allocated peak against an OOM'd step's limit.
type LimitFitJSON struct {
	Peak     int64  `json:"peak"`
	Verdict  string `json:"verdict"` // fits, tight, cannot tell, does not fit
	Headroom int64  `json:"headroom"`
	Over     int64  `json:"over"`
}

type OpBytesJSON struct {
	Op     string `json:"op"`
	Bytes  int64  `json:"bytes"`
	Blocks int    `json:"blocks"`
}

// TimelineSampleJSON is a memory timeline read at a snapshot's moment
// (peak and summary with --trace naming an export_memory_timeline file).
type TimelineSampleJSON struct {
	Source      string `json:"source"`
	TimeEpochUS int64  `json:"time_epoch_us"`
	// Covered is false when the moment lies outside the timeline; the
	// bytes are then not about that moment and are left empty.
	Covered    bool             `json:"covered"`
	Total      int64            `json:"total"`
	Categories map[string]int64 `json:"categories"`
}
