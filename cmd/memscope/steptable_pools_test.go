package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/report"
)

// The step × phase table and the private pools in the JSON documents,
// held to what torch measured in the same process (truth.json).

// stepTablesOf returns the step tables of a fixture's first device, as
// 'summary --json' and 'peak --json' write them.
func stepTablesOf(t *testing.T, snap string) map[string]report.StepTableJSON {
	t.Helper()
	var sum report.SummaryDoc
	runJSON(t, &sum, "summary", "--json", snap)
	var peak struct {
		Files []report.PeakFileJSON `json:"files"`
	}
	runJSON(t, &peak, "peak", "--json", "--top", "0", snap)
	if len(sum.Files) != 1 || len(sum.Files[0].Devices) != 1 || len(peak.Files) != 1 || len(peak.Files[0].Devices) != 1 {
		t.Fatalf("%s: want one file of one device in both documents", snap)
	}
	return map[string]report.StepTableJSON{
		"summary": sum.Files[0].Devices[0].StepTable,
		"peak":    peak.Files[0].Devices[0].StepTable,
	}
}

// TestStepTableJSONMatchesTruth: in both documents, each cell of the step ×
// phase table is torch's max_memory_allocated over that phase of that step
// (the harness or truthlib reset the counter at each phase boundary) — for
// gradient accumulation the highest of the phase's micro-batches — to the
// byte; a step has exactly the phases torch measured in it; its floor is
// allocated when the phase before it ended and its after when its last
// phase ended; its peak and peak phase are its highest cell; and the step
// holding the device's peak holds torch's highest phase peak.
func TestStepTableJSONMatchesTruth(t *testing.T) {
	for _, fixture := range []string{"workloads/grad-accum", "plain-adamw-fused"} {
		tr := readFixtureTruth(t, fixture)
		type key struct {
			step  int
			phase string
		}
		want := map[key]int64{}      // the highest of the phase's (micro-batches') peaks
		phases := map[int][]string{} // per step, its phase names
		last := map[int]int64{}      // per step, allocated when its last phase ended
		before := map[int]int64{}    // per step, allocated when the phase before it ended
		micro := 0
		var best int64 = -1
		for i, ph := range tr.Phases {
			if ph.Step < 0 {
				continue
			}
			k := key{ph.Step, ph.Phase}
			if _, ok := want[k]; !ok {
				phases[ph.Step] = append(phases[ph.Step], ph.Phase)
			}
			want[k] = max(want[k], ph.PeakAllocated)
			last[ph.Step] = ph.AllocatedEnd
			if _, ok := before[ph.Step]; !ok && i > 0 {
				before[ph.Step] = tr.Phases[i-1].AllocatedEnd
			}
			if ph.Micro != nil {
				micro++
			}
			best = max(best, ph.PeakAllocated)
		}
		if fixture == "workloads/grad-accum" && micro == 0 {
			t.Fatalf("%s: truth.json has no micro-batch rows", fixture)
		}
		for doc, tab := range stepTablesOf(t, filepath.Join("../../fixtures", fixture, "snapshot.pickle")) {
			t.Run(fixture+"/"+doc, func(t *testing.T) {
				if len(tab.Rows) != len(phases) {
					t.Fatalf("%d rows, torch measured %d steps", len(tab.Rows), len(phases))
				}
				holding := 0
				for _, r := range tab.Rows {
					got := make([]string, 0, len(r.PhasePeaks))
					for name := range r.PhasePeaks {
						got = append(got, name)
					}
					wantNames := append([]string{}, phases[r.Step]...)
					sort.Strings(got)
					sort.Strings(wantNames)
					if strings.Join(got, ",") != strings.Join(wantNames, ",") {
						t.Errorf("step %d: phases %v, torch measured %v", r.Step, got, wantNames)
					}
					var top int64 = -1
					topPhase := ""
					for name, v := range r.PhasePeaks {
						if w := want[key{r.Step, name}]; v != w {
							t.Errorf("step %d %s = %d, torch measured %d (off by %d)", r.Step, name, v, w, v-w)
						}
						if v > top {
							top, topPhase = v, name
						}
					}
					if r.Peak != top || r.PeakPhase != topPhase {
						t.Errorf("step %d: peak %d in %s, want its highest cell %d in %s", r.Step, r.Peak, r.PeakPhase, top, topPhase)
					}
					if b, ok := before[r.Step]; ok && r.Floor != b {
						t.Errorf("step %d: floor %d, torch read %d when the phase before it ended", r.Step, r.Floor, b)
					}
					if r.After != last[r.Step] {
						t.Errorf("step %d: after %d, torch read %d when its last phase ended", r.Step, r.After, last[r.Step])
					}
					if r.HoldsPeak {
						holding++
						if tab.PeakStep == nil || *tab.PeakStep != r.Step {
							t.Errorf("step %d holds the peak, the table's peak_step is %v", r.Step, tab.PeakStep)
						}
						if r.Peak != best || r.PhasePeaks[tab.PeakPhase] != best {
							t.Errorf("step %d holds the peak with %d (%s %d), torch's highest phase peak is %d",
								r.Step, r.Peak, tab.PeakPhase, r.PhasePeaks[tab.PeakPhase], best)
						}
					}
				}
				if holding != 1 {
					t.Errorf("%d rows hold the device's peak, want 1", holding)
				}
				for _, name := range tab.Phases {
					found := false
					for _, names := range phases {
						found = found || strings.Contains(","+strings.Join(names, ",")+",", ","+name+",")
					}
					if !found {
						t.Errorf("column %q is no phase torch measured", name)
					}
				}
			})
		}
	}
}

// privatePoolsTruth returns torch's private pools at the end of a fixture,
// by pool id.
func privatePoolsTruth(t *testing.T, tr *truth.File) map[[2]int64]truth.PrivatePool {
	t.Helper()
	out := map[[2]int64]truth.PrivatePool{}
	for k, p := range tr.PrivatePools {
		id, err := truth.PoolID(k)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = p
	}
	return out
}

// checkPools holds a document's private pools to torch's, to the byte.
func checkPools(t *testing.T, where string, got []report.PrivatePoolJSON, want map[[2]int64]truth.PrivatePool) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d private pools, torch held %d", where, len(got), len(want))
	}
	for i, p := range got {
		w, ok := want[p.Pool]
		if !ok {
			t.Errorf("%s: pool %v, which torch did not hold", where, p.Pool)
			continue
		}
		if p.Reserved != w.Reserved || p.Allocated != w.Allocated || p.Segments != w.Segments {
			t.Errorf("%s: pool %v = %d reserved, %d allocated in %d segments; torch: %d, %d in %d",
				where, p.Pool, p.Reserved, p.Allocated, p.Segments, w.Reserved, w.Allocated, w.Segments)
		}
		if p.Free != p.Reserved-p.Allocated {
			t.Errorf("%s: pool %v free %d, want reserved − allocated %d", where, p.Pool, p.Free, p.Reserved-p.Allocated)
		}
		if i > 0 && (got[i-1].Pool[0] > p.Pool[0] || got[i-1].Pool[0] == p.Pool[0] && got[i-1].Pool[1] >= p.Pool[1]) {
			t.Errorf("%s: pools not ordered by id: %v before %v", where, got[i-1].Pool, p.Pool)
		}
	}
}

// TestPrivatePoolsJSONMatchTruth: the private pools at the end in
// 'summary --json' and in 'frag --json' are torch's (memory_snapshot()
// read at the end: each pool's reserved and allocated bytes and segments,
// to the byte, and their sum private_pool_reserved); the two documents
// agree at the peak too, and a fixture with no CUDA graph has none.
func TestPrivatePoolsJSONMatchTruth(t *testing.T) {
	for _, fixture := range []string{"workloads/reduce-overhead", "workloads/cuda-graph", "plain-adamw-fused"} {
		t.Run(fixture, func(t *testing.T) {
			tr := readFixtureTruth(t, fixture)
			want := privatePoolsTruth(t, tr)
			if fixture != "plain-adamw-fused" && len(want) == 0 {
				t.Fatal("truth.json holds no private pools")
			}
			snap := filepath.Join("../../fixtures", fixture, "snapshot.pickle")
			var sum report.SummaryDoc
			runJSON(t, &sum, "summary", "--json", snap)
			var frag struct {
				Files []report.FragFileJSON `json:"files"`
			}
			runJSON(t, &frag, "frag", "--json", snap)
			d := sum.Files[0].Devices[0]
			checkPools(t, "summary private_pools_at_end", d.PrivatePoolsAtEnd, want)
			var reserved int64
			for _, p := range d.PrivatePoolsAtEnd {
				reserved += p.Reserved
			}
			if reserved != tr.PrivatePoolReserved {
				t.Errorf("private pools reserve %d at the end, torch's private_pool_reserved %d", reserved, tr.PrivatePoolReserved)
			}
			moments := map[string]report.FragJSON{}
			for _, m := range frag.Files[0].Devices[0].Moments {
				moments[m.Label] = m
			}
			checkPools(t, "frag end private_pools", moments["end"].PrivatePools, want)
			if a, b := fmt.Sprint(moments["peak"].PrivatePools), fmt.Sprint(d.PrivatePoolsAtPeak); a != b {
				t.Errorf("at the peak, frag's private pools %s, summary's %s", a, b)
			}
			for _, m := range moments {
				var pools int64
				for _, p := range m.PrivatePools {
					pools += p.Reserved
				}
				// Free is counted outside the private pools: it cannot exceed what
				// the other segments reserve beyond their active blocks.
				if m.Free > m.Reserved-pools {
					t.Errorf("frag at %s: free %d, more than the %d reserved outside the private pools", m.Label, m.Free, m.Reserved-pools)
				}
			}
		})
	}
}
