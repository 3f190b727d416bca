package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// The analysis commands (peak --at, diff, frag, oom, leaks) held to what
// torch measured in the same process as each snapshot (the fixtures'
// truth.json, STYLE 12), exact to the byte where memscope is exact.

// truthFixtures returns the fixture folders that hold a truth.json.
func truthFixtures(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("../../fixtures/*/truth.json")
	if len(files) < 18 {
		t.Fatalf("%d fixtures with truth.json, want the repository's 18", len(files))
	}
	dirs := make([]string, len(files))
	for i, f := range files {
		dirs[i] = filepath.Dir(f)
	}
	return dirs
}

// readTruth reads a fixture folder's truth.json.
func readTruth(t *testing.T, dir string) *truth.File {
	t.Helper()
	return readFixtureTruth(t, filepath.Base(dir))
}

// stat returns memory_stats()[key] at the end of the window, failing the
// test when torch did not write it, so that no test passes on a zero
// torch never measured.
func stat(t *testing.T, tr *truth.File, key string) int64 {
	t.Helper()
	v, ok := tr.MemoryStatsEnd[key]
	if !ok {
		t.Fatalf("truth.json: memory_stats_end has no %s", key)
	}
	return v
}

// observer returns torch's first OOM observer record of a harness run.
func observer(t *testing.T, tr *truth.File) truth.OOMObservation {
	t.Helper()
	if tr.OOM == nil || len(tr.OOM.Observer) == 0 {
		t.Fatal("truth.json: no OOM observer record")
	}
	return tr.OOM.Observer[0]
}

// numbersJSON is the four numbers of a moment as the JSON output writes them.
type numbersJSON struct {
	Requested int64 `json:"requested"`
	Allocated int64 `json:"allocated"`
	Active    int64 `json:"active"`
	Reserved  int64 `json:"reserved"`
}

// peakAtDoc is the part of 'peak --json' these tests read.
type peakAtDoc struct {
	Files []struct {
		Devices []struct {
			Label      string      `json:"label"`
			EventIndex int         `json:"event_index"`
			TimeUS     int64       `json:"time_epoch_us"`
			Numbers    numbersJSON `json:"numbers"`
		} `json:"devices"`
	} `json:"files"`
}

func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	r := runMemscope(args...)
	if r.err != nil {
		t.Fatalf("memscope %s: %v", strings.Join(args, " "), r.err)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("memscope %s: decoding JSON: %v", strings.Join(args, " "), err)
	}
}

func peakNumbers(t *testing.T, args ...string) numbersJSON {
	t.Helper()
	var doc peakAtDoc
	runJSON(t, &doc, append([]string{"peak", "--json", "--top", "0"}, args...)...)
	if len(doc.Files) != 1 || len(doc.Files[0].Devices) != 1 {
		t.Fatalf("memscope peak %s: want 1 file with 1 device", strings.Join(args, " "))
	}
	return doc.Files[0].Devices[0].Numbers
}

type intCase struct {
	name      string
	got, want int64
}

func checkInts(t *testing.T, what string, cases []intCase) {
	t.Helper()
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s %s = %d, want %d (torch)", what, c.name, c.got, c.want)
		}
	}
}

// TestPeakAtEndMatchesTruth: 'peak --at end' holds the four numbers torch
// read when it took the snapshot, on every fixture.
func TestPeakAtEndMatchesTruth(t *testing.T) {
	for _, dir := range truthFixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tr := readTruth(t, dir)
			n := peakNumbers(t, "--at", "end", filepath.Join(dir, "snapshot.pickle"))
			checkInts(t, "peak --at end", []intCase{
				{"allocated", n.Allocated, tr.Window.AllocatedEnd},
				{"requested", n.Requested, tr.Window.RequestedEnd},
				{"reserved", n.Reserved, tr.Window.ReservedEnd},
				{"active", n.Active, tr.Window.ActiveEnd},
			})
		})
	}
}

// TestPeakAtPhaseMatchesTruth: 'peak --at step:N:PHASE' is the moment of
// that phase's peak: its allocated and requested bytes are torch's peak
// counters of the phase (reset at every phase boundary), for every phase
// of every step of every fixture. Reserved and active are those at the
// moment of the allocated peak, which torch's own per-counter peaks need
// not share, so they are not compared.
func TestPeakAtPhaseMatchesTruth(t *testing.T) {
	for _, dir := range truthFixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tr := readTruth(t, dir)
			n := 0
			for _, ph := range tr.Phases {
				if ph.Step < 0 {
					continue // setup, before the first step: no step:N:PHASE names it
				}
				at := fmt.Sprintf("step:%d:%s", ph.Step, ph.Phase)
				got := peakNumbers(t, "--at", at, filepath.Join(dir, "snapshot.pickle"))
				checkInts(t, "peak --at "+at, []intCase{
					{"allocated", got.Allocated, ph.PeakAllocated},
					{"requested", got.Requested, ph.PeakRequested},
				})
				n++
			}
			if n == 0 {
				t.Fatal("truth.json lists no phase of a step")
			}
		})
	}
}

// TestPeakAtTime: 'peak --at 1ms' is the state after the last event
// recorded within 1 ms of the first, as the snapshot's own times say.
func TestPeakAtTime(t *testing.T) {
	var doc peakAtDoc
	runJSON(t, &doc, "peak", "--json", "--top", "0", "--at", "1ms", mlpSnap)
	d := doc.Files[0].Devices[0]
	s, err := snapshot.Open(mlpSnap)
	if err != nil {
		t.Fatal(err)
	}
	ev := s.Traces[0]
	limit := ev[0].TimeUS + 1000
	want := 0
	for want+1 < len(ev) && ev[want+1].TimeUS <= limit {
		want++
	}
	if d.EventIndex != want || d.TimeUS != ev[want].TimeUS {
		t.Errorf("peak --at 1ms = event %d at %d µs, want event %d at %d µs (the last within 1 ms of %d)",
			d.EventIndex, d.TimeUS, want, ev[want].TimeUS, ev[0].TimeUS)
	}
	if at := peakNumbers(t, "--at", "event:"+strconv.Itoa(want), mlpSnap); at != d.Numbers {
		t.Errorf("peak --at 1ms numbers = %+v, want those of event %d: %+v", d.Numbers, want, at)
	}
	if r := runMemscope("peak", "--at", "oom", mlpSnap); r.code != 2 {
		t.Errorf("peak --at oom on a run without OOM: exit %d, want 2", r.code)
	}
}

// phasePeaks returns, per phase name, the highest peak torch measured in
// a phase of that name, counting the phase that failed with OOM (the
// harness records its peak beside the failure, not as a row).
func phasePeaks(t *testing.T, tr *truth.File) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, ph := range tr.Phases {
		out[ph.Phase] = max(out[ph.Phase], ph.PeakAllocated)
	}
	if tr.OOM != nil && tr.OOM.Failed != nil {
		f := tr.OOM.Failed
		name := failedPhase(t, tr, int64(f.Step))
		out[name] = max(out[name], f.PeakAllocated)
	}
	return out
}

// failedPhase returns the phase of step that failed with OOM in a
// harness run: the one after the step's last row, in the harness's order.
func failedPhase(t *testing.T, tr *truth.File, step int64) string {
	t.Helper()
	order := []string{"data", "forward", "backward", "optimizer"}
	next := 0
	for _, p := range tr.Phases {
		if int64(p.Step) == step {
			next = slices.Index(order, p.Phase) + 1
		}
	}
	if next >= len(order) {
		t.Fatalf("truth.json: step %d that failed with OOM has all its phases", step)
	}
	return order[next]
}

// TestDiffMatchesTruth: 'diff A B --json' holds each file's window peaks
// and end state as torch measured them, each phase's highest peak, and
// every change is b − a.
func TestDiffMatchesTruth(t *testing.T) {
	dirs := truthFixtures(t)
	for i, a := range dirs {
		b := dirs[(i+1)%len(dirs)]
		t.Run(filepath.Base(a)+"→"+filepath.Base(b), func(t *testing.T) {
			var doc struct {
				Result struct {
					Devices []struct {
						PeakA      numbersJSON `json:"peak_a"`
						PeakB      numbersJSON `json:"peak_b"`
						EndA       numbersJSON `json:"end_a"`
						EndB       numbersJSON `json:"end_b"`
						Sites      []diffRow   `json:"sites"`
						Categories []diffRow   `json:"categories"`
						Phases     []diffRow   `json:"phases"`
					} `json:"devices"`
				} `json:"result"`
			}
			runJSON(t, &doc, "diff", "--json", filepath.Join(a, "snapshot.pickle"), filepath.Join(b, "snapshot.pickle"))
			if len(doc.Result.Devices) != 1 {
				t.Fatalf("diff: %d devices, want 1", len(doc.Result.Devices))
			}
			d := doc.Result.Devices[0]
			ta, tb := readTruth(t, a), readTruth(t, b)
			var cases []intCase
			for _, side := range []struct {
				name      string
				tr        *truth.File
				peak, end numbersJSON
			}{{"a", ta, d.PeakA, d.EndA}, {"b", tb, d.PeakB, d.EndB}} {
				// The peak is the moment of the allocated peak; its reserved
				// bytes are those of that moment, not torch's max_reserved.
				cases = append(cases,
					intCase{"peak_" + side.name + ".allocated", side.peak.Allocated, side.tr.Window.MaxAllocated},
					intCase{"peak_" + side.name + ".requested", side.peak.Requested, side.tr.Window.MaxRequested},
					intCase{"peak_" + side.name + ".active", side.peak.Active, side.tr.Window.MaxActive},
					intCase{"end_" + side.name + ".allocated", side.end.Allocated, side.tr.Window.AllocatedEnd},
					intCase{"end_" + side.name + ".requested", side.end.Requested, side.tr.Window.RequestedEnd},
					intCase{"end_" + side.name + ".reserved", side.end.Reserved, side.tr.Window.ReservedEnd},
				)
				if max := side.tr.Window.MaxReserved; side.peak.Reserved > max {
					t.Errorf("diff peak_%s.reserved = %d, above torch's max_reserved %d", side.name, side.peak.Reserved, max)
				}
			}
			checkInts(t, "diff", cases)
			// plain-oom's snapshot is taken in the except clause after an
			// OOM in backward: memscope calls the time after the failed
			// backward step 4's optimizer phase, which torch never ran.
			if !strings.Contains(a+b, "plain-oom") {
				for _, side := range []struct {
					name string
					tr   *truth.File
					of   func(diffRow) int64
				}{{"a", ta, func(r diffRow) int64 { return r.A }}, {"b", tb, func(r diffRow) int64 { return r.B }}} {
					want := phasePeaks(t, side.tr)
					got := map[string]int64{}
					for _, p := range d.Phases {
						if v := side.of(p); v != 0 {
							got[p.Name] = v
						}
					}
					for name, w := range want {
						if got[name] != w {
							t.Errorf("diff phase %s, %s = %d, want %d (torch's highest peak of the phase)", name, side.name, got[name], w)
						}
					}
					// A phase torch has no row for can only be the time
					// before the first step memscope found, in a window torch
					// opened earlier (plain-inference: steps from the
					// allocation pattern); nothing above the window's start
					// is live in it.
					for name, v := range got {
						if _, ok := want[name]; !ok && (name != "setup" || v != side.tr.Window.AllocatedStart) {
							t.Errorf("diff phase %s, %s = %d: a phase torch did not measure", name, side.name, v)
						}
					}
				}
			}
			for _, rows := range [][]diffRow{d.Sites, d.Categories, d.Phases} {
				for _, r := range rows {
					if r.Change != r.B-r.A {
						t.Errorf("diff row %q: change %d, want b − a = %d", r.Name, r.Change, r.B-r.A)
					}
				}
			}
			// The categories partition the blocks live at each peak.
			var ca, cb int64
			for _, r := range d.Categories {
				ca += r.A
				cb += r.B
			}
			if ca != d.PeakA.Allocated || cb != d.PeakB.Allocated {
				t.Errorf("diff Σ categories = %d, %d; want the peaks %d, %d", ca, cb, d.PeakA.Allocated, d.PeakB.Allocated)
			}
		})
	}
}

type diffRow struct {
	Name   string `json:"name"`
	A      int64  `json:"a"`
	B      int64  `json:"b"`
	Change int64  `json:"change"`
}

// TestFragMatchesTruth: 'frag --json' at end holds reserved, allocated,
// active and inactive-split bytes as torch.cuda.memory_stats() read them
// when the snapshot was taken; its peak moment holds the window's peak.
func TestFragMatchesTruth(t *testing.T) {
	for _, dir := range truthFixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tr := readTruth(t, dir)
			var doc struct {
				Files []struct {
					Devices []struct {
						Moments []struct {
							Label         string `json:"label"`
							Reserved      int64  `json:"reserved"`
							Allocated     int64  `json:"allocated"`
							Active        int64  `json:"active"`
							ReservedMinus int64  `json:"reserved_minus_allocated"`
							InactiveSplit int64  `json:"inactive_split"`
						} `json:"moments"`
					} `json:"devices"`
				} `json:"files"`
			}
			runJSON(t, &doc, "frag", "--json", filepath.Join(dir, "snapshot.pickle"))
			seen := map[string]bool{}
			for _, m := range doc.Files[0].Devices[0].Moments {
				seen[m.Label] = true
				if m.ReservedMinus != m.Reserved-m.Allocated {
					t.Errorf("frag %s: reserved_minus_allocated %d, want %d", m.Label, m.ReservedMinus, m.Reserved-m.Allocated)
				}
				switch m.Label {
				case "end":
					checkInts(t, "frag end", []intCase{
						{"reserved", m.Reserved, stat(t, tr, "reserved_bytes.all.current")},
						{"allocated", m.Allocated, stat(t, tr, "allocated_bytes.all.current")},
						{"active", m.Active, stat(t, tr, "active_bytes.all.current")},
						{"inactive_split", m.InactiveSplit, stat(t, tr, "inactive_split_bytes.all.current")},
					})
				case "peak":
					checkInts(t, "frag peak", []intCase{{"allocated", m.Allocated, tr.Window.MaxAllocated}})
				}
			}
			if !seen["end"] || !seen["peak"] {
				t.Errorf("frag moments %v, want peak and end", seen)
			}
		})
	}
}

// TestOOMMatchesTruth: 'oom --json' holds the request, the device's free
// bytes and the allocator's numbers that torch's OOM observer was called
// with, the step and phase that failed, and a per-process cap range that
// holds the cap the run set.
func TestOOMMatchesTruth(t *testing.T) {
	type oomDoc struct {
		Files []struct {
			Devices []struct {
				N          int         `json:"n"`
				Request    int64       `json:"request"`
				Step       *int        `json:"step"`
				Phase      string      `json:"phase"`
				DeviceFree int64       `json:"device_free"`
				Numbers    numbersJSON `json:"numbers"`
				Capacity   bool        `json:"capacity"`
				Cap        *struct {
					Low  int64 `json:"low"`
					High int64 `json:"high"`
				} `json:"cap"`
				RequestSite struct {
					Frame *struct {
						Filename string `json:"filename"`
						Line     int64  `json:"line"`
					} `json:"frame"`
				} `json:"request_site"`
			} `json:"devices"`
		} `json:"files"`
	}
	read := func(t *testing.T, fixture string) (*truth.File, int, string, int64) {
		t.Helper()
		var doc oomDoc
		runJSON(t, &doc, "oom", "--json", "../../fixtures/"+fixture+"/snapshot.pickle")
		d := doc.Files[0].Devices[0]
		tr := readTruth(t, "../../fixtures/"+fixture)
		if d.N != 1 || d.Step == nil || !d.Capacity || d.Cap == nil {
			t.Fatalf("oom %s: n %d, step %v, capacity %v, cap %v; want the one OOM, its step, capacity, a cap", fixture, d.N, d.Step, d.Capacity, d.Cap)
		}
		if cap := tr.CapBytes; cap < d.Cap.Low || cap > d.Cap.High {
			t.Errorf("oom %s: cap between %d and %d, want it to hold the run's cap %d", fixture, d.Cap.Low, d.Cap.High, cap)
		}
		checkInts(t, "oom "+fixture, []intCase{{"device_free", d.DeviceFree, deviceFreeOf(t, fixture)}})
		return tr, *d.Step, d.Phase, d.Request
	}
	t.Run("oom", func(t *testing.T) {
		var doc oomDoc
		runJSON(t, &doc, "oom", "--json", oomSnap)
		d := doc.Files[0].Devices[0]
		tr, step, phase, req := read(t, "oom")
		checkInts(t, "oom", []intCase{
			{"request", req, observer(t, tr).Request},
			{"device_free", d.DeviceFree, observer(t, tr).DeviceFree},
			{"numbers.allocated", d.Numbers.Allocated, observer(t, tr).Allocated},
			{"numbers.requested", d.Numbers.Requested, observer(t, tr).Requested},
			{"numbers.reserved", d.Numbers.Reserved, observer(t, tr).Reserved},
			{"step", int64(step), int64(tr.OOM.Failed.Step)},
		})
		if want := failedPhase(t, tr, int64(step)); phase != want {
			t.Errorf("oom phase = %q, want %s (the phase after the last torch closed in step %d)", phase, want, step)
		}
	})
	t.Run("plain-oom", func(t *testing.T) {
		var doc oomDoc
		runJSON(t, &doc, "oom", "--json", "../../fixtures/plain-oom/snapshot.pickle")
		d := doc.Files[0].Devices[0]
		tr, step, phase, req := read(t, "plain-oom")
		msg := tr.OOM.Message
		m := regexp.MustCompile(`Tried to allocate (\S+ \S+)\.`).FindStringSubmatch(msg)
		if m == nil {
			t.Fatalf("truth.json's OOM message %q names no request", msg)
		}
		if units.Bytes(req) != m[1] {
			t.Errorf("oom request = %d (%s), want torch's message's %s", req, units.Bytes(req), m[1])
		}
		wantPhase := tr.OOM.Phase
		if int64(step) != int64(tr.OOM.Step) || phase != wantPhase {
			t.Errorf("oom at step %d %s, want step %d %s (torch)", step, phase, int64(tr.OOM.Step), wantPhase)
		}
		if a, peak := d.Numbers.Allocated, tr.Window.MaxAllocated; a > peak {
			t.Errorf("oom numbers.allocated = %d, above torch's peak %d", a, peak)
		}
	})
}

// deviceFreeOf returns the device free bytes the snapshot's oom event
// records (the input itself).
func deviceFreeOf(t *testing.T, fixture string) int64 {
	t.Helper()
	s, err := snapshot.Open("../../fixtures/" + fixture + "/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range s.Traces[0] {
		if ev.Action == snapshot.ActionOOM {
			return ev.DeviceFree()
		}
	}
	t.Fatalf("%s: the snapshot records no oom event", fixture)
	return 0
}

// TestLeaksMatchesTruth: 'leaks --json' finds the planted leak exactly
// where and as large as truth.json says, and nothing on the fixtures
// without one.
func TestLeaksMatchesTruth(t *testing.T) {
	for _, dir := range truthFixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tr := readFixtureTruth(t, filepath.Base(dir))
			var doc struct {
				Files []struct {
					Devices []struct {
						Found  bool    `json:"found"`
						Growth int64   `json:"growth_per_step"`
						Floors []int64 `json:"floors"`
						Sites  []struct {
							Frame *struct {
								Filename string `json:"filename"`
								Line     int64  `json:"line"`
							} `json:"frame"`
							BytesPerStep int64 `json:"bytes_per_step"`
						} `json:"sites"`
					} `json:"devices"`
				} `json:"files"`
			}
			runJSON(t, &doc, "leaks", "--json", filepath.Join(dir, "snapshot.pickle"))
			d := doc.Files[0].Devices[0]
			if tr.Leak == nil || tr.Leak.BytesPerStep == 0 {
				if d.Found {
					t.Errorf("leaks: found %d B per step, want none (truth plants no leak)", d.Growth)
				}
				return
			}
			if !d.Found || len(d.Sites) == 0 || d.Sites[0].Frame == nil {
				t.Fatalf("leaks: found %v, %d sites; want the planted leak", d.Found, len(d.Sites))
			}
			s := d.Sites[0]
			checkInts(t, "leaks", []intCase{
				{"growth_per_step", d.Growth, tr.Leak.BytesPerStep},
				{"sites[0].bytes_per_step", s.BytesPerStep, tr.Leak.BytesPerStep},
				{"sites[0].line", s.Frame.Line, tr.Leak.Line},
			})
			if s.Frame.Filename != tr.Leak.File {
				t.Errorf("leaks sites[0] file = %s, want %s", s.Frame.Filename, tr.Leak.File)
			}
			if n := len(d.Floors); n == 0 || d.Floors[n-1] != tr.Window.AllocatedEnd {
				t.Errorf("leaks floors = %v, want the last one torch's allocated at the end, %d", d.Floors, tr.Window.AllocatedEnd)
			}
		})
	}
}

// TestAnalysisTextShowsTruth: the text forms print torch's numbers, in
// the units helper's words.
func TestAnalysisTextShowsTruth(t *testing.T) {
	oomT, leakT, mlpT := readTruth(t, "../../fixtures/oom"), readFixtureTruth(t, "leak"), readFixtureTruth(t, "mlp-adamw")
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"frag", oomSnap}, []string{
			"     end  " + units.Bytes(stat(t, oomT, "reserved_bytes.all.current")) + "  " +
				units.Bytes(stat(t, oomT, "allocated_bytes.all.current")),
		}},
		{[]string{"oom", oomSnap}, []string{
			"request " + units.Bytes(observer(t, oomT).Request) + " in step 4 forward",
			"allocated " + units.Bytes(observer(t, oomT).Allocated) + ", reserved " + units.Bytes(observer(t, oomT).Reserved),
			"device free " + units.Bytes(observer(t, oomT).DeviceFree),
		}},
		{[]string{"leaks", leakSnap}, []string{"the floor grows by " + units.Bytes(leakT.Leak.BytesPerStep) + " per step",
			fmt.Sprintf("%s:%d", leakT.Leak.File, leakT.Leak.Line)}},
		{[]string{"peak", "--at", "end", mlpSnap}, []string{"requested " + units.Bytes(mlpT.Window.RequestedEnd) + ", allocated " +
			units.Bytes(mlpT.Window.AllocatedEnd) + ", active " + units.Bytes(mlpT.Window.AllocatedEnd) + ", reserved " + units.Bytes(mlpT.Window.ReservedEnd)}},
		{[]string{"diff", mlpSnap, leakSnap}, []string{
			"peak allocated  " + units.Bytes(mlpT.Window.MaxAllocated) + "  " + units.Bytes(leakT.Window.MaxAllocated),
			"end allocated  " + units.Bytes(mlpT.Window.AllocatedEnd) + "  " + units.Bytes(leakT.Window.AllocatedEnd),
		}},
		{[]string{"peak", "--tree", llamaSnap}, []string{units.Bytes(readFixtureTruth(t, "llama-bf16").Window.MaxAllocated)}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runMemscope(tt.args...)
			if r.err != nil {
				t.Fatal(r.err)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("memscope %s does not print %q:\n%s", strings.Join(tt.args, " "), w, r.stdout)
				}
			}
		})
	}
}
