package attribution

// This file holds the verdicts as values: what kind each is, how serious,
// the numbers it rests on and the allocator setting it suggests. Package
// report words them; nothing here is a sentence.

// Severity is how much a verdict asks of the user.
type Severity int

const (
	SeverityOK        Severity = iota // an all-clear
	SeverityNoVerdict                 // the input cannot tell either way
	SeverityProblem                   // something to fix
)

// Setting is an option of PYTORCH_CUDA_ALLOC_CONF that a verdict suggests.
type Setting int

const (
	ExpandableSegments         Setting = iota // expandable_segments
	MaxSplitSize                              // max_split_size_mb
	GarbageCollectionThreshold                // garbage_collection_threshold
	RoundupPower2Divisions                    // roundup_power2_divisions
)

// String is the option's name in PYTORCH_CUDA_ALLOC_CONF.
func (s Setting) String() string {
	switch s {
	case ExpandableSegments:
		return "expandable_segments"
	case MaxSplitSize:
		return "max_split_size_mb"
	case GarbageCollectionThreshold:
		return "garbage_collection_threshold"
	case RoundupPower2Divisions:
		return "roundup_power2_divisions"
	}
	return "unknown setting"
}

// Suggestion is a setting to try, with the value to set it to; Value is ""
// when the verdict names the setting without a value (the right one
// depends on the job).
type Suggestion struct {
	Setting Setting
	Value   string
}

// FragKind is the kind of a fragmentation verdict.
type FragKind int

const (
	FragNothingReserved FragKind = iota // no segment reserved
	FragHealthy                         // under 10% of reserved is free
	FragCached                          // free, but in large pieces that serve later requests
	FragFragmented                      // free, but in small holes of split segments
	// At a failed request: it would have fit in the stranded bytes plus
	// the headroom, but no hole of its pool was large enough.
	FragRequestFragmented
	// At a failed request: it would not have fit even in the stranded
	// bytes plus the headroom.
	FragRequestTooLarge
)

// healthyShare is the share of reserved memory that may be free before the
// free memory is worth a look.
const healthyShare = 0.1

// FragVerdict is the verdict on the free memory at one moment, with the
// numbers it rests on (copied from its Fragmentation).
type FragVerdict struct {
	Kind     FragKind
	Severity Severity
	// Share is Free as a share (0–1) of reserved; Holes the free pieces.
	Free  int64
	Share float64
	Holes int
	// Largest is the largest hole: of the request's pool for the request
	// kinds, of either pool otherwise.
	Largest int64
	// Request, Stranded and Headroom are the failed request and what could
	// have served it (the request kinds only).
	Request, Stranded, Headroom int64
	// Try lists the settings to try, the first the one to try first.
	Try []Suggestion
	// Simulated is true at a failed request whose kind the allocator
	// model decided (OOMVerdict.Simulated); Try is then the settings that
	// served it. At the peak it is true when the model decided the kind
	// (Device.simulatedPeakVerdict): fragmentation when a setting lowers
	// the reserved peak, Recorded, by a tenth or more over the same
	// requests; Best is then the setting of the lowest peak that ran out
	// of nothing, BestPeak its peak ("" and 0: none lowered it by 1%).
	Simulated          bool
	Recorded, BestPeak int64
	Best               string
	// Static, when set, says why the model could not decide a verdict
	// the free blocks alone could be wrong about: it is theirs.
	Static string
}

// Problem reports whether the verdict is a problem: free memory split so
// that it cannot serve requests.
func (v FragVerdict) Problem() bool { return v.Severity == SeverityProblem }

// OOMKind is the kind of an out-of-memory verdict.
type OOMKind int

const (
	// OOMCapacity: the request would not have fit even if every free byte
	// stranded in split segments had been usable.
	OOMCapacity OOMKind = iota
	// OOMFragmentation: it would have, but no single free block of its
	// pool was large enough.
	OOMFragmentation
)

// Pool is one of the caching allocator's two pools.
type Pool int

const (
	SmallPool Pool = iota // requests up to 1 MiB, in 2 MiB segments
	LargePool
)

// String is the pool's name, as torch calls it.
func (p Pool) String() string {
	if p == SmallPool {
		return "small"
	}
	return "large"
}

// OOMVerdict is what failed at an out-of-memory event and what to change,
// with the numbers it rests on (copied from its OOM and Fragmentation).
type OOMVerdict struct {
	Kind     OOMKind
	Severity Severity // always SeverityProblem
	// Request is the failed request; Allocated what was allocated then and
	// Free what was free in reserved segments (reserved − active).
	Request, Allocated, Free int64
	// Pool is the request's pool and Largest its largest free block;
	// Stranded its free bytes in split segments, Headroom what the
	// allocator could still reserve (under the cap when Cap is set, else
	// from the device).
	Pool                        Pool
	Largest, Stranded, Headroom int64
	// DeviceFree is what the driver reported free, AllocSize the segment
	// the allocator needed; Cap the per-process limit that refused it,
	// nil when the device itself was full.
	DeviceFree, AllocSize int64
	Cap                   *Cap
	// Try lists the settings to try (fragmentation); a capacity verdict
	// has none: what is live must shrink or the limit rise.
	Try []Suggestion

	// Simulated is true when the allocator model decided the kind: the
	// device's recorded requests re-run under expandable_segments:True (a
	// defragmented allocator) with the same capacity served this request
	// (fragmentation) or did not (capacity). Arithmetic is then the kind
	// the free blocks alone gave; Served the simulated settings that
	// served it, lowest reserved peak first (Try follows them), NotServed
	// those that still ran out of memory. Without a simulation (the model
	// cannot run the trace) the free blocks decide, as Arithmetic.
	Simulated  bool
	Arithmetic OOMKind
	Served     []SimulatedFix
	NotServed  []Suggestion
	// Uncertain are the simulated settings that served every request from
	// a late recording's start state re-made under them, but not with the
	// cached memory of that start state (Unknown bytes, whose history the
	// trace does not hold) kept on top: the model cannot say whether they
	// help. Where expandable_segments:True is one, the kind is capacity.
	Uncertain []SimulatedFix
}

// SimulatedFix is a setting the allocator model says serves the requests,
// with the reserved peak it reached (and, for an uncertain one, the start
// state's cached bytes it depends on).
type SimulatedFix struct {
	Suggestion
	PeakReserved int64
	Unknown      int64
}

// LeakReason says why a leak analysis has no verdict either way.
type LeakReason int

const (
	LeakDecided   LeakReason = iota // there is a verdict: Found says which
	LeakNoHistory                   // no allocation history was recorded
	LeakFewSteps                    // fewer than a first step and minLeakSteps steady ones
)

// FindingKind is what a finding is about.
type FindingKind int

const (
	FindingLeak FindingKind = iota
	FindingFragmentation
	FindingOOM
)

// String is the kind's name, as the JSON's findings[].kind.
func (k FindingKind) String() string {
	switch k {
	case FindingLeak:
		return "leak"
	case FindingFragmentation:
		return "fragmentation"
	case FindingOOM:
		return "oom"
	}
	return "unknown"
}

// Finding is one verdict of a device, pointing at the result it rests on:
// Leak for a leak finding, Frag (at the peak) for fragmentation, OOM for an
// out-of-memory event.
type Finding struct {
	Kind     FindingKind
	Severity Severity
	Leak     *Leak
	Frag     *Fragmentation
	OOM      *OOM
}

// Problem reports whether the finding is something to fix.
func (f Finding) Problem() bool { return f.Severity == SeverityProblem }
