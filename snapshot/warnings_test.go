package snapshot_test

import (
	"strings"
	"testing"

	sg "github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	seg = int64(0x7f0000000000) // a segment address like torch's
)

// replayOf decodes a hand-built snapshot and replays device 0.
func replayOf(t *testing.T, s *sg.Synth) *snapshot.Timeline {
	t.Helper()
	snap, err := s.Decode("synth.pickle")
	if err != nil {
		t.Fatal(err)
	}
	return snapshot.Replay(snap, 0, snapshot.ReplayOptions{})
}

// steady is a segment of 20 MiB holding a 4 MiB block live throughout and
// a 2 MiB block allocated in the trace, and the trace that allocates the
// 2 MiB block, after freeing a 3 MiB block allocated before it began.
func steady(settings map[string]any, extra map[string]any) *sg.Synth {
	return &sg.Synth{
		Segments: []map[string]any{sg.Seg(seg, sg.Blk(4*mib, 4*mib, "active_allocated"),
			sg.Blk(2*mib, 2*mib, "active_allocated"), sg.Blk(14*mib, 0, "inactive"))},
		Traces: [][]map[string]any{{
			sg.Ev("free_requested", seg+6*mib, 3*mib, 100),
			sg.Ev("free_completed", seg+6*mib, 3*mib, 101),
			sg.Ev("alloc", seg+4*mib, 2*mib, 102),
		}},
		Settings: settings, Extra: extra,
	}
}

// legacy is a torch ≈ 2.0 snapshot: blocks carry their history, no
// addresses, and the trace keeps one entry (trace_alloc_max_entries=1, the
// default of that API).
func legacy() *sg.Synth {
	block := func(addr, size, req int64) map[string]any {
		return map[string]any{"size": size, "requested_size": req, "state": "active_allocated",
			"history": []any{map[string]any{"addr": addr, "real_size": req,
				"frames": []any{sg.Frame("forward", "model.py", 10)}}}}
	}
	return &sg.Synth{
		Segments: []map[string]any{{"device": 0, "address": seg, "total_size": 20 * mib,
			"allocated_size": 6 * mib, "active_size": 6 * mib, "stream": 0, "segment_type": "large",
			"blocks": []any{block(seg, 4*mib, 4*mib), block(seg+4*mib, 2*mib, 2*mib),
				map[string]any{"size": 14 * mib, "state": "inactive"}}}},
		Traces: [][]map[string]any{{sg.Ev("free_completed", seg+6*mib, 3*mib, -1)}},
	}
}

// oneFree is the legacy call's one-entry trace in torch 2.1+'s format:
// blocks with frames, the last entry a free_completed.
func oneFree() *sg.Synth {
	s := steady(nil, nil)
	s.Traces = [][]map[string]any{{sg.Ev("free_completed", seg+6*mib, 3*mib, 101)}}
	return s
}

// TestHistoryWarnings: what each kind of trace is called, with its
// numbers: a late start, a ring buffer that wrapped (by torch's flag, a
// per-device flag, a full buffer), a one-entry trace that did not wrap.
func TestHistoryWarnings(t *testing.T) {
	lateMsg := "device 0: 7.00 MiB in 2 blocks was already live at the first recorded entry: recording began late (or the ring buffer dropped older entries: this torch records no overflow flag), so their allocations are not in the trace; 1 of them (3.00 MiB) is freed in it"
	wrapped := func(why string) string {
		return "device 0: the trace ring buffer wrapped (" + why + "): only its last 3 entries survive; 7.00 MiB in 2 blocks was live before the first of them, and whatever was allocated and freed earlier is lost; peaks are over the surviving entries only"
	}
	tests := []struct {
		name    string
		s       *sg.Synth
		kind    string
		msg     string
		wrapped bool
		max     int64
	}{
		{"late start, torch 2.11", steady(nil, nil), snapshot.WarnLateStart, lateMsg, false, 0},
		{"late start, buffer not full", steady(map[string]any{"trace_alloc_max_entries": 100}, nil), snapshot.WarnLateStart,
			"device 0: 7.00 MiB in 2 blocks was already live at the first recorded entry: recording began late, so their allocations are not in the trace; 1 of them (3.00 MiB) is freed in it", false, 100},
		{"overflow flag", steady(map[string]any{"trace_alloc_overflowed": true, "trace_alloc_max_entries": 3}, nil), snapshot.WarnWrapped,
			wrapped("allocator_settings says trace_alloc_overflowed"), true, 3},
		{"per-device flag, list", steady(map[string]any{"trace_alloc_overflowed": []any{true, false}}, nil), snapshot.WarnWrapped,
			wrapped("allocator_settings says trace_alloc_overflowed"), true, 0},
		{"per-device flag says no", steady(map[string]any{"trace_alloc_overflowed": map[string]any{"0": false, "1": true},
			"trace_alloc_max_entries": map[string]any{"0": 3, "1": 3}}, nil), snapshot.WarnLateStart,
			strings.Replace(lateMsg, " (or the ring buffer dropped older entries: this torch records no overflow flag)", "", 1), false, 3},
		{"buffer full", steady(map[string]any{"trace_alloc_max_entries": 3}, nil), snapshot.WarnWrapped,
			wrapped("it is full: trace_alloc_max_entries = 3"), true, 3},
		{"legacy one entry", legacy(), snapshot.WarnOneEntry,
			"device 0: the trace holds one entry (a free_completed, in torch ≈ 2.0's format: each block keeps its own history): a recording that keeps one trace entry, not a ring buffer that wrapped: the legacy call torch.cuda.memory._record_memory_history(True, …), whose trace_alloc_max_entries defaults to 1, keeps only the last; there is no timeline, only the end state: to record the history, record again with torch.cuda.memory._record_memory_history(True, trace_alloc_max_entries=100000) on torch 2.0, torch.cuda.memory._record_memory_history(max_entries=100000) on 2.1 and later", false, 0},
		// torch 2.1+'s format (blocks with frames, no history) through the
		// legacy call: its one entry, a free whose request fell out, once
		// read as a ring buffer that wrapped.
		{"legacy call, torch 2.1+ format", oneFree(), snapshot.WarnOneEntry,
			"device 0: the trace holds one entry (a free_completed): a recording that keeps one trace entry, not a ring buffer that wrapped: the legacy call torch.cuda.memory._record_memory_history(True, …), whose trace_alloc_max_entries defaults to 1, keeps only the last; there is no timeline, only the end state: to record the history, record again with torch.cuda.memory._record_memory_history(max_entries=100000)", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := replayOf(t, tt.s)
			w := find(tl.Warnings, tt.kind)
			if w == nil {
				t.Fatalf("Replay().Warnings = %q, want one of kind %s", tl.Warnings, tt.kind)
			}
			if w.Message != tt.msg {
				t.Errorf("warning %s:\n got %s\nwant %s", tt.kind, w.Message, tt.msg)
			}
			if tl.Wrapped != tt.wrapped || tl.MaxEntries != tt.max {
				t.Errorf("Wrapped, MaxEntries = %v, %d, want %v, %d", tl.Wrapped, tl.MaxEntries, tt.wrapped, tt.max)
			}
			if tt.kind == snapshot.WarnOneEntry && find(tl.Warnings, snapshot.WarnWrapped) != nil {
				t.Errorf("a one-entry trace is called wrapped: %q", tl.Warnings)
			}
		})
	}
}

func find(ws []snapshot.Warning, kind string) *snapshot.Warning {
	for i := range ws {
		if ws[i].Kind == kind {
			return &ws[i]
		}
	}
	return nil
}

// TestPeakBefore: the true peak likely predates the trace when reserved at
// the first entry is above every replayed state, or when torch's counters
// saved in the snapshot are above the replay's peaks; not otherwise.
func TestPeakBefore(t *testing.T) {
	// Three 20 MiB segments at the start; the trace frees two (empty_cache)
	// and then allocates 6 MiB: 60 MiB reserved before, 40 MiB at most after.
	released := &sg.Synth{
		Segments: []map[string]any{sg.Seg(seg, sg.Blk(6*mib, 6*mib, "active_allocated"), sg.Blk(14*mib, 0, "inactive"))},
		Traces: [][]map[string]any{{
			sg.Ev("segment_free", seg+100*mib, 20*mib, 10),
			sg.Ev("segment_free", seg+200*mib, 20*mib, 11),
			sg.Ev("alloc", seg, 6*mib, 12),
		}},
	}
	tl := replayOf(t, released)
	if tl.Start.Reserved != 60*mib || tl.PeakReserved.Bytes != 60*mib || tl.PeakAllocated.Bytes != 6*mib {
		t.Fatalf("start reserved %d, peaks reserved %d allocated %d; want 60, 60, 6 MiB", tl.Start.Reserved, tl.PeakReserved.Bytes, tl.PeakAllocated.Bytes)
	}
	want := "device 0: the true peak likely predates the recording: 60.00 MiB was reserved at the first recorded entry, more than at any moment the trace replays (its peaks: 6.00 MiB allocated, 40.00 MiB reserved after the first entry); the allocator had reserved it for requests made before recording began"
	if w := find(tl.Warnings, snapshot.WarnPeakBefore); w == nil || w.Message != want {
		t.Errorf("peak-before warning = %v, want %s", w, want)
	}

	// torch's counters, flat and nested: allocated peaked at 9 MiB, above
	// the replay's 7 MiB (the steady trace: 4 + 3 MiB at its start).
	for name, stats := range map[string]map[string]any{
		"flat":   {"allocated_bytes.all.peak": 9 * mib, "reserved_bytes.all.peak": 20 * mib},
		"nested": {"allocated_bytes": map[string]any{"all": map[string]any{"peak": 9 * mib}}},
		"device": {"0": map[string]any{"allocated_bytes.all.peak": 9 * mib}},
	} {
		tl := replayOf(t, steady(nil, map[string]any{"memory_stats": stats}))
		want := "device 0: the true peak predates the recording: torch's own counters in the snapshot (memory_stats) say peak allocated 9.00 MiB (allocated_bytes.all.peak), 2.00 MiB above the replay's 7.00 MiB"
		if w := find(tl.Warnings, snapshot.WarnPeakBefore); w == nil || w.Message != want {
			t.Errorf("%s memory_stats: peak-before warning = %v, want %s", name, w, want)
		}
	}
	// The same counters equal to the replay's peaks, and a pool that only
	// grows: no warning.
	for name, s := range map[string]*sg.Synth{
		"counters agree": steady(nil, map[string]any{"memory_stats": map[string]any{"allocated_bytes.all.peak": 7 * mib}}),
		"pool grows":     steady(nil, nil),
	} {
		if w := find(replayOf(t, s).Warnings, snapshot.WarnPeakBefore); w != nil {
			t.Errorf("%s: unexpected %s", name, w.Message)
		}
	}
}

// TestUntimedNPU: a torch_npu snapshot — no time_us, blocks rounded to
// round512(request + 32) — is replayed with that rounding (its peak is
// the segments' block bytes) and says both; a CUDA snapshot whose blocks
// disagree with its trace has the first disagreement explained in bytes.
func TestUntimedNPU(t *testing.T) {
	npu := &sg.Synth{
		Segments: []map[string]any{sg.Seg(seg, sg.Blk(1536, 1000, "active_allocated"),
			sg.Blk(4096, 3560, "active_allocated"), sg.Blk(2*mib-5632, 0, "inactive"))},
		Traces: [][]map[string]any{{
			sg.Ev("segment_alloc", seg, 2*mib, -1),
			sg.Ev("alloc", seg, 1000, -1),
			sg.Ev("alloc", seg+1536, 3560, -1),
		}},
	}
	tl := replayOf(t, npu)
	if !tl.NPURounding || tl.Timed {
		t.Errorf("NPURounding, Timed = %v, %v, want true, false", tl.NPURounding, tl.Timed)
	}
	// CUDA's rounding would give 1024 + 3584 B.
	if tl.PeakAllocated.Bytes != 1536+4096 || tl.End.Requested != 4560 {
		t.Errorf("peak allocated %d, end requested %d, want %d, 4560", tl.PeakAllocated.Bytes, tl.End.Requested, 1536+4096)
	}
	kinds := []string{}
	for _, w := range tl.Warnings {
		kinds = append(kinds, w.Kind)
	}
	if strings.Join(kinds, " ") != snapshot.WarnUntimed+" "+snapshot.WarnNPURounding {
		t.Errorf("warnings %q, want untimed and npu-rounding only", tl.Warnings)
	}

	// One block fits torch_npu's rounding, one CUDA's: not NPU, and the
	// first mismatch is explained.
	mixed := &sg.Synth{
		Segments: []map[string]any{sg.Seg(seg, sg.Blk(1536, 1000, "active_allocated"),
			sg.Blk(1024, 1000, "active_allocated"), sg.Blk(2*mib-2560, 0, "inactive"))},
		Traces: [][]map[string]any{{
			sg.Ev("segment_alloc", seg, 2*mib, 1),
			sg.Ev("alloc", seg, 1000, 2),
			sg.Ev("alloc", seg+1536, 1000, 3),
		}},
	}
	tl = replayOf(t, mixed)
	want := "device 0: 1 block differs in size between the trace and the segments (-512 B in all): block 0x7f0000000000 is 1536 B in the segments but the trace's alloc rounds 1000 B to 1024 B"
	if tl.NPURounding || len(tl.Warnings) != 1 || tl.Warnings[0].Message != want {
		t.Errorf("NPURounding %v, warnings %q, want false and\n%s", tl.NPURounding, tl.Warnings, want)
	}
}

// TestContradiction: a random snapshot whose trace contradicts its
// segments gets one warning saying so, and no number goes negative.
func TestContradiction(t *testing.T) {
	random := &sg.Synth{
		Segments: []map[string]any{sg.Seg(seg, sg.Blk(4*mib, 4*mib, "active_allocated"), sg.Blk(16*mib, 0, "inactive"))},
		Traces: [][]map[string]any{{
			sg.Ev("alloc", 0x10, -100, 1),
			sg.Ev("alloc", 0x5000000, 40*mib, 2),
			sg.Ev("free_completed", 0x9999, 30, 3),
			sg.Ev("alloc", 0x5000000, 40*mib, 4),
			sg.Ev("segment_free", 0x123, -5, 5),
			sg.Ev("oom", 1<<30, -7, 6),
		}},
	}
	tl := replayOf(t, random)
	if len(tl.Warnings) != 1 || tl.Warnings[0].Kind != snapshot.WarnContradiction {
		t.Fatalf("Replay().Warnings = %q, want one contradiction", tl.Warnings)
	}
	want := "device 0: the trace contradicts the snapshot's own segments, so the numbers replayed from it may be wrong: 3 entries with a negative size or an impossible address range skipped; 1 allocation at an address already in use; 2 allocations fitting in no free space of a reserved segment (sized by the rounded request); 2 entries or blocks the end state cannot follow from; allocated exceeds reserved in 5 states (first at event 1: 44.00 MiB allocated, 20.00 MiB reserved); the replay ends with 1 block other than the segments' (0 missing, 1 extra, 0 in another state)"
	if got := tl.Warnings[0].Message; got != want {
		t.Errorf("warning:\n got %s\nwant %s", got, want)
	}
	if len(tl.OOMs) != 0 {
		t.Errorf("OOMs = %v, want none (its size is negative)", tl.OOMs)
	}
	for _, n := range []snapshot.Numbers{tl.Start, tl.End} {
		if n.Requested < 0 || n.Allocated < 0 || n.Active < 0 || n.Reserved < 0 {
			t.Errorf("negative numbers %+v", n)
		}
	}
	if tl.End.Reserved != 20*mib {
		t.Errorf("end reserved = %d, want 20 MiB (the bad segment_free skipped)", tl.End.Reserved)
	}
}
