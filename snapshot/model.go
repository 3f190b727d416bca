package snapshot

// This file holds the typed model that the decoder produces. Everything is a
// plain struct linked by IDs: blocks and events hold a StackID into the one
// Stacks table, never a copy of their frames.

// Snapshot is one decoded allocator snapshot: the end state (Segments) and the
// recorded history per device (Traces). All slices are owned by the Snapshot.
type Snapshot struct {
	Source   string // file name as given to Open, for messages
	Format   Format // how the file was encoded
	Protocol int    // pickle protocol, 0 for JSON

	Segments []Segment // end state, all devices, in file order
	// Traces[d] is device d's ring buffer, oldest first. A device with no
	// recorded entries has an empty slice. Nil when the file had no
	// device_traces (a bare segments list or a state-only snapshot).
	Traces      [][]Event
	Annotations []Annotation // external_annotations, in file order

	// Settings is allocator_settings as plain Go values (string, int64,
	// float64, bool, map[string]any, []any); nil when absent.
	Settings map[string]any
	// MemoryStats is a "memory_stats" entry that some tools add beside
	// torch's keys (torch.cuda.memory_stats(), flat or nested, for the one
	// device or keyed by device), as plain Go values; nil when absent.
	MemoryStats map[string]any
	// UnknownKeys names top-level keys the decoder did not recognise; their
	// values were skipped.
	UnknownKeys []string
	// Legacy is true for ≤2.0 snapshots whose blocks carried "history".
	Legacy bool
	// HasTraces is false for a bare segments list (no history recorded).
	HasTraces bool

	Stacks  *Stacks
	Strings *Strings // compile_context and user_metadata values

	Warnings []Warning

	devIndex *deviceIndex // see devindex.go
}

// Format says how a snapshot file was encoded.
type Format uint8

const (
	FormatPickle Format = iota
	FormatJSON
	FormatHTML // base64 pickle inside a _memory_viz trace_plot/segment_plot page
)

func (f Format) String() string {
	switch f {
	case FormatPickle:
		return "pickle"
	case FormatJSON:
		return "json"
	case FormatHTML:
		return "html"
	}
	return "unknown"
}

// Segment is one contiguous reserved range (a cudaMalloc, or a contiguous
// mapped range of an expandable segment).
type Segment struct {
	Device        int
	Address       uint64
	TotalSize     int64
	AllocatedSize int64
	ActiveSize    int64
	RequestedSize int64
	Stream        int64 // cudaStream_t as an integer; 0 is the default stream
	Pool          PoolID
	Small         bool // segment_type "small"
	Expandable    bool
	Stack         StackID
	Blocks        []Block // address order, end to end from Address; sizes sum to TotalSize in torch's, to at most it always
}

// End returns the first address past the segment.
func (s *Segment) End() uint64 { return s.Address + uint64(s.TotalSize) }

// PoolID is segment_pool_id: (0,0) is the default pool.
type PoolID struct{ A, B int64 }

// IsDefault reports whether p is the default (0,0) pool.
func (p PoolID) IsDefault() bool { return p.A == 0 && p.B == 0 }

// Block is one block of a segment in the end state.
type Block struct {
	Address       uint64
	Size          int64 // rounded block bytes
	RequestedSize int64 // meaningful only for active blocks
	State         BlockState
	Stack         StackID
}

// BlockState is a block's state in the end-state segments.
type BlockState uint8

const (
	BlockInactive BlockState = iota
	BlockActiveAllocated
	BlockActivePendingFree
	BlockUnknown // a state string this decoder does not know
)

func (s BlockState) String() string {
	switch s {
	case BlockInactive:
		return "inactive"
	case BlockActiveAllocated:
		return "active_allocated"
	case BlockActivePendingFree:
		return "active_pending_free"
	}
	return "unknown"
}

// Active reports whether the block occupies its memory (allocated or pending free).
func (s BlockState) Active() bool { return s == BlockActiveAllocated || s == BlockActivePendingFree }

// Event is one trace entry of a device's ring buffer.
type Event struct {
	Addr   uint64 // block or segment address; device free bytes for ActionOOM
	Size   int64  // requested bytes for alloc/free; segment bytes for segment_*
	Stream int64
	TimeUS int64 // µs since the Unix epoch; 0 when not recorded (torch < 2.2)
	Stack  StackID
	// CompileContext and UserMetadata index Snapshot.Strings; 0 is "".
	CompileContext StringID
	UserMetadata   StringID
	Action         Action
}

// DeviceFree returns the device's free bytes recorded with an oom event.
func (e *Event) DeviceFree() int64 { return int64(e.Addr) }

// Action is a trace entry's action.
type Action uint8

const (
	ActionUnknown Action = iota
	ActionAlloc
	ActionFreeRequested
	ActionFreeCompleted
	ActionSegmentAlloc
	ActionSegmentFree
	ActionSegmentMap
	ActionSegmentUnmap
	ActionSnapshot
	ActionOOM
	ActionAnnotate
	numActions
)

var actionNames = [numActions]string{
	ActionUnknown:       "unknown",
	ActionAlloc:         "alloc",
	ActionFreeRequested: "free_requested",
	ActionFreeCompleted: "free_completed",
	ActionSegmentAlloc:  "segment_alloc",
	ActionSegmentFree:   "segment_free",
	ActionSegmentMap:    "segment_map",
	ActionSegmentUnmap:  "segment_unmap",
	ActionSnapshot:      "snapshot",
	ActionOOM:           "oom",
	ActionAnnotate:      "annotate",
}

func (a Action) String() string {
	if a < numActions {
		return actionNames[a]
	}
	return "unknown"
}

// ParseAction maps an action string to its Action; unknown strings give ActionUnknown.
func ParseAction(s string) Action {
	for i, n := range actionNames {
		if n == s && i != 0 {
			return Action(i)
		}
	}
	return ActionUnknown
}

// Annotation is one external_annotations entry (a record_function range edge).
type Annotation struct {
	Start  bool // stage "START"; false for "END"
	Name   string
	Device int
	TimeUS int64
}

// Warning is a non-fatal problem found while reading or replaying. It is
// carried with the result and shown next to the findings.
type Warning struct {
	Device  int    // -1 when not about one device
	Kind    string // what it is about: see the Warn constants
	Message string // lowercase, one line
}

// Warning kinds.
const (
	WarnLost          = "lost"           // part of the file could not be read
	WarnTrailing      = "trailing"       // bytes after the snapshot's end were ignored
	WarnLateStart     = "late-start"     // blocks were live at the first recorded entry
	WarnWrapped       = "wrapped"        // the trace ring buffer dropped its oldest entries
	WarnOneEntry      = "one-entry"      // a one-entry trace (legacy _record_memory_history(True), or enabled="state")
	WarnPeakBefore    = "peak-before"    // the true peak likely predates the recording
	WarnDeferredFrees = "deferred-frees" // frees waited for another stream's work: active well above allocated
	WarnUntimed       = "untimed"        // no time_us: events have an order, not a time
	WarnContradiction = "contradiction"  // the trace contradicts the snapshot's segments
	WarnSizes         = "sizes"          // block sizes differ between trace and segments
	WarnNPURounding   = "npu-rounding"   // torch_npu's block rounding recognised
	WarnDeepStack     = "deep-stack"     // stacks deeper than any recursion limit were cut to their ends
	WarnTimeBackwards = "time-backwards" // an entry's time_us is before the one before it
)

func (w Warning) String() string { return w.Message }

// StringID indexes a Strings table; 0 is the empty string.
type StringID uint32

// Strings interns short repeated strings (compile_context, user_metadata).
type Strings struct {
	list  []string
	index map[string]StringID
}

// NewStrings returns a table holding only "" at ID 0.
func NewStrings() *Strings {
	return &Strings{list: []string{""}, index: map[string]StringID{"": 0}}
}

// Intern returns the ID of s, adding it if needed.
func (t *Strings) Intern(s string) StringID {
	if id, ok := t.index[s]; ok {
		return id
	}
	id := StringID(len(t.list))
	t.list = append(t.list, s)
	t.index[s] = id
	return id
}

// Get returns the string for id ("" for an unknown id).
func (t *Strings) Get(id StringID) string {
	if int(id) < len(t.list) {
		return t.list[id]
	}
	return ""
}
