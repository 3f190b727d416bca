package report

import (
	"io"
	"strings"
	"text/tabwriter"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/sweep"
)

// runText writes a capture run's summary: how it ended, its peaks, the
// phases of the measured steps, each rank and the worst one, OOM events.
func runText(w io.Writer, a *sweep.RunSummary) error {
	ew := &errWriter{w: w}
	ew.printf("capture %s", a.Dir)
	if a.Run != nil {
		ew.printf(": %s\n  exit status %d", strings.Join(a.Run.Command, " "), a.Run.ExitCode)
		if a.Run.Signal != "" {
			ew.printf(" (%s)", a.Run.Signal)
		}
		ew.printf(", %.1f s, %s", a.Run.WallS, nouns(len(a.Ranks)+len(a.Missing), "process"))
	}
	ew.printf("\n")
	if len(a.Ranks) == 0 {
		ew.printf("  no process wrote its capture.json\n")
	}
	if len(a.Ranks) > 0 {
		r0 := a.Ranks[0]
		ew.printf("  %s (%s), torch %s; %s", r0.DeviceName, units.Bytes(r0.DeviceTotal), r0.Torch, nouns(r0.Steps, "step"))
		if len(r0.MeasureSteps) == 2 {
			ew.printf(", phase peaks measured on steps %d-%d", r0.MeasureSteps[0], r0.MeasureSteps[1])
		}
		ew.printf("\n")
		for _, r := range a.Ranks {
			if r.Exception != nil {
				ew.printf("  rank %d raised %s: %s\n", r.Rank, r.Exception.Type, firstWords(r.Exception.Message, 90))
			}
		}
	}
	if len(a.Ranks) > 0 {
		ew.printf("\n")
		tw := newTable(ew, tabwriter.AlignRight)
		fprintf(tw, "rank\tpeak allocated\trequested\treserved\tdevice used\tsteps\texit\tOOM events\t\n")
		for _, r := range a.Ranks {
			fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t\n", r.Rank, units.Bytes(r.Peak.Allocated),
				units.Bytes(r.Peak.Requested), units.Bytes(r.Peak.Reserved), units.Bytes(r.DeviceUsed),
				r.Steps, r.ExitCode, len(r.OOM))
		}
		tw.Flush()
		ew.printf("  (peaks over the whole run, from torch's counters; device used is the driver's view, all processes)\n")
	}
	if s := a.Spread; s != nil {
		ew.printf("\nworst rank: %d, peak allocated %s, %s (%+.1f%%) above the median %s of %d ranks\n",
			s.Rank, units.Bytes(s.Peak), units.Bytes(s.Excess), 100*s.ExcessFrac, units.Bytes(s.Median), s.Ranks)
	}
	if len(a.Phases) > 0 {
		ew.printf("\nphases of the measured steps (highest over steps and ranks):\n")
		tw := newTable(ew, tabwriter.AlignRight)
		fprintf(tw, "phase\tsteps\tpeak allocated\trequested\treserved\t\n")
		for _, p := range a.Phases {
			fprintf(tw, "%s\t%d\t%s\t%s\t%s\t\n", p.Phase, p.Steps, units.Bytes(p.Peak.Allocated),
				units.Bytes(p.Peak.Requested), units.Bytes(p.Peak.Reserved))
		}
		tw.Flush()
	}
	for _, r := range a.Ranks {
		for i, o := range r.OOM {
			if i == 3 {
				ew.printf("  … %d more OOM events on rank %d\n", len(r.OOM)-3, r.Rank)
				break
			}
			ew.printf("\nOOM on rank %d, step %d %s: asked for %s with %s allocated, %s reserved; device limit %s, %s free\n",
				r.Rank, o.Step, o.Phase, units.Bytes(o.Request), units.Bytes(o.Allocated), units.Bytes(o.Reserved),
				units.Bytes(o.DeviceLimit), units.Bytes(o.DeviceFree))
		}
	}
	if len(a.Files) > 0 {
		ew.printf("\nfiles (memscope summary|peak|oom SNAPSHOT for the analysis):\n")
		for _, f := range fileList(a.Dir, toMap(a.Files)) {
			ew.printf("  %s\n", f)
		}
	}
	if len(a.Warnings) > 0 {
		ew.printf("\nwarnings:\n")
		for _, wn := range runWarnings(a.Warnings) {
			ew.printf("  - %s\n", wn)
		}
	}
	return ew.err
}
