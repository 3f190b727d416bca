package report

import (
	"strings"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
)

// Notes are the explanations 'memscope summary' prints beside a device's
// numbers that a page showing the device must give too, in the same
// words: why its peak is the snapshot's end state (no allocation history
// recorded, or a trace of one entry: there is no timeline to draw), and why
// a profiler trace given with it joined nothing (no memory events on the
// device, or times that do not overlap the recording). Empty when there is
// nothing to explain; the warnings are apart, in DeviceSummary.Warnings.
func Notes(d *attribution.DeviceSummary) []string {
	out := []string{}
	if note := endStateNote(d); note != "" {
		out = append(out, "peak allocated "+units.Bytes(d.PeakAllocated.Bytes)+" "+note)
	}
	if d.Joined {
		var b strings.Builder
		joinWindowsText(&errWriter{w: &b}, d.Join)
		if s := strings.Join(strings.Fields(b.String()), " "); s != "" {
			out = append(out, "profiler trace: "+s)
		}
	}
	return out
}
