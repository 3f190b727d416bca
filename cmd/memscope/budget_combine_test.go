package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestBudgetCombination: when no predicted fix fits the device alone,
// budget offers the cheapest run of them that does, as advise does for a
// snapshot: Llama 3.2 1B at batch 24 × 4096 on an H100. Its flags, given
// to budget, predict the run's own peak; the run leaves out a fix that is
// another way of one already in it; at batch 4, where a fix fits alone,
// there is no combination.
func TestBudgetCombination(t *testing.T) {
	type fit struct {
		Memory  int64  `json:"memory"`
		Need    int64  `json:"need"`
		Verdict string `json:"verdict"`
	}
	var doc struct {
		Result struct {
			Phases []struct {
				Bytes int64 `json:"bytes"`
			} `json:"phases"`
			Peak    int   `json:"peak_phase"`
			Outside int64 `json:"outside"`
			Fixes   []struct {
				Change  string `json:"change"`
				NewPeak int64  `json:"new_peak"`
			} `json:"fixes"`
			Combination *struct {
				Fixes   []int    `json:"fixes"`
				Names   []string `json:"names"`
				NewPeak int64    `json:"new_peak"`
				Fit     fit      `json:"fit"`
			} `json:"combination"`
		} `json:"result"`
	}
	budgetDoc := func(args ...string) {
		t.Helper()
		doc.Result.Combination = nil
		r := runMemscope(append([]string{"budget", "--json", "--config", "../../budget/testdata/llama-3.2-1b.json", "--seq", "4096", "--device-memory", "H100"}, args...)...)
		if r.err != nil {
			t.Fatalf("budget %v: %v\n%s", args, r.err, r.stderr)
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatal(err)
		}
	}
	budgetDoc("--batch", "24")
	c := doc.Result.Combination
	if c == nil {
		t.Fatal("budget at batch 24 on an H100: no combination")
	}
	for _, f := range doc.Result.Fixes {
		if f.NewPeak+doc.Result.Outside <= c.Fit.Memory {
			t.Errorf("fix %s fits alone (%d + %d ≤ %d), yet a combination is offered", f.Change, f.NewPeak, doc.Result.Outside, c.Fit.Memory)
		}
	}
	if c.Fit.Verdict != "fits" || c.Fit.Need != c.NewPeak+doc.Result.Outside || len(c.Fixes) < 2 || len(c.Names) != len(c.Fixes) {
		t.Errorf("combination = %+v, want two or more fixes that fit, need = new peak + %d outside", c, doc.Result.Outside)
	}
	var flags []string
	seen := map[string]bool{}
	for _, i := range c.Fixes {
		ch := doc.Result.Fixes[i].Change
		flags = append(flags, strings.Fields(ch)...)
		name := strings.Fields(ch)[0]
		if seen[name] {
			t.Errorf("the combination sets %s twice: %v", name, flags)
		}
		seen[name] = true
	}
	want := c.NewPeak
	budgetDoc(append([]string{"--batch", "24"}, flags...)...)
	if got := doc.Result.Phases[doc.Result.Peak].Bytes; got != want {
		t.Errorf("budget %s predicts a peak of %d, the combination said %d", strings.Join(flags, " "), got, want)
	}

	r := runMemscope("budget", "--config", "../../budget/testdata/llama-3.2-1b.json", "--seq", "4096", "--device-memory", "H100", "--batch", "24")
	if line := fmt.Sprintf("  [%s]\n", strings.Join(flags, " ")); !strings.Contains(r.stdout, "no single fix fits H100") || !strings.Contains(r.stdout, line) {
		t.Errorf("budget text lacks the combination and its flags %q:\n%s", line, r.stdout)
	}
	budgetDoc("--batch", "4")
	if doc.Result.Combination != nil {
		t.Errorf("budget at batch 4: a combination %+v though fixes fit alone", doc.Result.Combination)
	}
}
