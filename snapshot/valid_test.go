package snapshot

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/pickle"
)

// checkAllValid fails t unless s passes CheckValid and so does the replay
// of each of its devices (and of device 0, which the analyses replay when
// a snapshot has no device), with and without series and lifetimes.
func checkAllValid(t testing.TB, s *Snapshot) {
	t.Helper()
	if err := s.CheckValid(); err != nil {
		t.Fatalf("%s: Snapshot.CheckValid: %v", s.Source, err)
	}
	devs := s.Devices()
	if len(devs) == 0 || devs[0] != 0 {
		devs = append([]int{0}, devs...)
	}
	for _, d := range devs {
		for _, opt := range []ReplayOptions{{}, {Series: true, Lifetimes: true}} {
			if err := Replay(s, d, opt).CheckValid(); err != nil {
				t.Fatalf("%s: Replay(device %d, %+v).CheckValid: %v", s.Source, d, opt, err)
			}
		}
	}
}

// TestCheckValidFiles: every test file and fixture, and the valid part of
// each cut short at a tenth of its length, pass.
func TestCheckValidFiles(t *testing.T) {
	for _, path := range append(differentialFiles(t), "testdata/snap.json", "testdata/snap_p4.pickle.gz", "testdata/snap_trace_plot.html") {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{len(data), len(data) * 9 / 10, len(data) / 2} {
			s, err := Decode(bytes.NewReader(data[:n]), path)
			if s == nil {
				if n == len(data) {
					t.Fatalf("%s: %v", path, err)
				}
				continue
			}
			checkAllValid(t, s)
		}
	}
}

// validSnap returns a small snapshot that passes: one segment of three
// blocks, the first live before recording began, the second allocated in
// the trace, the third allocated and freed in it.
func validSnap() *Snapshot {
	st := NewStacks()
	stack := st.InternStack([]FrameID{st.InternFrame(Frame{Name: "f", Filename: "m.py", Line: 3})})
	strs := NewStrings()
	ctx := strs.Intern("ctx")
	return &Snapshot{
		Source: "valid",
		Segments: []Segment{{Address: 0x1000, TotalSize: 8192, Small: true, Stack: stack, Blocks: []Block{
			{Address: 0x1000, Size: 1024, RequestedSize: 1000, State: BlockActiveAllocated, Stack: stack},
			{Address: 0x1400, Size: 1024, RequestedSize: 1000, State: BlockActiveAllocated, Stack: stack},
			{Address: 0x1800, Size: 6144, State: BlockInactive},
		}}},
		Traces: [][]Event{{
			{Action: ActionAlloc, Addr: 0x1400, Size: 1000, TimeUS: 10, Stack: stack, CompileContext: ctx},
			{Action: ActionAlloc, Addr: 0x1800, Size: 1000, TimeUS: 11, Stack: stack},
			{Action: ActionFreeRequested, Addr: 0x1800, Size: 1000, TimeUS: 12},
			{Action: ActionFreeCompleted, Addr: 0x1800, Size: 1000, TimeUS: 13},
		}},
		HasTraces:   true,
		Annotations: []Annotation{{Start: true, Name: "step", Device: 0, TimeUS: 10}},
		Stacks:      st,
		Strings:     strs,
	}
}

// TestSnapshotCheckValid breaks one invariant at a time and checks that
// the error names it.
func TestSnapshotCheckValid(t *testing.T) {
	if err := validSnap().CheckValid(); err != nil {
		t.Fatalf("CheckValid() = %v on the valid snapshot", err)
	}
	blocks := func(s *Snapshot) []Block { return s.Segments[0].Blocks }
	for _, tc := range []struct {
		name    string
		breakIt func(s *Snapshot)
		want    string
	}{
		{"negative device", func(s *Snapshot) { s.Segments[0].Device = -1 }, "segment 0 (address 0x1000): device -1 out of range"},
		{"device past the bound", func(s *Snapshot) { s.Segments[0].Device = maxDevice }, "segment 0 (address 0x1000): device 1048576 out of range"},
		{"device not among Devices", func(s *Snapshot) { s.Devices(); s.Segments[0].Device = 1 }, "segment 0 (address 0x1000): device 1 is not among Devices() [0]"},
		{"address 0", func(s *Snapshot) { s.Segments[0].Address = 0 }, "segment 0 (address 0x0): address 0"},
		{"negative total_size", func(s *Snapshot) { s.Segments[0].TotalSize = -1 }, "segment 0 (address 0x1000): total_size -1 out of range"},
		{"segment stack", func(s *Snapshot) { s.Segments[0].Stack = 2 }, "segment 0 (address 0x1000): stack 2 out of range (2 stacks)"},
		{"segment size", func(s *Snapshot) { s.Segments[0].AllocatedSize = maxSize + 1 }, "segment 0 (address 0x1000): a size of 281474976710657 is out of range"},
		{"negative block size", func(s *Snapshot) { blocks(s)[2].Size = -1 }, "segment 0 (address 0x1000): block 2: size -1"},
		{"block before the segment", func(s *Snapshot) { blocks(s)[0].Address = 0x800 }, "block 0 at 0x800 starts before the segment"},
		{"overlapping blocks", func(s *Snapshot) { blocks(s)[1].Address = 0x1200 }, "block 1 at 0x1200 starts before block 0 ends (0x1400)"},
		{"unsorted blocks", func(s *Snapshot) { b := blocks(s); b[0], b[1] = b[1], b[0] }, "block 1 at 0x1000 starts before block 0 ends (0x1800)"},
		{"block past the segment", func(s *Snapshot) { blocks(s)[2].Size = 6145 }, "block 2 [0x1800, 0x3001) ends past the segment's end 0x3000"},
		{"block state", func(s *Snapshot) { blocks(s)[1].State = 9 }, "block 1: state 9 is not a BlockState"},
		{"block stack", func(s *Snapshot) { blocks(s)[1].Stack = 7 }, "block 1: stack 7 out of range (2 stacks)"},
		{"segment index", func(s *Snapshot) { s.Devices(); s.devIndex.segs[0] = 5 }, "SegmentsOf(0) holds segment 5, not one of device 0"},
		{"traces without HasTraces", func(s *Snapshot) { s.HasTraces = false }, "1 device traces, but HasTraces is false"},
		{"too many traces", func(s *Snapshot) { s.Traces = make([][]Event, maxDevice+1) }, "1048577 device traces, more than the 1048576 device indexes"},
		{"event action", func(s *Snapshot) { s.Traces[0][1].Action = 200 }, "device_traces[0][1] (unknown): action 200 is not an Action"},
		{"event stack", func(s *Snapshot) { s.Traces[0][2].Stack = 5 }, "device_traces[0][2] (free_requested): stack 5 out of range (2 stacks)"},
		{"event string", func(s *Snapshot) { s.Traces[0][0].UserMetadata = 2 }, "device_traces[0][0] (alloc): compile_context 1 or user_metadata 2 out of range (2 strings)"},
		{"event addr 0", func(s *Snapshot) { s.Traces[0][3].Addr = 0 }, "device_traces[0][3] (free_completed): addr 0"},
		{"event size", func(s *Snapshot) { s.Traces[0][3].Size = -maxSize - 1 }, "device_traces[0][3] (free_completed): size -281474976710657 out of range"},
		{"sizes past maxTotal", func(s *Snapshot) {
			for i := range maxTotal / maxSize {
				s.Traces[0] = append(s.Traces[0], Event{Action: ActionSegmentFree, Addr: uint64(i+1) << 48, Size: maxSize})
			}
		}, "device_traces[0][4099] (segment_free): device 0's sizes add up past 1152921504606846976"},
		{"segments past maxTotal", func(s *Snapshot) {
			for i := range maxTotal / maxSize {
				s.Segments = append(s.Segments, Segment{Address: uint64(i+1) << 48, TotalSize: maxSize})
			}
		}, "segment 4096 (address 0x1000000000000000): device 0's segments' total_size and requested_size add up past 1152921504606846976"},
		{"annotation device", func(s *Snapshot) { s.Annotations[0].Device = -2 }, "annotation 0 (\"step\"): device -2 out of range"},
		{"stack frame ID", func(s *Snapshot) { s.Stacks.InternStack([]FrameID{3}) }, "stack table: frame ID 3 (at 1) out of range (1 frames)"},
		{"stack offsets", func(s *Snapshot) { s.Stacks.offsets[1] = 1 }, "stack table: stack 0 is not the empty stack"},
		{"no tables", func(s *Snapshot) { s.Stacks = nil }, "no stack table or string table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validSnap()
			tc.breakIt(s)
			err := s.CheckValid()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckValid() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestTimelineCheckValid breaks one invariant of a replay at a time and
// checks that the error names it.
func TestTimelineCheckValid(t *testing.T) {
	replay := func() (*Snapshot, *Timeline) {
		s := validSnap()
		return s, Replay(s, 0, ReplayOptions{Series: true, Lifetimes: true})
	}
	s, tl := replay()
	if err := s.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if err := tl.CheckValid(); err != nil {
		t.Fatalf("CheckValid() = %v on the valid timeline", err)
	}
	if len(tl.Initial) != 1 || tl.PeakAllocated != (Peak{3072, 1, 11}) || tl.Death[1] != 2 {
		t.Fatalf("the valid timeline is not the one the cases break: Initial %d blocks, PeakAllocated %+v, Death %v", len(tl.Initial), tl.PeakAllocated, tl.Death)
	}
	for _, tc := range []struct {
		name    string
		breakIt func(s *Snapshot, tl *Timeline)
		want    string
	}{
		{"not made by Replay", func(s *Snapshot, tl *Timeline) { tl.snap = nil }, "timeline: not made by Replay"},
		{"events not the trace", func(s *Snapshot, tl *Timeline) { tl.Events = tl.Events[:2] }, "device 0: Events (2) are not the device's trace (4 entries)"},
		{"initial unsorted", func(s *Snapshot, tl *Timeline) { tl.Initial = append(tl.Initial, tl.Initial[0]) }, "device 0: initial block 1 at 0x1000: not after block 0 at 0x1000"},
		{"initial alloc index", func(s *Snapshot, tl *Timeline) { tl.Initial[0].AllocIndex = 2 }, "initial block 0 at 0x1000: AllocIndex 2, want -1"},
		{"initial negative", func(s *Snapshot, tl *Timeline) { tl.Initial[0].Requested = -1 }, "initial block 0 at 0x1000: size 1024, requested -1: negative"},
		{"start", func(s *Snapshot, tl *Timeline) { tl.Start.Reserved++ }, "device 0: Start = {Requested:1000 Allocated:1024 Active:1024 Reserved:8193}, but the blocks live"},
		{"peak index", func(s *Snapshot, tl *Timeline) { tl.PeakActive.Index = 4 }, "device 0: PeakActive = {Bytes:3072 Index:4 TimeUS:11}: event index out of range [-1, 4)"},
		{"peak not the maximum", func(s *Snapshot, tl *Timeline) { tl.PeakAllocated.Bytes-- }, "PeakAllocated = {Bytes:3071 Index:1 TimeUS:11}, want {Bytes:3072 Index:1 TimeUS:11}"},
		{"peak not the first", func(s *Snapshot, tl *Timeline) { tl.PeakReserved = Peak{8192, 3, 13} }, "PeakReserved = {Bytes:8192 Index:3 TimeUS:13}, want {Bytes:8192 Index:-1 TimeUS:0}"},
		{"points", func(s *Snapshot, tl *Timeline) { tl.Points[2].Active++ }, "device 0: point 2 = "},
		{"points length", func(s *Snapshot, tl *Timeline) { tl.Points = tl.Points[:3] }, "device 0: 3 points for 4 events"},
		{"trace changed", func(s *Snapshot, tl *Timeline) { s.Traces[0][1].Size = 2000 }, "device 0: point 1 = "},
		{"end", func(s *Snapshot, tl *Timeline) { tl.End.Requested-- }, "device 0: End = {Requested:1999 Allocated:2048 Active:2048 Reserved:8192}, the state after the last event is"},
		{"end and final state", func(s *Snapshot, tl *Timeline) { j, _ := tl.final.live.Get(0x1000); tl.final.release(0x1000, j) }, "End = {Requested:2000 Allocated:2048 Active:2048 Reserved:8192}, but the blocks live and the ranges reserved after the last event add up to {Requested:1000 Allocated:1024 Active:1024 Reserved:8192}"},
		{"ooms", func(s *Snapshot, tl *Timeline) { tl.OOMs = []int{1} }, "device 0: 1 OOMs, the trace has 0 oom events"},
		{"oom states", func(s *Snapshot, tl *Timeline) { tl.OOMStates = []Numbers{{}} }, "device 0: 1 OOM states for 0 OOMs"},
		{"death", func(s *Snapshot, tl *Timeline) { tl.Death[0] = 0 }, "device 0: Death[0] = 0: not -1, nor a later free of an alloc"},
		{"death length", func(s *Snapshot, tl *Timeline) { tl.Death = tl.Death[:1] }, "device 0: 1 deaths for 4 events"},
		{"predeath", func(s *Snapshot, tl *Timeline) { tl.PreDeath[0x1000] = 1 }, "device 0: PreDeath[0x1000] = 1: not a free event"},
		{"warning device", func(s *Snapshot, tl *Timeline) { tl.Warnings = append(tl.Warnings, Warning{Device: 3, Message: "x"}) }, "is about device 3: x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, tl := replay()
			tc.breakIt(s, tl)
			err := tl.CheckValid()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckValid() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestDecodeRejectsInvalid: the values checkValues rejects so that
// CheckValid holds for every snapshot Decode returns (the fuzzer found
// blocks past their segment's total_size): sizes whose sums could overflow
// the replay's numbers, blocks past total_size, and more device traces than
// device indexes.
func TestDecodeRejectsInvalid(t *testing.T) {
	blocksPast := pickleOf(t, func(w *pickle.Writer) { // {"segments": [{…, "total_size": 4096, "blocks": [{"size": 8192, …}]}]}
		w.Raw(pickle.EmptyDict)
		w.String("segments")
		w.Raw(pickle.EmptyList, pickle.EmptyDict, pickle.Mark)
		w.String("device")
		w.Int(0)
		w.String("address")
		w.Int(1 << 30)
		w.String("total_size")
		w.Int(4096)
		w.String("blocks")
		w.Raw(pickle.EmptyList, pickle.EmptyDict, pickle.Mark)
		w.String("size")
		w.Int(8192)
		w.String("requested_size")
		w.Int(8000)
		w.String("state")
		w.String("active_allocated")
		w.Raw(pickle.SetItems, pickle.Append, pickle.SetItems, pickle.Append, pickle.SetItem)
	})
	manyDevices := pickleOf(t, func(w *pickle.Writer) { // {"segments": [], "device_traces": [[]] * (maxDevice+1)}
		w.Raw(pickle.EmptyDict, pickle.Mark)
		w.String("segments")
		w.Raw(pickle.EmptyList)
		w.String("device_traces")
		w.Raw(pickle.EmptyList, pickle.Mark)
		for range maxDevice + 1 {
			w.Raw(pickle.EmptyList)
		}
		w.Raw(pickle.Appends, pickle.SetItems)
	})
	hugeSegments := pickleOf(t, func(w *pickle.Writer) { // 4097 entries of 2^48 bytes: past maxTotal
		w.Raw(pickle.EmptyDict, pickle.Mark)
		w.String("segments")
		w.Raw(pickle.EmptyList)
		w.String("device_traces")
		w.Raw(pickle.EmptyList, pickle.EmptyList, pickle.Mark)
		for i := range maxTotal/maxSize + 1 {
			w.Raw(pickle.EmptyDict, pickle.Mark)
			w.String("action")
			w.String("segment_alloc")
			w.String("addr")
			w.Int(int64(i+1) << 48)
			w.String("size")
			w.Int(maxSize)
			w.Raw(pickle.SetItems)
		}
		w.Raw(pickle.Appends, pickle.Append, pickle.SetItems)
	})
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"sizes past maxTotal", hugeSegments, "decoding bad.pickle: device_traces[0][4096] (segment_alloc): the sizes of the device's entries up to it, " +
			"with its segments' total_size and requested_size, add up past 1152921504606846976"},
		{"blocks past total_size", blocksPast, "decoding bad.pickle: segment 0 (address 0x40000000): its blocks' sizes add up to 8192, past its total_size 4096"},
		{"more traces than devices", manyDevices, "decoding bad.pickle: device_traces[1048576]: past the last device index 1048575 (1048577 device lists)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A budget above the default: a million empty device lists in
			// 1 MB are past the default budget before they reach the check.
			s, err := DecodeWith(bytes.NewReader(tc.data), "bad.pickle", Options{MaxMemory: 1 << 30})
			if s != nil || err == nil || err.Error() != tc.want {
				t.Errorf("Decode() = %v, %v; want nil, %q", s != nil, err, tc.want)
			}
		})
	}
}

// TestOversizeRun: past max_split_size, a free run more than kLargeBuffer
// longer than the request is not the block torch handed out (it hands out
// an oversize block only below that), so the rounded request stands in,
// estimated; below, the block is the whole run. 2^15 such allocations at
// rising addresses in one segment of 2^48 bytes, each of which once took
// the rest of the segment, no longer overflow allocated.
func TestOversizeRun(t *testing.T) {
	const mib = 1 << 20
	snap := func(n int, step uint64, req int64) *Snapshot {
		s := validSnap()
		s.Settings = map[string]any{"max_split_size": int64(2 * mib)}
		base := uint64(1) << 40
		s.Segments = []Segment{{Address: base, TotalSize: 64 * mib, Blocks: []Block{{Address: base, Size: 64 * mib}}}}
		if n > 1 {
			s.Segments[0].TotalSize, s.Segments[0].Blocks[0].Size = maxSize, maxSize
		}
		s.Traces = [][]Event{nil}
		for i := range n {
			s.Traces[0] = append(s.Traces[0], Event{Action: ActionAlloc, Addr: base + uint64(i)*step, Size: req})
		}
		return s
	}
	for _, tc := range []struct {
		req, size int64
		estimated bool
	}{
		{30 * mib, 30 * mib, true},  // 34 MiB left: not an oversize block torch would hand out
		{50 * mib, 64 * mib, false}, // 14 MiB left: the whole run
	} {
		tl := Replay(snap(1, 0, tc.req), 0, ReplayOptions{})
		if live := tl.LiveAt(0); len(live) != 1 || live[0].Size != tc.size || live[0].Estimated != tc.estimated {
			t.Errorf("alloc of %d B in a free run of 64 MiB: live %+v, want size %d, estimated %v", tc.req, live, tc.size, tc.estimated)
		}
	}
	s := snap(1<<15, 4*mib, 4*mib)
	checkAllValid(t, s)
	if tl := Replay(s, 0, ReplayOptions{}); tl.End.Allocated != 1<<15*4*mib {
		t.Errorf("End.Allocated = %d, want %d", tl.End.Allocated, 1<<15*4*mib)
	}
}
