package allocator

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/snapshot"
)

// The what-if fixtures: each workload ran once per setting, each in a fresh
// process (fixtures/whatif-*/README.md).
var (
	whatIfWorkloads = []string{"varlen", "fragoom", "sidestream"}
	whatIfSettings  = []string{"default", "expandable", "maxsplit128", "gc06", "pow2div4"}
)

// whatIfMiss is a pair (workload, recorded setting, target setting) whose
// what-if misses torch's measurement, with the cause.
type whatIfMiss struct{ cause string }

// Causes of the expected misses.
const (
	// The side stream's record_stream frees complete when the GPU is done
	// (process_events polls at each malloc), so their free_completed lands
	// at other places in other runs: the maxsplit128 and pow2div4 runs saw
	// the 12 MiB block's free complete 22 entries earlier than the default,
	// expandable and gc06 runs, early enough to be reused, and made one
	// 20 MiB segment fewer. The allocs are the same in all five runs
	// (sizes and streams); only the completion places differ. A what-if
	// keeps the recorded places (ALLOCATOR.md §3.11 item 3).
	causeEvents = "event completion: the record_stream frees completed at other places in the target's run"
)

var whatIfMisses = map[string]whatIfMiss{
	"sidestream default maxsplit128":    {causeEvents},
	"sidestream default pow2div4":       {causeEvents},
	"sidestream expandable maxsplit128": {causeEvents},
	"sidestream expandable pow2div4":    {causeEvents},
	"sidestream gc06 maxsplit128":       {causeEvents},
	"sidestream gc06 pow2div4":          {causeEvents},
	"sidestream maxsplit128 default":    {causeEvents},
	"sidestream maxsplit128 expandable": {causeEvents},
	"sidestream maxsplit128 gc06":       {causeEvents},
	"sidestream pow2div4 default":       {causeEvents},
	"sidestream pow2div4 expandable":    {causeEvents},
	"sidestream pow2div4 gc06":          {causeEvents},
}

// TestWhatIfTruth runs, for every workload and every pair of settings
// (recorded A, target B), WhatIf on A's snapshot under B's
// PYTORCH_CUDA_ALLOC_CONF with A's cap, and compares with what torch
// measured in B's run: peak reserved within 2% and the OOM outcome, and,
// where the what-if is within 2%, the segments' peak and the retries too.
// The pairs of whatIfMisses must miss (so that a fix shows), for the
// cause given. Predicted against measured (peak reserved, bytes; OOM
// predicted/measured):
//
// workload   recorded    target            predicted      measured   error  OOM
// varlen     default     default        2009071616    2009071616   0.00%  no/no
// varlen     default     expandable     1535115264    1535115264   0.00%  no/no
// varlen     default     maxsplit128    2009071616    2009071616   0.00%  no/no
// varlen     default     gc06           2009071616    2009071616   0.00%  no/no
// varlen     default     pow2div4       2088763392    2088763392   0.00%  no/no
// varlen     expandable  default        2009071616    2009071616   0.00%  no/no
// varlen     expandable  expandable     1535115264    1535115264   0.00%  no/no
// varlen     expandable  maxsplit128    2009071616    2009071616   0.00%  no/no
// varlen     expandable  gc06           2009071616    2009071616   0.00%  no/no
// varlen     expandable  pow2div4       2088763392    2088763392   0.00%  no/no
// varlen     maxsplit128 default        2009071616    2009071616   0.00%  no/no
// varlen     maxsplit128 expandable     1535115264    1535115264   0.00%  no/no
// varlen     maxsplit128 maxsplit128    2009071616    2009071616   0.00%  no/no
// varlen     maxsplit128 gc06           2009071616    2009071616   0.00%  no/no
// varlen     maxsplit128 pow2div4       2088763392    2088763392   0.00%  no/no
// varlen     gc06        default        2009071616    2009071616   0.00%  no/no
// varlen     gc06        expandable     1535115264    1535115264   0.00%  no/no
// varlen     gc06        maxsplit128    2009071616    2009071616   0.00%  no/no
// varlen     gc06        gc06           2009071616    2009071616   0.00%  no/no
// varlen     gc06        pow2div4       2088763392    2088763392   0.00%  no/no
// varlen     pow2div4    default        2009071616    2009071616   0.00%  no/no
// varlen     pow2div4    expandable     1535115264    1535115264   0.00%  no/no
// varlen     pow2div4    maxsplit128    2009071616    2009071616   0.00%  no/no
// varlen     pow2div4    gc06           2009071616    2009071616   0.00%  no/no
// varlen     pow2div4    pow2div4       2088763392    2088763392   0.00%  no/no
// fragoom    default     default        1073741824    1073741824   0.00%  yes/yes
// fragoom    default     expandable     1090519040    1090519040   0.00%  no/no
// fragoom    default     maxsplit128    1216348160    1216348160   0.00%  no/no
// fragoom    default     gc06           1073741824    1073741824   0.00%  no/no
// fragoom    default     pow2div4       1073741824    1073741824   0.00%  yes/yes
// fragoom    expandable  default        1073741824    1073741824   0.00%  yes/yes
// fragoom    expandable  expandable     1090519040    1090519040   0.00%  no/no
// fragoom    expandable  maxsplit128    1216348160    1216348160   0.00%  no/no
// fragoom    expandable  gc06           1073741824    1073741824   0.00%  no/no
// fragoom    expandable  pow2div4       1073741824    1073741824   0.00%  yes/yes
// fragoom    maxsplit128 default        1073741824    1073741824   0.00%  yes/yes
// fragoom    maxsplit128 expandable     1090519040    1090519040   0.00%  no/no
// fragoom    maxsplit128 maxsplit128    1216348160    1216348160   0.00%  no/no
// fragoom    maxsplit128 gc06           1073741824    1073741824   0.00%  no/no
// fragoom    maxsplit128 pow2div4       1073741824    1073741824   0.00%  yes/yes
// fragoom    gc06        default        1073741824    1073741824   0.00%  yes/yes
// fragoom    gc06        expandable     1090519040    1090519040   0.00%  no/no
// fragoom    gc06        maxsplit128    1216348160    1216348160   0.00%  no/no
// fragoom    gc06        gc06           1073741824    1073741824   0.00%  no/no
// fragoom    gc06        pow2div4       1073741824    1073741824   0.00%  yes/yes
// fragoom    pow2div4    default        1073741824    1073741824   0.00%  yes/yes
// fragoom    pow2div4    expandable     1090519040    1090519040   0.00%  no/no
// fragoom    pow2div4    maxsplit128    1224736768    1216348160   0.69%  no/no
// fragoom    pow2div4    gc06           1073741824    1073741824   0.00%  no/no
// fragoom    pow2div4    pow2div4       1073741824    1073741824   0.00%  yes/yes
// sidestream default     default         165675008     165675008   0.00%  no/no
// sidestream default     expandable      192937984     192937984   0.00%  no/no
// sidestream default     maxsplit128     165675008     144703488  14.49%  no/no
// sidestream default     gc06            165675008     165675008   0.00%  no/no
// sidestream default     pow2div4        169869312     148897792  14.08%  no/no
// sidestream expandable  default         165675008     165675008   0.00%  no/no
// sidestream expandable  expandable      192937984     192937984   0.00%  no/no
// sidestream expandable  maxsplit128     165675008     144703488  14.49%  no/no
// sidestream expandable  gc06            165675008     165675008   0.00%  no/no
// sidestream expandable  pow2div4        169869312     148897792  14.08%  no/no
// sidestream maxsplit128 default         144703488     165675008 -12.66%  no/no
// sidestream maxsplit128 expandable      171966464     192937984 -10.87%  no/no
// sidestream maxsplit128 maxsplit128     144703488     144703488   0.00%  no/no
// sidestream maxsplit128 gc06            144703488     165675008 -12.66%  no/no
// sidestream maxsplit128 pow2div4        148897792     148897792   0.00%  no/no
// sidestream gc06        default         165675008     165675008   0.00%  no/no
// sidestream gc06        expandable      192937984     192937984   0.00%  no/no
// sidestream gc06        maxsplit128     165675008     144703488  14.49%  no/no
// sidestream gc06        gc06            165675008     165675008   0.00%  no/no
// sidestream gc06        pow2div4        169869312     148897792  14.08%  no/no
// sidestream pow2div4    default         144703488     165675008 -12.66%  no/no
// sidestream pow2div4    expandable      171966464     192937984 -10.87%  no/no
// sidestream pow2div4    maxsplit128     144703488     144703488   0.00%  no/no
// sidestream pow2div4    gc06            144703488     165675008 -12.66%  no/no
// sidestream pow2div4    pow2div4        148897792     148897792   0.00%  no/no
func TestWhatIfTruth(t *testing.T) {
	for _, wl := range whatIfWorkloads {
		dir := filepath.Join("../fixtures", "whatif-"+wl)
		truths := settingTruths(t, dir)
		ooms := map[string]int64{} // each run's oom size
		for _, name := range whatIfSettings {
			s, err := snapshot.Open(filepath.Join(dir, name, "snapshot.pickle"))
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range s.Traces[0] {
				if ev.Action == snapshot.ActionOOM {
					ooms[name] = ev.Size
				}
			}
		}
		for _, a := range whatIfSettings {
			s, err := snapshot.Open(filepath.Join(dir, a, "snapshot.pickle"))
			if err != nil {
				t.Fatal(err)
			}
			ta := truths[a]
			for _, b := range whatIfSettings {
				tb := truths[b]
				key := strings.Join([]string{wl, a, b}, " ")
				set, err := ParseConf(tb.AllocConf)
				if err != nil {
					t.Fatal(err)
				}
				o, err := WhatIf(s, 0, set, WhatIfOptions{DeviceTotal: ta.DeviceTotal, MemoryFraction: ta.CapFraction})
				if err != nil {
					t.Fatalf("WhatIf(%s): %v", key, err)
				}
				st := tb.MemoryStatsEnd
				want := st["reserved_bytes.all.peak"]
				errPct := 100 * float64(o.PeakReserved-want) / float64(want)
				ok := errPct >= -2 && errPct <= 2
				oomWant := st["num_ooms"] > 0
				t.Logf("%-10s %-11s %-11s %13d %13d %6.2f%%  %s/%s", wl, a, b, o.PeakReserved, want, errPct, yesNo(o.OOM != nil), yesNo(oomWant))
				if (o.OOM != nil) != oomWant {
					t.Errorf("WhatIf(%s) OOM = %v, want %v (torch's num_ooms %d)", key, o.OOM != nil, oomWant, st["num_ooms"])
				}
				if o.Window || o.Unmatched != 0 || (o.OOM == nil && o.Requests != o.Total) {
					t.Errorf("WhatIf(%s): window %v, %d unmatched frees, %d of %d requests", key, o.Window, o.Unmatched, o.Requests, o.Total)
				}
				// Both out of memory: of the size torch's oom entry gives
				// (rounded under B), unless A's oom entry already rounded
				// it up (224 MiB under pow2div4 for 200 MiB: Outcome.OOMRequests).
				if o.OOM != nil && oomWant && !(a == "pow2div4" && b != a) {
					if got, want := set.RoundSize(o.OOM.Size), ooms[b]; got != want {
						t.Errorf("WhatIf(%s) fails a request of %d bytes (rounded), want torch's oom of %d", key, got, want)
					}
				}
				// An oom entry holds the request rounded under A: where A
				// rounds past 512 bytes the what-if asks for the middle of
				// what A rounds to it, and the request the program made
				// (the oom of a run that rounds to 512) lies in that range.
				for _, r := range o.OOMRequests {
					if exact := ooms["default"]; exact < r.From || exact > r.Recorded || r.Used < r.From || r.Used > r.Recorded {
						t.Errorf("WhatIf(%s) oom request %+v: want a range holding the %d bytes the default run's oom asked for", key, r, exact)
					}
				}
				if got, want := len(o.OOMRequests) > 0, a == "pow2div4" && ooms[a] != 0 && ooms[a] != ooms["default"]; got != want {
					t.Errorf("WhatIf(%s) estimated the oom's request: %v, want %v (%+v)", key, got, want, o.OOMRequests)
				}
				if miss, listed := whatIfMisses[key]; listed {
					if ok {
						t.Errorf("WhatIf(%s) peak reserved = %d, within 2%% of %d; the table says it misses (%s): remove it", key, o.PeakReserved, want, miss.cause)
					}
					continue
				}
				if !ok {
					t.Errorf("WhatIf(%s) peak reserved = %d, want %d ±2%% (%.2f%%)", key, o.PeakReserved, want, errPct)
				}
				if got, want := int64(o.PeakSegments), st["segment.all.peak"]; got != want {
					t.Errorf("WhatIf(%s) peak segments = %d, want segment.all.peak %d", key, got, want)
				}
				if got, want := int64(o.Retries), st["num_alloc_retries"]; got != want {
					t.Errorf("WhatIf(%s) retries = %d, want num_alloc_retries %d", key, got, want)
				}
				// A served recorded oom ends the trace where the target's
				// run went on: the end state is not comparable.
				if len(o.ServedOOMs) == 0 {
					if got, want := o.EndReserved, st["reserved_bytes.all.current"]; got != want {
						t.Errorf("WhatIf(%s) end reserved = %d, want reserved_bytes.all.current %d", key, got, want)
					}
				}
			}
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// TestWhatIfRefuses: what the model cannot drive is refused with the
// reason: what Replay refuses, and traces recorded with skip_actions.
// (A CUDA graph's private pool is driven: TestWhatIfPrivatePool.)
func TestWhatIfRefuses(t *testing.T) {
	drop := func(act snapshot.Action) *snapshot.Snapshot {
		s := generate(t, 1)
		evs := s.Traces[0][:0:0]
		for _, ev := range s.Traces[0] {
			if ev.Action != act {
				evs = append(evs, ev)
			}
		}
		s.Traces[0] = evs
		return s
	}
	legacy, err := snapshot.Open("../snapshot/testdata/legacy.pickle")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		s    *snapshot.Snapshot
		conf string
		want string
	}{
		{"no allocs", drop(snapshot.ActionAlloc), "", "leaving allocs out"},
		{"no free_requested", drop(snapshot.ActionFreeRequested), "", "no free_requested"},
		{"no free_completed", drop(snapshot.ActionFreeCompleted), "", "no free_completed"},
		{"legacy", legacy, "", "torch ≤ 2.0"},
		{"async", generate(t, 1), "backend:cudaMallocAsync", "cudaMallocAsync"},
	} {
		set, err := ParseConf(c.conf)
		if err != nil {
			t.Fatal(err)
		}
		dev := 0
		if ds := c.s.Devices(); len(ds) > 0 {
			dev = ds[0]
		}
		_, err = WhatIf(c.s, dev, set, WhatIfOptions{})
		if err == nil || !errors.Is(err, ErrNotReplayable) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("WhatIf(%s) error = %v, want a refusal naming %q", c.name, err, c.want)
		}
	}
}

// wrapped returns a generated trace whose first half is lost, as a ring
// buffer that wrapped loses it.
func wrapped(t *testing.T, conf string) *snapshot.Snapshot {
	s := generateWith(t, 2, genOptions{conf: conf})
	evs := s.Traces[0]
	s.Traces[0] = evs[len(evs)/2:]
	return s
}

// TestWhatIfWindow: a recording that began late starts from the rebuilt
// state and says it covers the window only; under its own settings it
// reaches the timeline's peak of reserved.
func TestWhatIfWindow(t *testing.T) {
	s, err := snapshot.Open("../fixtures/plain-trainer-late/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	set, err := SettingsFromSnapshot(s.Settings)
	if err != nil {
		t.Fatal(err)
	}
	o, err := WhatIf(s, 0, set, WhatIfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tl := snapshot.Replay(s, 0, snapshot.ReplayOptions{})
	if !o.Window || o.PeakReserved != tl.PeakReserved.Bytes || o.OOM != nil || o.Unmatched != 0 {
		t.Errorf("WhatIf(plain-trainer-late) = window %v, peak reserved %d, OOM %v, %d unmatched; want the window, %d, no OOM, 0",
			o.Window, o.PeakReserved, o.OOM, o.Unmatched, tl.PeakReserved.Bytes)
	}
	// A ring buffer that lost its first half: the window, from the state
	// rebuilt at its first entry.
	w := wrapped(t, "")
	o, err = WhatIf(w, 0, DefaultSettings(), WhatIfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !o.Window || o.OOM != nil || o.Requests != o.Total || o.Requests == 0 {
		t.Errorf("WhatIf(wrapped) = window %v, OOM %v, %d of %d requests; want the window, every request served", o.Window, o.OOM, o.Requests, o.Total)
	}
}

// TestWhatIfCapacity: under a capacity below what the trace needs the
// what-if stops at the first request it cannot serve.
func TestWhatIfCapacity(t *testing.T) {
	s := generate(t, 2)
	set := DefaultSettings()
	free, err := WhatIf(s, 0, set, WhatIfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if free.OOM != nil || free.CapacityFrom != CapacityUnlimited {
		t.Fatalf("WhatIf(unlimited) = OOM %v from %s, want none, unlimited", free.OOM, free.CapacityFrom)
	}
	tight, err := WhatIf(s, 0, set, WhatIfOptions{Capacity: free.PeakReserved / 2})
	if err != nil {
		t.Fatal(err)
	}
	if tight.OOM == nil || tight.PeakReserved > free.PeakReserved/2 || tight.Requests >= tight.Total || tight.Retries == 0 {
		t.Errorf("WhatIf(capacity %d) = OOM %v, peak %d, %d of %d requests, %d retries; want an OOM under the capacity, after retrying",
			free.PeakReserved/2, tight.OOM, tight.PeakReserved, tight.Requests, tight.Total, tight.Retries)
	}
}

// whatIfSelfMisses are the fixtures whose what-if under their own
// settings does not reach their recorded peak of reserved, with the cause.
var whatIfSelfMisses = map[string]string{
	// Replayed with the recorded cudaMalloc addresses the what-if gives the
	// recorded peak: torch 2.11 breaks ties among equal free blocks by
	// address, and the driver placed this run's segments in an order
	// (holes of earlier reservations filled later) that the what-if's
	// downward addresses do not follow (ALLOCATOR.md §3.11 item 2): one
	// 12 MiB segment fewer.
	"fixtures/advise/train-checkpointing/snapshot.pickle": "cudaMalloc addresses steer torch 2.11's ties",
	// Recorded after the model was built and moved: the what-if starts
	// from the segments rebuilt at the first entry and misses the
	// recorded reserved peak by one segment (+12 and +16 MiB). Issue 29
	// (whatif from late starts) owns these.
	"fixtures/workloads/decode-loop/snapshot.pickle": "late start: the rebuilt start state's free blocks",
	"fixtures/workloads/lora/snapshot.pickle":        "late start: the rebuilt start state's free blocks",
}

// TestWhatIfRecorded: under its own settings, with no capacity given, the
// what-if of every fixture that replays exactly reaches the recorded peak
// of reserved and runs out of memory at the recorded oom (the capacity,
// or the cap, from the recording) — except whatIfSelfMisses.
func TestWhatIfRecorded(t *testing.T) {
	n := 0
	for _, f := range fixtureFiles(t) {
		name := rel(f)
		if _, listed := expected[name]; listed || !strings.HasPrefix(name, "fixtures/") {
			continue
		}
		s, err := snapshot.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		set, err := SettingsFromSnapshot(s.Settings)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range s.Devices() {
			tl := snapshot.Replay(s, d, snapshot.ReplayOptions{})
			o, err := WhatIf(s, d, set, WhatIfOptions{Timeline: tl})
			if err != nil {
				t.Fatalf("WhatIf(%s, %d): %v", name, d, err)
			}
			n++
			if o.Unmatched != 0 || !o.Replay.Exact() {
				t.Errorf("WhatIf(%s, %d): %d unmatched frees, replay %s", name, d, o.Unmatched, o.Replay)
			}
			wantOOM := -1
			if len(tl.OOMs) > 0 {
				wantOOM = tl.OOMs[0]
			}
			gotOOM := -1
			if o.OOM != nil {
				gotOOM = o.OOM.Index
			}
			if gotOOM != wantOOM {
				t.Errorf("WhatIf(%s, %d) OOM at event %d (capacity %d from %s), want the recorded oom's %d", name, d, gotOOM, o.Capacity, o.CapacityFrom, wantOOM)
			}
			if o.Capacity > 0 && o.Capacity < tl.PeakReserved.Bytes {
				t.Errorf("WhatIf(%s, %d) capacity %d from %s, below the recorded peak of reserved %d", name, d, o.Capacity, o.CapacityFrom, tl.PeakReserved.Bytes)
			}
			cause, miss := whatIfSelfMisses[name]
			if got, want := o.PeakReserved, tl.PeakReserved.Bytes; (got == want) == miss {
				t.Errorf("WhatIf(%s, %d) peak reserved = %d, recorded %d (listed as a miss: %v %s)", name, d, got, want, miss, cause)
			}
		}
	}
	if n < 40 {
		t.Fatalf("compared %d devices, want the 40 and more of the fixtures", n)
	}
}

// TestRecordingShared: what-ifs run from one Recording, in any order, give
// what WhatIf gives for each setting alone: the replay they share is read
// only.
func TestRecordingShared(t *testing.T) {
	s, err := snapshot.Open("../fixtures/whatif-fragoom/default/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := NewRecording(s, 0, WhatIfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	confs := []string{"expandable_segments:True", "", "max_split_size_mb:128", "roundup_power2_divisions:4", "expandable_segments:True"}
	var sets []Settings
	var alone []*Outcome
	for _, conf := range confs {
		set, err := SettingsFromSnapshot(s.Settings)
		if err != nil {
			t.Fatal(err)
		}
		if err := set.ApplyConf(conf); err != nil {
			t.Fatal(err)
		}
		got, err := rc.WhatIf(set)
		if err != nil {
			t.Fatal(err)
		}
		want, err := WhatIf(s, 0, set, WhatIfOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: from the shared recording %+v, alone %+v", conf, got, want)
		}
		sets, alone = append(sets, set), append(alone, want)
	}
	// All at once, concurrently (go test -race checks the sharing).
	outs, errs := rc.WhatIfs(sets)
	for i := range sets {
		if errs[i] != nil || !reflect.DeepEqual(outs[i], alone[i]) {
			t.Errorf("%q: WhatIfs gave %+v (%v), alone %+v", confs[i], outs[i], errs[i], alone[i])
		}
	}
}

// TestWhatIfCompletionTiming shows that the side stream's misses
// (causeEvents) come from the GPU's timing alone. A what-if takes from a
// recording the program's requests and the places where frees completed
// (and the cap, the same in all five runs). The five runs made the same
// requests: the same allocs (sizes, streams) and frees in the same order.
// So A's what-if under B's settings and B's own (exact, TestWhatIfTruth)
// differ in the completion places only. No two runs had them all at the
// same places (3 to 5 of the 98 frees moved); every miss pair is among
// those whose places differ.
func TestWhatIfCompletionTiming(t *testing.T) {
	dir := filepath.Join("../fixtures", "whatif-sidestream")
	var program0 []progEntry
	places := map[string][]int{}
	for _, name := range whatIfSettings {
		s, err := snapshot.Open(filepath.Join(dir, name, "snapshot.pickle"))
		if err != nil {
			t.Fatal(err)
		}
		prog, pl := programOf(t, s.Traces[0])
		places[name] = pl
		if program0 == nil {
			program0 = prog
		} else if !reflect.DeepEqual(prog, program0) {
			t.Fatalf("%s: the program's requests differ from %s's run", name, whatIfSettings[0])
		}
		rc, err := NewRecording(s, 0, WhatIfOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rc.pairs.deferredFrees() == 0 {
			t.Errorf("%s: no deferred frees counted; the workload frees record_stream blocks every step", name)
		}
	}
	for _, a := range whatIfSettings {
		for _, b := range whatIfSettings {
			moved := 0
			for k := range places[a] {
				if places[a][k] != places[b][k] {
					moved++
				}
			}
			_, miss := whatIfMisses["sidestream "+a+" "+b]
			t.Logf("%-11s %-11s %d of %d frees complete elsewhere; what-if misses: %v", a, b, moved, len(places[a]), miss)
			if miss && moved == 0 {
				t.Errorf("sidestream %s → %s misses with the same completion places", a, b)
			}
		}
	}
}

// progEntry is one entry the program made: an alloc (size, stream) or a
// free_requested or oom (Of: the alloc ordinal of the block freed).
type progEntry struct {
	Action       snapshot.Action
	Size, Stream int64
	Of           int
}

// programOf returns the program's entries of evs (streams numbered in the
// order of their first use) and, per alloc ordinal, after how many of them
// its free_completed came (-1: never).
func programOf(t *testing.T, evs []snapshot.Event) ([]progEntry, []int) {
	t.Helper()
	var prog []progEntry
	var places []int
	live := map[uint64]int{}     // address → alloc ordinal
	streams := map[int64]int64{} // stream handle (another in each process) → order of first use
	for i := range evs {
		ev := evs[i]
		if _, ok := streams[ev.Stream]; !ok {
			streams[ev.Stream] = int64(len(streams))
		}
		ev.Stream = streams[ev.Stream]
		switch ev.Action {
		case snapshot.ActionAlloc:
			live[ev.Addr] = len(places)
			prog = append(prog, progEntry{Action: ev.Action, Size: ev.Size, Stream: ev.Stream, Of: len(places)})
			places = append(places, -1)
		case snapshot.ActionOOM:
			prog = append(prog, progEntry{Action: ev.Action, Size: ev.Size, Stream: ev.Stream, Of: -1})
		case snapshot.ActionFreeRequested:
			k, ok := live[ev.Addr]
			if !ok {
				t.Fatalf("event %d: free_requested of %#x, never allocated", i, ev.Addr)
			}
			prog = append(prog, progEntry{Action: ev.Action, Size: ev.Size, Stream: ev.Stream, Of: k})
		case snapshot.ActionFreeCompleted:
			k, ok := live[ev.Addr]
			if !ok {
				t.Fatalf("event %d: free_completed of %#x, never allocated", i, ev.Addr)
			}
			places[k] = len(prog)
			delete(live, ev.Addr)
		}
	}
	return prog, places
}

// TestWhatIfRepeats holds the side stream's what-ifs against torch's own
// spread. The workload ran five times per setting (the fixture's run and
// fixtures/whatif-sidestream/repeats/SETTING-1..4), and torch's peak
// reserved differs between runs of one setting by a 20 MiB segment, as the
// GPU finished the record_stream frees earlier or later (default: 165.7 MB
// in four runs, 144.7 MB in one). Every recording's what-if under every
// setting is within 2% of a peak torch measured in some run of that
// setting but the one repeatMisses lists, and its OOM outcome is torch's.
func TestWhatIfRepeats(t *testing.T) {
	dir := filepath.Join("../fixtures", "whatif-sidestream")
	type run struct {
		name, setting string
		s             *snapshot.Snapshot
		tr            *truth.File
	}
	var runs []run
	measured := map[string][]int64{}
	for _, set := range whatIfSettings {
		dirs := []string{filepath.Join(dir, set)}
		for k := 1; k <= 4; k++ {
			dirs = append(dirs, filepath.Join(dir, "repeats", fmt.Sprintf("%s-%d", set, k)))
		}
		for _, d := range dirs {
			s, err := snapshot.Open(filepath.Join(d, "snapshot.pickle"))
			if err != nil {
				t.Fatal(err)
			}
			tr, err := truth.Read(filepath.Join(d, "truth.json"))
			if err != nil {
				t.Fatal(err)
			}
			if tr.AllocConf != runsConf(t, dir, set) {
				t.Fatalf("%s: PYTORCH_CUDA_ALLOC_CONF %q, want %s's", d, tr.AllocConf, set)
			}
			runs = append(runs, run{name: strings.TrimPrefix(d, dir+"/"), setting: set, s: s, tr: tr})
			measured[set] = append(measured[set], tr.MemoryStatsEnd["reserved_bytes.all.peak"])
		}
	}
	for _, set := range whatIfSettings {
		t.Logf("torch's peak reserved under %-11s in 5 runs: %v", set, measured[set])
	}
	exact := 0
	for _, a := range runs {
		for _, b := range whatIfSettings {
			conf := runsConf(t, dir, b)
			set, err := ParseConf(conf)
			if err != nil {
				t.Fatal(err)
			}
			o, err := WhatIf(a.s, 0, set, WhatIfOptions{DeviceTotal: a.tr.DeviceTotal, MemoryFraction: a.tr.CapFraction})
			if err != nil {
				t.Fatalf("%s under %s: %v", a.name, b, err)
			}
			best := measured[b][0]
			for _, m := range measured[b] {
				if abs64(o.PeakReserved-m) < abs64(o.PeakReserved-best) {
					best = m
				}
			}
			if best == o.PeakReserved {
				exact++
			}
			errPct := 100 * float64(o.PeakReserved-best) / float64(best)
			within := errPct >= -2 && errPct <= 2
			if cause, listed := repeatMisses[a.name+" "+b]; listed {
				if within {
					t.Errorf("%s under %s: peak reserved %d, within 2%% of torch's %d; the table says it misses (%s): remove it", a.name, b, o.PeakReserved, best, cause)
				}
				continue
			}
			if !within {
				t.Errorf("%s under %s: peak reserved %d, %.2f%% from the nearest of torch's %v", a.name, b, o.PeakReserved, errPct, measured[b])
			}
			if o.OOM != nil {
				t.Errorf("%s under %s: OOM at event %d; no run of torch's ran out of memory", a.name, b, o.OOM.Index)
			}
		}
	}
	t.Logf("%d of %d what-ifs equal a peak torch measured under the target setting", exact, len(runs)*len(whatIfSettings))
}

// repeatMisses are the side-stream what-ifs that no run of torch's under
// the target setting measured, with the cause.
var repeatMisses = map[string]string{
	// expandable-3 is the one run of its setting that reserved 20 MiB
	// less (171,966,464 B): its record_stream frees completed at places
	// that reuse one more block. Under roundup_power2_divisions:4 those
	// places give 153,092,096 B, a timing none of the five pow2div4 runs
	// had (148,897,792 B once, 169,869,312 B four times).
	"repeats/expandable-3 pow2div4": "event completion seen in 1 of 25 runs, in no pow2div4 run",
}

// runsConf returns the PYTORCH_CUDA_ALLOC_CONF of the fixture's run of set.
func runsConf(t *testing.T, dir, set string) string {
	t.Helper()
	tr, err := truth.Read(filepath.Join(dir, set, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tr.AllocConf
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// TestWhatIfPrivatePool: generate() with a static KV cache runs its decode
// steps in a CUDA graph, whose blocks live in the graph's private pool
// (fixtures/advise/infer-static). Requests are routed to the pool their
// recorded block was in, and the what-if under the recorded settings ends
// with torch's reserved peak and end (memory_stats() at the end of the
// run; the trace covers the whole process).
func TestWhatIfPrivatePool(t *testing.T) {
	dir := "../fixtures/advise/infer-static"
	s, err := snapshot.Open(filepath.Join(dir, "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := truth.Read(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	private := 0
	for _, seg := range s.Segments {
		if !seg.Pool.IsDefault() {
			private++
		}
	}
	if private == 0 {
		t.Fatal("no private-pool segment: the fixture is not what this test is about")
	}
	set, err := SettingsFromSnapshot(s.Settings)
	if err != nil {
		t.Fatal(err)
	}
	o, err := WhatIf(s, 0, set, WhatIfOptions{DeviceTotal: tr.DeviceTotal})
	if err != nil {
		t.Fatal(err)
	}
	if !o.Replay.Exact() {
		t.Errorf("replay: %s", o.Replay)
	}
	st := tr.MemoryStatsEnd
	if o.PeakReserved != st["reserved_bytes.all.peak"] || o.EndReserved != st["reserved_bytes.all.current"] {
		t.Errorf("peak/end reserved %d/%d, want torch's %d/%d", o.PeakReserved, o.EndReserved, st["reserved_bytes.all.peak"], st["reserved_bytes.all.current"])
	}
}

// A free_completed just before a release is held for the next request
// (the release's own, completed inside it); when that request's block
// has the freed block's address (the release gave the segment back and
// cudaMalloc handed the same address out again), the held completion
// still ends the old block, and the new block's frees still find the new
// one: the what-if pairs entries by the alloc that made the block, not by
// the address at the time it applies them.
func TestWhatIfHeldFreeAddressReused(t *testing.T) {
	const S, M = 0x7f0000000000, 1 << 20
	ev := func(action string, addr, size int64) map[string]any { return snapgen.Ev(action, addr, size, 1) }
	syn := &snapgen.Synth{
		Traces: [][]map[string]any{{
			ev("segment_alloc", S, 20*M), ev("alloc", S, 20*M),
			ev("free_requested", S, 20*M), ev("free_completed", S, 20*M),
			ev("segment_free", S, 20*M),
			ev("segment_alloc", S, 40*M), ev("alloc", S, 40*M),
			ev("free_requested", S, 40*M), ev("free_completed", S, 40*M),
		}},
		Segments: []map[string]any{snapgen.Seg(S, snapgen.Blk(40*M, 0, "inactive"))},
	}
	s, err := syn.Decode("reused")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := NewRecording(s, 0, WhatIfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := rc.WhatIf(Settings{})
	if err != nil {
		t.Fatal(err)
	}
	// The check takes the release for the retry after a failed cudaMalloc,
	// so the what-if's device refuses the second segment too: its retry
	// completes the first block and frees that segment, and 40 MiB stay
	// reserved. (Paired
	// by address, the held completion took the second block's entry, and
	// both of its frees went unmatched.)
	if o.Unmatched != 0 || o.OOM != nil || o.EndReserved != 40*M || o.PeakAllocated != 40*M || o.Retries != 1 {
		t.Errorf("what-if: %d unmatched frees, oom %v, end reserved %d, peak allocated %d, %d retries; want 0, none, %d, %d, 1",
			o.Unmatched, o.OOM, o.EndReserved, o.PeakAllocated, o.Retries, 40*M, 40*M)
	}
}

// settingTruths reads the truth.json of every setting (whatIfSettings) of
// a what-if fixture folder: torch's run of the workload under it.
func settingTruths(t *testing.T, dir string) map[string]*truth.File {
	t.Helper()
	truths := map[string]*truth.File{}
	for _, name := range whatIfSettings {
		tr, err := truth.Read(filepath.Join(dir, name, "truth.json"))
		if err != nil {
			t.Fatal(err)
		}
		truths[name] = tr
	}
	return truths
}
