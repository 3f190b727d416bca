package snapshot

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/internal/units"
)

// quirkTruth is truth.json of a fixture under ../fixtures/quirks, with
// the facts capture/quirks/quirks.py adds to truthlib's.
type quirkTruth struct {
	Window       truth.Window `json:"window"`
	TraceEntries []int        `json:"trace_entries"` // len(device_traces[d]) of torch's _snapshot()
	// legacy-one-entry: the default of _record_memory_history_legacy's
	// trace_alloc_max_entries, read from torch's signature in the run.
	MaxEntriesDefault *int64 `json:"trace_alloc_max_entries_default"`
	// late-peak: torch's max_memory_allocated before recording began.
	PeakBefore int64 `json:"peak_allocated_before_recording"`
}

// quirk opens ../fixtures/quirks/name and replays device 0.
func quirk(t *testing.T, name string) (*Timeline, *quirkTruth) {
	t.Helper()
	dir := filepath.Join("../fixtures/quirks", name)
	b, err := os.ReadFile(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr quirkTruth
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	s, err := Open(filepath.Join(dir, "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	return Replay(s, 0, ReplayOptions{}), &tr
}

func warningOf(tl *Timeline, kind string) *Warning {
	for i := range tl.Warnings {
		if tl.Warnings[i].Kind == kind {
			return &tl.Warnings[i]
		}
	}
	return nil
}

// TestOneEntryFixtures: torch 2.11's legacy _record_memory_history(True)
// and enabled="state" each leave a trace of one entry, the marker of the
// snapshot call (truth: trace_entries [1]). Both are said to be a
// recording that keeps one entry — with torch's own default of
// trace_alloc_max_entries and the call that records the history — and
// neither a wrapped ring buffer nor a late start; their end state is
// torch's.
func TestOneEntryFixtures(t *testing.T) {
	_, legacy := quirk(t, "legacy-one-entry")
	if legacy.MaxEntriesDefault == nil {
		t.Fatal("legacy-one-entry/truth.json has no trace_alloc_max_entries_default")
	}
	for _, name := range []string{"legacy-one-entry", "state-only"} {
		t.Run(name, func(t *testing.T) {
			tl, tr := quirk(t, name)
			if len(tr.TraceEntries) != 1 || len(tl.Events) != tr.TraceEntries[0] || tr.TraceEntries[0] != 1 {
				t.Fatalf("trace of %d entries, torch wrote %v: want one", len(tl.Events), tr.TraceEntries)
			}
			if !tl.OneEntry || tl.Wrapped {
				t.Errorf("OneEntry, Wrapped = %v, %v, want true, false", tl.OneEntry, tl.Wrapped)
			}
			w := warningOf(tl, WarnOneEntry)
			if w == nil {
				t.Fatalf("warnings %q, want one of kind %s", tl.Warnings, WarnOneEntry)
			}
			for _, want := range []string{
				"the trace holds one entry (torch's marker of the snapshot call)",
				"not a ring buffer that wrapped",
				fmt.Sprintf("torch.cuda.memory._record_memory_history(True, …), whose trace_alloc_max_entries defaults to %d", *legacy.MaxEntriesDefault),
				`enabled="state"`,
				"record again with torch.cuda.memory._record_memory_history(max_entries=100000)",
			} {
				if !strings.Contains(w.Message, want) {
					t.Errorf("one-entry warning lacks %q:\n%s", want, w.Message)
				}
			}
			for _, kind := range []string{WarnWrapped, WarnLateStart, WarnPeakBefore} {
				if w := warningOf(tl, kind); w != nil {
					t.Errorf("unexpected %s warning: %s", kind, w.Message)
				}
			}
			if tl.End.Allocated != tr.Window.AllocatedEnd || tl.End.Reserved != tr.Window.ReservedEnd {
				t.Errorf("end allocated, reserved = %d, %d, want %d, %d (torch)", tl.End.Allocated, tl.End.Reserved, tr.Window.AllocatedEnd, tr.Window.ReservedEnd)
			}
		})
	}
}

// TestLatePeakFixture: recording began after a step at 32 times the
// batch; torch measured 593 MiB allocated before recording against 307 MiB
// in the window, and the allocator still held the big step's 722 MiB.
// The warning says the true peak predates the recording, with torch's
// reserved at the start and its window peak, and their ratio.
func TestLatePeakFixture(t *testing.T) {
	tl, tr := quirk(t, "late-peak")
	w := tr.Window
	if tr.PeakBefore <= w.MaxAllocated {
		t.Fatalf("truth: peak before recording %d, window peak %d: the fixture does not hold a late peak", tr.PeakBefore, w.MaxAllocated)
	}
	wn := warningOf(tl, WarnPeakBefore)
	if wn == nil {
		t.Fatalf("warnings %q, want one of kind %s", tl.Warnings, WarnPeakBefore)
	}
	for _, want := range []string{
		"the true peak likely predates the recording: " + units.Bytes(w.ReservedStart) + " was reserved at the first recorded entry (" +
			units.Bytes(w.ReservedStart-w.AllocatedStart) + " of it free",
		fmt.Sprintf("%.1f× the highest allocated the trace replays (%s at its peak)", float64(w.ReservedStart)/float64(w.MaxAllocated), units.Bytes(w.MaxAllocated)),
		"start recording before the largest step",
	} {
		if !strings.Contains(wn.Message, want) {
			t.Errorf("peak-before warning lacks %q:\n%s", want, wn.Message)
		}
	}
}

// TestDeferredFreesFixtures: every side-stream run (record_stream, frees
// completed when the side stream's work is done) says its frees waited for
// another stream, with the number of such frees in its trace (a
// free_completed that does not follow its own free_requested, counted
// here), their bytes, and the bytes still waiting at the end, which is
// torch's active − allocated there; no other fixture says so.
func TestDeferredFreesFixtures(t *testing.T) {
	var paths []string
	filepath.WalkDir("../fixtures", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "snapshot") && strings.HasSuffix(d.Name(), ".pickle") {
			paths = append(paths, p)
		}
		return nil
	})
	side := 0
	for _, p := range paths {
		s, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, dev := range s.Devices() {
			tl := Replay(s, dev, ReplayOptions{})
			w := warningOf(tl, WarnDeferredFrees)
			if !strings.Contains(p, "whatif-sidestream") {
				if w != nil {
					t.Errorf("%s device %d: %s", p, dev, w.Message)
				}
				continue
			}
			side++
			if w == nil {
				t.Errorf("%s: no %s warning: %q", p, WarnDeferredFrees, tl.Warnings)
				continue
			}
			n, bytes := 0, int64(0)
			for i, ev := range tl.Events {
				if ev.Action != ActionFreeCompleted {
					continue
				}
				if prev := i - 1; prev < 0 || tl.Events[prev].Action != ActionFreeRequested || tl.Events[prev].Addr != ev.Addr {
					n++
					bytes += ev.Size
				}
			}
			tr := readTruth(t, filepath.Dir(p))
			for _, want := range []string{
				fmt.Sprintf("device 0: %d blocks (%s) were freed while another stream still had work queued on them (record_stream", n, units.Bytes(bytes)),
				"and " + units.Bytes(tr.Window.ActiveEnd-tr.Window.AllocatedEnd) + " at the end",
			} {
				if !strings.Contains(w.Message, want) {
					t.Errorf("%s: warning lacks %q:\n%s", p, want, w.Message)
				}
			}
		}
	}
	if side != 25 {
		t.Errorf("%d side-stream runs, want 25 (5 settings, 4 repeats each)", side)
	}
}

// TestLegacyLastEntry: the legacy call on a torch that writes no marker of
// the snapshot keeps the trace's last entry only. mlp-adamw's trace cut to
// its last entry (a free_completed whose free_requested is gone, the sign
// of a ring buffer that dropped entries) is that: a recording that keeps
// one entry, not a wrapped buffer and not a late start, its end state
// torch's.
func TestLegacyLastEntry(t *testing.T) {
	const dir = "../fixtures/mlp-adamw"
	s, err := Open(filepath.Join(dir, "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	tr := s.Traces[0]
	s.Traces[0] = tr[len(tr)-1:]
	last := s.Traces[0][0].Action
	if last != ActionFreeCompleted {
		t.Fatalf("mlp-adamw's last entry is a %s, want a free_completed", last)
	}
	tl := Replay(s, 0, ReplayOptions{})
	w := warningOf(tl, WarnOneEntry)
	if !tl.OneEntry || tl.Wrapped || w == nil {
		t.Fatalf("OneEntry %v, Wrapped %v, warnings %q: want a one-entry trace", tl.OneEntry, tl.Wrapped, tl.Warnings)
	}
	want := "device 0: the trace holds one entry (a free_completed): a recording that keeps one trace entry, not a ring buffer that wrapped: the legacy call torch.cuda.memory._record_memory_history(True, …), whose trace_alloc_max_entries defaults to 1, keeps only the last"
	if !strings.HasPrefix(w.Message, want) {
		t.Errorf("one-entry warning:\n got %s\nwant it to begin %s", w.Message, want)
	}
	for _, kind := range []string{WarnWrapped, WarnLateStart} {
		if w := warningOf(tl, kind); w != nil {
			t.Errorf("unexpected %s warning: %s", kind, w.Message)
		}
	}
	if win := readTruth(t, dir).Window; tl.End.Allocated != win.AllocatedEnd || tl.End.Reserved != win.ReservedEnd {
		t.Errorf("end allocated, reserved = %d, %d, want %d, %d (torch)", tl.End.Allocated, tl.End.Reserved, win.AllocatedEnd, win.ReservedEnd)
	}
}
