package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/units"
)

const (
	leakSnap  = "../../fixtures/leak/snapshot.pickle"
	mlpSnap   = "../../fixtures/mlp-adamw/snapshot.pickle"
	oomSnap   = "../../fixtures/oom/snapshot.pickle"
	llamaSnap = "../../fixtures/llama-bf16/snapshot.pickle"
)

// TestCheck: check exits 1 naming the broken limit, and 0 when limits hold.
func TestCheck(t *testing.T) {
	tr := readFixtureTruth(t, "mlp-adamw")
	peak := tr.Window.MaxAllocated
	leak := readFixtureTruth(t, "leak").Leak.BytesPerStep
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"peak over", []string{"check", "--max-peak", itoa(peak - 1), mlpSnap}, 1, "exceeds --max-peak"},
		{"peak at limit", []string{"check", "--max-peak", itoa(peak), mlpSnap}, 0, "ok"},
		{"leak", []string{"check", "--max-leak", "0", leakSnap}, 1, "leak of " + units.Bytes(leak) + " per step"},
		{"no leak", []string{"check", "--max-leak", "0", mlpSnap}, 0, "ok"},
		{"leak under limit", []string{"check", "--max-leak", itoa(2 * leak), leakSnap}, 0, "ok"},
		{"no limit", []string{"check", mlpSnap}, 2, "no limit given"},
		{"bad size", []string{"check", "--max-peak", "40G", mlpSnap}, 2, "--max-peak"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runMemscope(tt.args...)
			if r.code != tt.code {
				t.Fatalf("memscope %v: exit %d, want %d (err %v)", tt.args, r.code, tt.code, r.err)
			}
			got := r.stdout
			if r.err != nil {
				got = r.err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("memscope %v = %q, want it to mention %q", tt.args, got, tt.want)
			}
		})
	}
}

func TestPeakJSON(t *testing.T) {
	r := runMemscope("peak", "--json", "--top", "-1", mlpSnap)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var doc struct {
		Schema string `json:"schema"`
		Kind   string `json:"kind"`
		Files  []struct {
			Devices []struct {
				Numbers struct {
					Allocated int64 `json:"allocated"`
				} `json:"numbers"`
				Sites []struct {
					Bytes int64 `json:"bytes"`
				} `json:"sites"`
				Categories map[string]int64 `json:"categories"`
			} `json:"devices"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	tr := readFixtureTruth(t, "mlp-adamw")
	d := doc.Files[0].Devices[0]
	if doc.Schema != "memscope/v1" || doc.Kind != "peak" || d.Numbers.Allocated != tr.Window.MaxAllocated {
		t.Fatalf("peak JSON = %s %s allocated %d, want memscope/v1 peak %d", doc.Schema, doc.Kind, d.Numbers.Allocated, tr.Window.MaxAllocated)
	}
	var sites, cats int64
	for _, s := range d.Sites {
		sites += s.Bytes
	}
	for _, v := range d.Categories {
		cats += v
	}
	if sites != tr.Window.MaxAllocated || cats != tr.Window.MaxAllocated {
		t.Errorf("Σ sites = %d, Σ categories = %d; want both %d (peak allocated)", sites, cats, tr.Window.MaxAllocated)
	}
}

func TestAnalysisCommandsRun(t *testing.T) {
	for _, args := range [][]string{
		{"peak", "--tree", llamaSnap},
		{"peak", "--at", "step:2:forward", llamaSnap},
		{"peak", "--at", "end", "--json", mlpSnap},
		{"peak", "--at", "1ms", mlpSnap},
		{"leaks", leakSnap},
		{"leaks", "--json", leakSnap},
		{"frag", oomSnap},
		{"frag", "--json", oomSnap},
		{"oom", oomSnap},
		{"oom", "--json", oomSnap},
		{"diff", mlpSnap, leakSnap},
		{"diff", "--json", mlpSnap, leakSnap},
	} {
		r := runMemscope(args...)
		if r.err != nil || r.stdout == "" {
			t.Errorf("memscope %v: err %v, %d bytes of output", args, r.err, len(r.stdout))
		}
		if strings.Contains(strings.Join(args, " "), "--json") && !json.Valid([]byte(r.stdout)) {
			t.Errorf("memscope %v: output is not JSON", args)
		}
	}
	if r := runMemscope("peak", "--at", "oom", mlpSnap); r.code != 2 {
		t.Errorf("peak --at oom on a run without OOM: exit %d, want 2", r.code)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
