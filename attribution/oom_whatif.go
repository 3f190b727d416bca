package attribution

import (
	"slices"
	"strings"

	"github.com/memscope/memscope/allocator"
)

// OOMSetting is what the allocator model says one setting would have done
// with the device's recorded requests, under the same capacity as the
// recorded run (allocator.WhatIf): whether the out-of-memory events would
// have been served, and the reserved peak.
type OOMSetting struct {
	Conf string // the PYTORCH_CUDA_ALLOC_CONF tried, on top of the recorded settings
	// Served is true when every request up to and including the device's
	// last recorded OOM was served; FailsAt is the event the what-if could
	// not serve otherwise (-1 when served).
	Served  bool
	FailsAt int
	// PeakReserved is the reserved peak of the what-if up to where it
	// stopped.
	PeakReserved int64
	// Window is true when the recording began late: the what-if starts
	// from the segments rebuilt at the recording's start, laid out as the
	// recorded settings laid them out, and covers the recorded window only.
	Window bool
	// StartPlaced is true when that start state was re-made under this
	// setting (it is not the recorded one), StartUnknown its cached bytes
	// whose history the trace does not hold (allocator.Outcome). Uncertain
	// is true when the what-if served every request but would not fit the
	// capacity had the program kept all of that cached memory: it is then
	// not counted as served (Served is false, FailsAt -1).
	StartPlaced  bool
	StartUnknown int64
	Uncertain    bool
	// Err is set when the model cannot run the trace (cudaMallocAsync,
	// skip_actions…): nothing is said for this setting then.
	Err error
}

// oomSettings are the allocator settings the OOM post-mortem simulates.
var oomSettings = []string{"expandable_segments:True", "max_split_size_mb:128", "roundup_power2_divisions:4"}

// simulateOOMs runs the device's recorded requests under each setting of
// oomSettings, with the capacity taken from the recorded OOM, for the OOM
// post-mortem. It is run only for devices with an OOM.
func (d *Device) simulateOOMs() []OOMSetting {
	last := d.OOMs[len(d.OOMs)-1].Index
	var out []OOMSetting
	for _, w := range d.whatIfs(oomSettings, nil, false, false) {
		os := OOMSetting{Conf: w.conf, FailsAt: -1, Err: w.err}
		if w.err == nil {
			r := w.res
			os.PeakReserved, os.Window = r.PeakReserved, r.Window
			os.StartPlaced, os.StartUnknown = r.StartPlaced, r.StartUnknown
			os.Served = r.OOM == nil || r.OOM.Index > last
			if !os.Served {
				os.FailsAt = r.OOM.Index
			} else if r.StartPlaced && r.Capacity > 0 && r.PeakReservedHigh > r.Capacity {
				os.Served, os.Uncertain = false, true
			}
		}
		out = append(out, os)
	}
	return out
}

// whatIf is one setting's what-if over a device's recorded requests.
type whatIf struct {
	conf string
	res  *allocator.Outcome
	err  error
}

// whatIfs runs the device's recorded requests under each conf applied to
// the recorded settings (allocator.WhatIf, the capacity the recording
// shows); nil when the recorded settings cannot be read. With changes, a
// conf the recorded settings already hold is left out; with exact, the
// what-ifs stop at the check's first divergence (their answers are kept
// only where the model matches the recording).
func (d *Device) whatIfs(confs []string, stop func(peakReserved int64) bool, changes, exact bool) []whatIf {
	s := d.an.Snapshot
	base, err := allocator.SettingsFromSnapshot(s.Settings)
	if err != nil {
		return nil
	}
	var out []whatIf
	var sets []allocator.Settings
	for _, conf := range confs {
		set := base
		if err := set.ApplyConf(conf); err != nil || changes && set == base {
			continue
		}
		out = append(out, whatIf{conf: conf})
		sets = append(sets, set)
	}
	if len(sets) == 0 {
		return out
	}
	rc, rerr := allocator.NewRecording(s, d.Device, allocator.WhatIfOptions{Timeline: d.Timeline, Stop: stop, StopInexact: exact}) // replayed once for every conf
	if rerr != nil {
		for i := range out {
			out[i].err = rerr
		}
	} else {
		res, errs := rc.WhatIfs(sets)
		for i := range out {
			out[i].res, out[i].err = res[i], errs[i]
		}
	}
	return out
}

// simulatedVerdicts decides each OOM's verdict, and the fragmentation
// verdict of its moment, by the simulation where the model ran
// expandable_segments:True over the whole run: fragmentation when that
// defragmented allocator served the request under the same capacity,
// capacity when it did not. The settings that served it, lowest reserved
// peak first, are the ones to try. A recording that began late with more
// than half of the first OOM's reserved memory already reserved leaves the
// free blocks to decide: its segments from before the recording keep the
// layout the recorded settings gave them, so the model cannot say what
// expandable segments would have made of them.
func (d *Device) simulatedVerdicts() {
	// A late start is trusted when what predates it is at most half of
	// what was reserved at the first OOM: the layout the recorded settings
	// gave those segments then decides little.
	lateOK := 2*d.Timeline.Start.Reserved <= d.OOMs[0].Reserved
	i := slices.IndexFunc(d.OOMSettings, func(s OOMSetting) bool {
		return s.Conf == oomSettings[0] && s.Err == nil && (!s.Window || lateOK)
	})
	if i < 0 {
		return
	}
	expandable := d.OOMSettings[i]
	for _, o := range d.OOMs {
		served := func(s OOMSetting) bool { return s.Err == nil && !s.Uncertain && (s.FailsAt < 0 || s.FailsAt > o.Index) }
		v := &o.Verdict
		v.Simulated, v.Arithmetic = true, v.Kind
		v.Served, v.NotServed, v.Try, v.Uncertain = nil, nil, nil, nil
		for _, s := range d.OOMSettings {
			if s.Err != nil {
				continue
			}
			if s.Uncertain {
				v.Uncertain = append(v.Uncertain, SimulatedFix{suggestionOf(s.Conf), s.PeakReserved, s.StartUnknown})
				continue
			}
			if served(s) {
				v.Served = append(v.Served, SimulatedFix{suggestionOf(s.Conf), s.PeakReserved, 0})
			} else {
				v.NotServed = append(v.NotServed, suggestionOf(s.Conf))
			}
		}
		slices.SortStableFunc(v.Served, func(a, b SimulatedFix) int { return int(min(max(a.PeakReserved-b.PeakReserved, -1), 1)) })
		for _, f := range v.Served {
			v.Try = append(v.Try, f.Suggestion)
		}
		v.Kind = OOMCapacity
		if served(expandable) {
			v.Kind = OOMFragmentation
		}
		fv := &o.Frag.Verdict
		fv.Simulated, fv.Try = true, v.Try
		fv.Request, fv.Stranded, fv.Headroom = o.Frag.Request, o.Frag.Stranded, o.Frag.Headroom
		_, fv.Largest = o.Frag.pool()
		if v.Kind == OOMFragmentation {
			fv.Kind, fv.Severity = FragRequestFragmented, SeverityProblem
		} else {
			fv.Kind, fv.Severity = FragRequestTooLarge, SeverityOK
		}
	}
}

// suggestionOf reads one of oomSettings as a Suggestion.
func suggestionOf(conf string) Suggestion {
	key, val, _ := strings.Cut(conf, ":")
	for _, s := range []Setting{ExpandableSegments, MaxSplitSize, GarbageCollectionThreshold, RoundupPower2Divisions} {
		if s.String() == key {
			return Suggestion{s, val}
		}
	}
	panic("attribution: oomSettings holds an unknown setting " + conf)
}
