package attribution

import (
	"testing"

	"github.com/memscope/memscope/trace"
)

// TestAt: peak's moment on every device, joined with the trace of the same
// run (the operators holding the peak, as JoinTrace and ByOp give them) or
// read from its export_memory_timeline file at the moment's time.
func TestAt(t *testing.T) {
	f := fixtureByName(t, "llama-profiled")
	tr, err := trace.Open("../fixtures/llama-profiled/trace.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	prof, err := trace.OpenProfile("../fixtures/llama-profiled/memory_timeline.json")
	if err != nil || prof.Timeline == nil {
		t.Fatalf("OpenProfile(memory_timeline.json) = %v, %v; want a timeline", prof, err)
	}
	tl := prof.Timeline
	for _, tt := range []struct {
		name string
		tr   *trace.Trace
		tl   *trace.CategoryTimeline
	}{{"alone", nil, nil}, {"trace", tr, nil}, {"timeline", nil, tl}} {
		got, err := f.an.At("peak", tt.tr, tt.tl)
		if err != nil || len(got) != len(f.an.Devices) {
			t.Fatalf("%s: At(peak) = %d devices, %v; want %d, nil", tt.name, len(got), err, len(f.an.Devices))
		}
		for i, da := range got {
			d := f.an.Devices[i]
			m, _ := d.Moment("peak")
			if da.Device != d || da.Moment.Index != m.Index || da.Moment.Allocated != m.Allocated {
				t.Errorf("%s: At(peak)[%d] = device %d at event %d (%d bytes), want %d at %d (%d)", tt.name, i,
					da.Device.Device, da.Moment.Index, da.Moment.Allocated, d.Device, m.Index, m.Allocated)
			}
			if (da.Join != nil) != (tt.tr != nil) {
				t.Errorf("%s: At(peak)[%d].Join = %v, want one only with a trace", tt.name, i, da.Join)
			}
			if tt.tr != nil {
				ops, covered := d.JoinTrace(tr).ByOp(m)
				if len(da.Ops) != len(ops) || da.OpsCovered != covered || len(ops) == 0 || da.Ops[0] != ops[0] {
					t.Errorf("%s: At(peak)[%d] = %d op rows, %.3f covered; want JoinTrace's ByOp: %d, %.3f", tt.name, i, len(da.Ops), da.OpsCovered, len(ops), covered)
				}
			}
			if want := tl.Sample(m.TimeUS); tt.tl != nil && da.Sample != want {
				t.Errorf("%s: At(peak)[%d].Sample = %+v, want %+v", tt.name, i, da.Sample, want)
			}
		}
	}
	if _, err := f.an.At("step:100000:forward", nil, nil); err == nil {
		t.Error("At(step:100000:forward): no error")
	}
}

// TestAnalysisCheck: the limits every device breaks, device by device.
func TestAnalysisCheck(t *testing.T) {
	an := analyzeSynth(t, onDevices(4*mib, 0, 1))
	lim := NoLimits
	lim.MaxPeak = mib
	got := an.Check(lim)
	if len(got) != 2 || got[0].Kind != BreachPeak || got[0].Device != 0 || got[1].Device != 1 || got[0].Value != 4*mib || got[0].Limit != mib {
		t.Errorf("Check(max peak 1 MiB) on two devices of 4 MiB = %+v, want a peak breach of 4 MiB on device 0, then 1", got)
	}
	lim.MaxPeak = 4 * mib
	if got := an.Check(lim); got != nil {
		t.Errorf("Check(max peak 4 MiB) = %+v, want nil", got)
	}
}

// TestJoinProfile: a trace joins by operator as JoinTrace does, a memory
// timeline as JoinTimeline does, an empty profile not at all.
func TestJoinProfile(t *testing.T) {
	f := fixtureByName(t, "llama-profiled")
	tr, err := trace.OpenProfile("../fixtures/llama-profiled/trace.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := trace.OpenProfile("../fixtures/llama-profiled/memory_timeline.json")
	if err != nil {
		t.Fatal(err)
	}
	none := Summarize(f.an, 5)
	none.JoinProfile(f.an, "", trace.Profile{}, 5)
	byTrace, wantTrace := Summarize(f.an, 5), Summarize(f.an, 5)
	byTrace.JoinProfile(f.an, "trace.json.gz", tr, 5)
	wantTrace.JoinTrace(f.an, tr.Trace, 5)
	byTL, wantTL := Summarize(f.an, 5), Summarize(f.an, 5)
	byTL.JoinProfile(f.an, "memory_timeline.json", tl, 5)
	wantTL.JoinTimeline("memory_timeline.json", tl.Timeline)
	if byTL.TimelineSource != "memory_timeline.json" || none.TimelineSource != "" {
		t.Errorf("TimelineSource = %q (timeline), %q (none); want memory_timeline.json, empty", byTL.TimelineSource, none.TimelineSource)
	}
	for i := range none.Devices {
		n, a, b, c, d := none.Devices[i], byTrace.Devices[i], wantTrace.Devices[i], byTL.Devices[i], wantTL.Devices[i]
		if n.Joined || n.Ops != nil || n.Timeline != nil {
			t.Errorf("device %d: an empty profile joined %v, %d ops, timeline %v", n.Device, n.Joined, len(n.Ops), n.Timeline)
		}
		if !a.Joined || len(a.Ops) != len(b.Ops) || len(a.Ops) == 0 || a.Ops[0] != b.Ops[0] || a.OpsCovered != b.OpsCovered || a.Timeline != nil {
			t.Errorf("device %d: JoinProfile(trace) = %d ops, %.3f covered; want JoinTrace's %d, %.3f", a.Device, len(a.Ops), a.OpsCovered, len(b.Ops), b.OpsCovered)
		}
		if c.Timeline == nil || *c.Timeline != *d.Timeline || c.Joined {
			t.Errorf("device %d: JoinProfile(timeline) = %+v, want JoinTimeline's %+v", c.Device, c.Timeline, d.Timeline)
		}
	}
}
