package attribution

import "sort"

// SettingAdvice is what the allocator model says one allocator setting
// would reserve over the device's same requests (allocator.WhatIf, with
// the capacity the recording shows): a fix of reserved memory, not of
// allocated bytes.
type SettingAdvice struct {
	Conf string // PYTORCH_CUDA_ALLOC_CONF, on top of the recorded settings
	// PeakReserved is the what-if's reserved peak, Recorded the recorded
	// one; OOM is true when the what-if ran out of memory where the
	// recording did not (its peak is then up to there).
	PeakReserved, Recorded int64
	OOM                    bool
	// Low and High bound PeakReserved where the recording began late and
	// its start state was re-made under the setting; Unknown is that start
	// state's cached bytes, whose history the trace does not hold
	// (allocator.Outcome). All 0 otherwise.
	Low, High, Unknown int64
}

// adviseSettings are the allocator settings advise simulates.
var adviseSettings = []string{"expandable_segments:True", "max_split_size_mb:128", "garbage_collection_threshold:0.6,max_split_size_mb:256"}

// SimulateSettings is simulateSettings for a command that asks for it
// (frag --simulate): the allocator settings that lower the device's
// reserved peak over the same requests.
func (d *Device) SimulateSettings() []SettingAdvice { return d.simulateSettings() }

// SimulateSettingsWhy says why SimulateSettings has nothing to say: the
// model could not run the trace, or does not match it; "" when it ran and
// matched.
func (d *Device) SimulateSettingsWhy() string {
	d.simulateSettings()
	return d.sim.why
}

// simulateSettings runs the device's requests under each of adviseSettings
// and keeps those that lower the reserved peak by 1% or more, largest
// saving first; nil when the model cannot run the trace.
func (d *Device) simulateSettings() []SettingAdvice {
	d.sim.once.Do(func() { d.sim.settings, d.sim.why = d.runSettings() })
	return d.sim.settings
}

// runSettings is simulateSettings, run; why says why the model could not
// run the trace, or could not be trusted on it ("" when it could).
func (d *Device) runSettings() ([]SettingAdvice, string) {
	rec := d.Timeline.PeakReserved.Bytes
	// A setting is kept when it saves 1% or more (below); one whose peak
	// rises past that can be stopped there (where nothing can fail later:
	// allocator.WhatIfOptions.Stop), which a recording that began late
	// with its segments already reserved does at its first event.
	saves := func(peak int64) bool { return 100*(rec-peak) >= rec }
	var out []SettingAdvice
	why := ""
	// A setting the recording already runs under is no advice.
	ws := d.whatIfs(adviseSettings, func(peak int64) bool { return !saves(peak) }, true, true)
	if ws == nil {
		return nil, "the recorded allocator settings cannot be read"
	}
	for _, w := range ws {
		if w.err != nil {
			return nil, w.err.Error()
		}
		if w.res.Replay != nil {
			d.sim.rep.CompareAndSwap(nil, w.res.Replay) // the same check for every setting
		}
		if !w.res.Replay.Exact() {
			// The what-ifs stopped at the divergence: no setting is
			// advised from a model that does not follow the recording.
			return nil, "the model does not match the recording (" + w.res.Replay.String() + ")"
		}
		oom := w.res.OOM != nil && len(d.OOMs) == 0
		if !oom && !saves(w.res.PeakReserved) {
			continue // saves under 1%
		}
		sa := SettingAdvice{Conf: w.conf, PeakReserved: w.res.PeakReserved, Recorded: rec, OOM: oom}
		if r := w.res; r.StartPlaced {
			sa.Low, sa.High, sa.Unknown = r.PeakReservedLow, r.PeakReservedHigh, r.StartUnknown
		}
		out = append(out, sa)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].PeakReserved < out[j].PeakReserved }) // largest saving first
	return out, why
}
