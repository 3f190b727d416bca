package allocator

import (
	"fmt"
	"strings"

	"github.com/memscope/memscope/snapshot"
)

// Kind is what one check of a replay compares.
type Kind uint8

const (
	KindSegmentAlloc Kind = iota // a segment_alloc: its size and its place in the event order
	KindSegmentFree              // a segment_free
	KindSegmentMap               // a segment_map: range and size
	KindSegmentUnmap             // a segment_unmap
	KindBlock                    // an alloc: the block's segment and offset
	KindOOM                      // an oom: the model failed the request too
	KindSnapshot                 // a snapshot entry: total active bytes
	NumKinds
)

var kindNames = [NumKinds]string{"segment_alloc", "segment_free", "segment_map", "segment_unmap",
	"block", "oom", "snapshot"}

func (k Kind) String() string {
	if k < NumKinds {
		return kindNames[k]
	}
	return "unknown"
}

func kindOf(a snapshot.Action) (Kind, bool) {
	switch a {
	case snapshot.ActionSegmentAlloc:
		return KindSegmentAlloc, true
	case snapshot.ActionSegmentFree:
		return KindSegmentFree, true
	case snapshot.ActionSegmentMap:
		return KindSegmentMap, true
	case snapshot.ActionSegmentUnmap:
		return KindSegmentUnmap, true
	case snapshot.ActionAlloc:
		return KindBlock, true
	case snapshot.ActionOOM:
		return KindOOM, true
	case snapshot.ActionSnapshot:
		return KindSnapshot, true
	}
	return 0, false
}

// Count is how many checks of one kind were made and how many matched.
type Count struct{ Checked, Matched int }

func (c *Count) add(ok bool) {
	c.Checked++
	if ok {
		c.Matched++
	}
}

// Decision is one allocator decision: a trace entry's action with its
// address and size; for a block, also the segment it lies in and its
// offset there (Segment 0 when it lies in none).
type Decision struct {
	Action  snapshot.Action // ActionUnknown: no decision (none recorded, or none predicted)
	Addr    uint64
	Size    int64
	Segment uint64
	Offset  int64
}

func (d Decision) String() string {
	switch d.Action {
	case snapshot.ActionUnknown:
		return "nothing"
	case snapshot.ActionAlloc:
		if d.Segment == 0 {
			return fmt.Sprintf("alloc of %d bytes at %#x, in no segment", d.Size, d.Addr)
		}
		return fmt.Sprintf("alloc of %d bytes at offset %d of segment %#x", d.Size, d.Offset, d.Segment)
	case snapshot.ActionSnapshot:
		return fmt.Sprintf("snapshot with %d active bytes", d.Size)
	case snapshot.ActionOOM:
		return fmt.Sprintf("oom for %d bytes", d.Size)
	}
	return fmt.Sprintf("%s of %d bytes at %#x", d.Action, d.Size, d.Addr)
}

// Divergence is the first place where the model and the recording
// disagree: the recorded entry at Index, what it recorded (Want) and what
// the model did instead (Got).
type Divergence struct {
	Index int // event index in the device's trace
	Kind  Kind
	Want  Decision
	Got   Decision
}

func (d Divergence) Error() string { return d.String() }

func (d Divergence) String() string {
	return fmt.Sprintf("event %d (%s): recorded %s, model %s", d.Index, d.Kind, d.Want, d.Got)
}

// EndDivergence is the first difference between the simulated end state
// and the snapshot's segments.
type EndDivergence struct {
	Segment uint64 // the snapshot segment's address (or the model's, for an extra one)
	Block   int    // block index in it; -1 for the segment itself
	Want    string // the snapshot's, in words
	Got     string // the model's
}

func (d EndDivergence) String() string {
	if d.Block < 0 {
		return fmt.Sprintf("segment %#x: snapshot %s, model %s", d.Segment, d.Want, d.Got)
	}
	return fmt.Sprintf("segment %#x block %d: snapshot %s, model %s", d.Segment, d.Block, d.Want, d.Got)
}

// ReplayReport is what a replay under the recorded settings found.
type ReplayReport struct {
	Device   int
	Settings Settings
	Events   int // entries in the device's trace

	Checks [NumKinds]Count // per kind of decision
	// First is the first divergence; nil when every check matched.
	First *Divergence
	// Divergences counts the requests (and releases) where the model and
	// the recording disagreed; after each the model was rebuilt from the
	// recorded state (Resyncs), or, where that is not possible
	// (expandable segments) or no longer worth its cost (LostWhy),
	// checking stopped at event LostAt.
	Divergences, Resyncs int
	LostAt               int // -1 while in step to the end
	Unchecked            int // entries after LostAt
	LostWhy              Lost

	// StartFromState is true when the trace did not begin at an empty
	// allocator and the model started from the state the timeline rebuilt:
	// StartSegments segments with StartBlocks live blocks.
	StartFromState             bool
	StartSegments, StartBlocks int
	// StartEstimated counts start blocks whose size the timeline could not
	// recover exactly (the rounded request stands in): a divergence in
	// them may be the start state's, not the model's.
	StartEstimated int
	// FailedMallocs counts cudaMalloc (or page map) failures taken from
	// the recording; EmptyCaches the segment releases outside any request,
	// checked as torch.cuda.empty_cache() calls.
	FailedMallocs, EmptyCaches int

	// Retries and OOMs are the model's num_alloc_retries and num_ooms over
	// the trace; Reserved its reserved bytes at the end.
	Retries, OOMs int
	// RetriesUncertain counts the retries read from releases that an
	// empty_cache() or a garbage collector could as well have made: ones
	// before a request whose segment passes the recording's peak of
	// reserved, with no cap known (ReplayOptions) or a garbage collector
	// at work. Where it is not 0, torch's count may be Retries less it.
	RetriesUncertain int
	Reserved         int64

	// End compares the simulated end state with the snapshot's segments,
	// block for block (only when in step at the end).
	EndChecked             bool
	EndSegments, EndBlocks Count
	EndFirst               *EndDivergence
}

// Lost says why checking stopped before the end.
type Lost int

const (
	LostNot        Lost = iota
	LostExpandable      // expandable segments: their reservations are unknown
	LostUnloadable      // the recorded state could not be loaded
	// LostTooOften: the model diverged so often that rebuilding it after
	// each divergence would cost more than replaying the trace.
	LostTooOften
	// LostAsked: the caller keeps only exact answers
	// (WhatIfOptions.StopInexact), so checking stopped at the first
	// divergence.
	LostAsked
)

// String says it in a few words, after "checking stopped at event N".
func (l Lost) String() string {
	switch l {
	case LostExpandable:
		return "expandable segments cannot be rebuilt from the recorded state"
	case LostUnloadable:
		return "the recorded state could not be loaded into the model"
	case LostTooOften:
		return "the model diverged too often to rebuild it after each divergence"
	case LostAsked:
		return "only a model that matches every decision was asked for"
	}
	return ""
}

// Total returns the checks of every kind together.
func (r *ReplayReport) Total() Count {
	var c Count
	for _, k := range r.Checks {
		c.Checked += k.Checked
		c.Matched += k.Matched
	}
	return c
}

// Exact reports whether every decision and the end state matched.
func (r *ReplayReport) Exact() bool {
	t := r.Total()
	return t.Checked == t.Matched && r.LostAt < 0 && r.First == nil &&
		(!r.EndChecked || (r.EndSegments.Checked == r.EndSegments.Matched && r.EndBlocks.Checked == r.EndBlocks.Matched))
}

// String is a summary for tests and debugging; user-facing words belong
// to package report.
func (r *ReplayReport) String() string {
	var b strings.Builder
	t := r.Total()
	fmt.Fprintf(&b, "device %d: %d/%d decisions matched", r.Device, t.Matched, t.Checked)
	for k, c := range r.Checks {
		if c.Checked > 0 {
			fmt.Fprintf(&b, " %s %d/%d", Kind(k), c.Matched, c.Checked)
		}
	}
	if r.EndChecked {
		fmt.Fprintf(&b, "; end segments %d/%d blocks %d/%d", r.EndSegments.Matched, r.EndSegments.Checked,
			r.EndBlocks.Matched, r.EndBlocks.Checked)
	}
	if r.First != nil {
		fmt.Fprintf(&b, "; first divergence %s; %d divergences, %d resyncs", r.First, r.Divergences, r.Resyncs)
	}
	if r.LostAt >= 0 {
		fmt.Fprintf(&b, "; out of step from event %d (%d unchecked: %s)", r.LostAt, r.Unchecked, r.LostWhy)
	}
	if r.EndFirst != nil {
		fmt.Fprintf(&b, "; end: %s", r.EndFirst)
	}
	return b.String()
}
