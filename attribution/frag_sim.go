package attribution

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/memscope/memscope/allocator"
)

// This file decides the fragmentation verdict at the peak from the
// allocator model where it can run: fragmentation is memory a different
// allocator would not have reserved for the same requests, so the model's
// answer (allocator.WhatIf under adviseSettings, the runs advise and frag
// --simulate show) is the verdict, and the free blocks alone decide only
// where the model cannot run, saying so.

// simulation is the model's run of adviseSettings over a device, made
// once (Device.simulateSettings).
type simulation struct {
	once     sync.Once
	settings []SettingAdvice
	why      string // why the model could not run or be trusted; "" when it could
	// rep is the check of the recorded decisions the what-ifs rested on,
	// once they have run (AllocRetries reads its count from it).
	rep atomic.Pointer[allocator.ReplayReport]
}

// simulatedPeakVerdict decides the peak's fragmentation verdict by the
// model. No setting can save more than the recorded peak of reserved less
// the peak of requested bytes (a what-if reserves at least what is live);
// where that is under healthyShare of the peak and the free blocks find
// no problem, nothing the model says could contradict them and it is not
// run (summary stays as fast as the free blocks are). Otherwise: a
// setting that lowers the reserved peak by healthyShare or more makes the
// free memory fragmentation (a problem, that setting first to try); none
// makes it healthy or cached whatever its holes look like.
func (d *Device) simulatedPeakVerdict() {
	if len(d.Frag) == 0 {
		return
	}
	f := d.Frag[0]
	v := &f.Verdict
	if v.Kind == FragNothingReserved {
		return
	}
	tl := d.Timeline
	rec := tl.PeakReserved.Bytes
	if !v.Problem() && float64(rec-tl.PeakRequested.Bytes) < healthyShare*float64(rec) {
		return
	}
	sets := d.simulateSettings()
	if d.sim.why != "" {
		v.Static = d.sim.why
		return
	}
	if tl.Start.Reserved > 0 && 2*tl.Start.Reserved > rec {
		// Most of the peak predates the recording: its layout is the
		// recorded settings', which the model keeps (simulatedVerdicts).
		v.Static = "most of the peak's reserved memory predates the recording, laid out by the recorded settings"
		return
	}
	v.Simulated, v.Recorded = true, rec
	v.Best, v.BestPeak = "", 0
	for _, s := range sets {
		if !s.OOM {
			v.Best, v.BestPeak = s.Conf, s.PeakReserved
			break
		}
	}
	saves := v.Best != "" && float64(rec-v.BestPeak) >= healthyShare*float64(rec)
	switch {
	case saves:
		v.Kind, v.Severity = FragFragmented, SeverityProblem
		v.Try = suggestionsOf(v.Best)
	case v.Share < healthyShare:
		v.Kind, v.Severity, v.Try = FragHealthy, SeverityOK, nil
	default:
		v.Kind, v.Severity = FragCached, SeverityOK
		v.Try = []Suggestion{{Setting: GarbageCollectionThreshold}}
	}
}

// suggestionsOf reads a PYTORCH_CUDA_ALLOC_CONF of adviseSettings as the
// suggestions it sets together.
func suggestionsOf(conf string) []Suggestion {
	var out []Suggestion
	for _, part := range strings.Split(conf, ",") {
		out = append(out, suggestionOf(part))
	}
	return out
}
