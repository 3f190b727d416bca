package attribution

import (
	"fmt"
	"strings"
	"testing"

	sg "github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	seg = int64(0x7f0000000000)
)

// analyzeSynth decodes a hand-built snapshot and analyses every device.
func analyzeSynth(t *testing.T, s *sg.Synth) *Analysis {
	t.Helper()
	snap, err := s.Decode("synth.pickle")
	if err != nil {
		t.Fatal(err)
	}
	return Analyze(snap, Options{Device: -1})
}

// harnessRun is a run of steps marked like the capture harness's, each
// step allocating A and B in forward and freeing them in backward (6
// entries), in one 20 MiB segment reserved before recording. keepFrom drops
// the trace's first entries, as a full ring buffer does; the annotations
// all survive.
func harnessRun(steps, keepFrom int, settings map[string]any) *sg.Synth {
	var trace, annots []map[string]any
	annot := func(stage, name string, us int64) map[string]any {
		return map[string]any{"stage": stage, "name": name, "device": 0, "time_us": us}
	}
	a, b := seg, seg+4*mib
	for s := range steps {
		base := int64(1_000_000 + 1000*s)
		for _, ph := range []struct {
			name  string
			start int64
		}{{"forward", 0}, {"backward", 500}} {
			name := fmt.Sprintf("memscope/step/%d/%s", s, ph.name)
			annots = append(annots, annot("START", name, base+ph.start), annot("END", name, base+ph.start+400))
		}
		trace = append(trace,
			sg.Ev("alloc", a, 4*mib, base+100), sg.Ev("alloc", b, 2*mib, base+200),
			sg.Ev("free_requested", b, 2*mib, base+600), sg.Ev("free_completed", b, 2*mib, base+601),
			sg.Ev("free_requested", a, 4*mib, base+700), sg.Ev("free_completed", a, 4*mib, base+701))
	}
	return &sg.Synth{
		Segments:    []map[string]any{sg.Seg(seg, sg.Blk(20*mib, 0, "inactive"))},
		Traces:      [][]map[string]any{trace[keepFrom:]},
		Settings:    settings,
		Annotations: annots,
	}
}

// TestLostHistory: a wrapped ring buffer's loss is estimated from the steps
// whose annotations outlived their entries — entries per whole step ×
// steps lost, plus the cut part of the first surviving step — and is
// exactly what was dropped here; a late start or an unmarked trace gets no
// estimate.
func TestLostHistory(t *testing.T) {
	// Five steps of 6 entries; the buffer kept the last 22: step 0 and the
	// first two entries of step 1 are gone (8 entries).
	full := map[string]any{"trace_alloc_overflowed": true, "trace_alloc_max_entries": 22}
	an := analyzeSynth(t, harnessRun(5, 8, full))
	d := an.Devices[0]
	want := Lost{Entries: 8, Steps: 1, CutStep: 1, PerStep: 6, Complete: 3}
	if d.Lost == nil || *d.Lost != want {
		t.Fatalf("Lost = %+v, want %+v", d.Lost, want)
	}
	wrapped := false
	for _, w := range d.Warnings {
		wrapped = wrapped || w.Kind == snapshot.WarnWrapped
	}
	if !wrapped {
		t.Errorf("warnings = %v, want the replay's wrapped warning", d.Warnings)
	}
	// The summary carries the estimate beside the replay's warnings
	// (report/warnings_test.go's TestLostText words it).
	if sd := Summarize(an, 5).Devices[0]; sd.Lost != d.Lost || len(sd.Warnings) != len(d.Warnings) {
		t.Errorf("summary Lost = %+v, %d warnings; want %+v, %d", sd.Lost, len(sd.Warnings), d.Lost, len(d.Warnings))
	}

	for name, s := range map[string]*sg.Synth{
		"a whole step lost, cut at a step boundary": harnessRun(5, 12, map[string]any{"trace_alloc_overflowed": true}),
		"not wrapped": harnessRun(5, 8, map[string]any{"trace_alloc_overflowed": false}),
	} {
		d := analyzeSynth(t, s).Devices[0]
		switch name {
		case "not wrapped":
			if d.Lost != nil {
				t.Errorf("%s: Lost = %+v, want none", name, d.Lost)
			}
		default:
			// Cut after step 1's last entry: steps 0 and 1 lost whole.
			if want := (Lost{Entries: 12, Steps: 2, CutStep: -1, PerStep: 6, Complete: 3}); d.Lost == nil || *d.Lost != want {
				t.Errorf("%s: Lost = %+v, want %+v", name, d.Lost, want)
			}
		}
	}
}

// TestNoHistory: a state-only snapshot (segments and blocks, empty or no
// device_traces) names its blocks "no history recorded", never "allocated
// before recording".
func TestNoHistory(t *testing.T) {
	segs := []map[string]any{sg.Seg(seg, sg.Blk(4*mib, 4*mib, "active_allocated"), sg.Blk(16*mib, 0, "inactive"))}
	for name, s := range map[string]*sg.Synth{
		"empty device_traces": {Segments: segs, Traces: [][]map[string]any{{}}},
		"no device_traces":    {Segments: segs},
	} {
		t.Run(name, func(t *testing.T) {
			an := analyzeSynth(t, s)
			d := an.Devices[0]
			sum := Summarize(an, 5).Devices[0]
			if len(sum.TopSites) != 1 || sum.TopSites[0].Label != "(no history recorded)" || sum.TopSites[0].Bytes != 4*mib {
				t.Errorf("top sites = %+v, want 4 MiB at (no history recorded)", sum.TopSites)
			}
			tree := d.UserTree(d.Peak, 0, 10)
			if len(tree.Children) != 1 || tree.Children[0].Name != "(no history recorded)" {
				t.Errorf("tree children = %+v, want one named (no history recorded)", tree.Children)
			}
			for _, txt := range append(findingLabels(d), warningTexts(d)...) {
				if strings.Contains(txt, "before recording") {
					t.Errorf("says %q", txt)
				}
			}
			if l := d.Leak; l.Reason != LeakNoHistory || l.Severity() != SeverityNoVerdict {
				t.Errorf("Leak = reason %d, severity %d; want LeakNoHistory, no verdict", l.Reason, l.Severity())
			}
		})
	}
}

// findingLabels are the site labels the findings name.
func findingLabels(d *Device) []string {
	var out []string
	for _, f := range d.Findings() {
		switch {
		case f.Leak != nil && len(f.Leak.Sites) > 0:
			out = append(out, f.Leak.Sites[0].Label)
		case f.OOM != nil:
			out = append(out, f.OOM.SiteLabel)
		}
	}
	return out
}

func warningTexts(d *Device) []string {
	var out []string
	for _, w := range d.Warnings {
		out = append(out, w.Message)
	}
	return out
}

// TestLeakHint: with only two steady steps there is no leak verdict, but a
// hint of how the floor moved between them: 2 MiB per step where each step
// keeps a 2 MiB block alive; not at all in llama-bf16, whose floor torch
// measured equal after steps 2 and 3.
func TestLeakHint(t *testing.T) {
	var trace, annots []map[string]any
	for s := range int64(3) {
		base := 1_000_000 + 1000*s
		for _, ph := range []string{"forward", "backward"} {
			name := fmt.Sprintf("memscope/step/%d/%s", s, ph)
			annots = append(annots, map[string]any{"stage": "START", "name": name, "device": 0, "time_us": base},
				map[string]any{"stage": "END", "name": name, "device": 0, "time_us": base + 400})
			base += 500
		}
		base -= 1000
		keep := seg + 8*mib + 2*mib*s
		trace = append(trace, sg.Ev("alloc", seg, 4*mib, base+100), sg.Ev("alloc", keep, 2*mib, base+200),
			sg.Ev("free_requested", seg, 4*mib, base+600), sg.Ev("free_completed", seg, 4*mib, base+601))
	}
	live := func() map[string]any { return sg.Blk(2*mib, 2*mib, "active_allocated") }
	an := analyzeSynth(t, &sg.Synth{
		Segments: []map[string]any{sg.Seg(seg, sg.Blk(8*mib, 0, "inactive"), live(), live(), live(), sg.Blk(6*mib, 0, "inactive"))},
		Traces:   [][]map[string]any{trace}, Annotations: annots,
	})
	if l := an.Devices[0].Leak; l.Found || l.Reason != LeakFewSteps || !l.TwoSteps || l.Hint != 2*mib {
		t.Errorf("Leak = found %v, reason %d, two steps %v, hint %d; want no verdict, LeakFewSteps, a 2 MiB hint",
			l.Found, l.Reason, l.TwoSteps, l.Hint)
	}

	for _, f := range loadFixtures(t) {
		if f.name != "llama-bf16" {
			continue
		}
		floors := map[int]int64{}
		for _, p := range f.truth.Phases {
			floors[p.Step] = p.AllocatedEnd // the last phase of each step is last
		}
		if floors[2] != floors[3] {
			t.Fatalf("llama-bf16 truth: floors after steps 2 and 3 are %d and %d", floors[2], floors[3])
		}
		if l := f.an.Devices[0].Leak; l.Reason != LeakFewSteps || !l.TwoSteps || l.Hint != floors[3]-floors[2] {
			t.Errorf("llama-bf16 Leak = reason %d, two steps %v, hint %d; want LeakFewSteps, a hint of %d (torch's floors)",
				l.Reason, l.TwoSteps, l.Hint, floors[3]-floors[2])
		}
	}
}
