package attribution

import "github.com/memscope/memscope/allocator"

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
	// Err is set when the model cannot run the trace (a private pool,
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
	for _, w := range d.whatIfs(oomSettings) {
		os := OOMSetting{Conf: w.conf, FailsAt: -1, Err: w.err}
		if w.err == nil {
			os.PeakReserved = w.res.PeakReserved
			os.Served = w.res.OOM == nil || w.res.OOM.Index > last
			if !os.Served {
				os.FailsAt = w.res.OOM.Index
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
// shows); nil when the recorded settings cannot be read.
func (d *Device) whatIfs(confs []string) []whatIf {
	s := d.an.Snapshot
	base, err := allocator.SettingsFromSnapshot(s.Settings)
	if err != nil {
		return nil
	}
	rc, rerr := allocator.NewRecording(s, d.Device, allocator.WhatIfOptions{Timeline: d.Timeline}) // replayed once for every conf
	var out []whatIf
	for _, conf := range confs {
		set := base
		if err := set.ApplyConf(conf); err != nil {
			continue
		}
		w := whatIf{conf: conf, err: rerr}
		if rerr == nil {
			w.res, w.err = rc.WhatIf(set)
		}
		out = append(out, w)
	}
	return out
}
