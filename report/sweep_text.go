package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/sweep"
)

// sweepText writes a sweep's table, fits, frontier and savings.
func sweepText(w io.Writer, a *sweep.Analysis) error {
	ew := &errWriter{w: w}
	r := a.Results
	ew.printf("sweep %s: %s, %s", a.Dir, r.Workload.Name, r.Mode)
	if r.Mode == "train" {
		ew.printf(" with %s", r.Optimizer)
	}
	if r.MicroBatch > 0 {
		ew.printf(", micro-batch %d", r.MicroBatch)
	}
	if r.Workload.Parameters > 0 {
		ew.printf(", %s parameters (%s)", count(r.Workload.Parameters), units.Bytes(r.Workload.ParamBytes))
	}
	ew.printf("\n  %s, torch %s", cmpStr(r.Device.Name, "unknown device"), cmpStr(r.Torch, "?"))
	if r.Nproc > 1 {
		ew.printf(", %s per point (%s)", nouns(r.Nproc, "process"), r.Parallel)
	}
	ew.printf("; memory limit %s", units.Bytes(r.MemoryLimit))
	if r.MemoryFraction > 0 {
		ew.printf(" (fraction %.4g of %s)", r.MemoryFraction, units.Bytes(r.Device.Total))
	}
	ew.printf("\n  each point a fresh process: %s excluded, %d measured; peaks are torch's, per phase\n",
		nouns(r.Warmup, "warm-up step"), r.Steps)

	ew.printf("\n")
	tw := newTable(ew, tabwriter.AlignRight)
	fprintf(tw, "precision\tbatch\tresult\tforward\tbackward\toptimizer\tallocated\trequested\treserved\tstep time\tretries\t\n")
	for _, p := range a.Rows {
		res := "fits"
		switch {
		case p.OOM:
			res = "OOM"
		case !p.Fits:
			res = "error"
		}
		if p.Fits {
			fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", p.Precision, p.Batch, res,
				phaseBytes(p, "forward"), phaseBytes(p, "backward"), phaseBytes(p, "optimizer"),
				units.Bytes(p.Peak.Allocated), units.Bytes(p.Peak.Requested), units.Bytes(p.Peak.Reserved),
				stepTime(p.StepTimeMS), p.NumAllocRetries)
			continue
		}
		fprintf(tw, "%s\t%d\t%s\t\t\t\t\t\t\t\t\t\n", p.Precision, p.Batch, res)
	}
	tw.Flush()
	for _, p := range a.Rows {
		switch {
		case p.OOM && p.OOMInfo != nil:
			ew.printf("  %s batch %d: out of memory%s\n", p.Precision, p.Batch, oomWhere(p.OOMInfo))
		case !p.Fits && !p.OOM:
			ew.printf("  %s batch %d: %s\n", p.Precision, p.Batch, p.Error)
		}
		if s, ok := a.Spreads[p.ID]; ok {
			ew.printf("  %s batch %d: worst rank %d at %s, %s (%+.1f%%) over the median of %d ranks\n",
				p.Precision, p.Batch, s.Rank, units.Bytes(s.Peak), units.Bytes(s.Excess), 100*s.ExcessFrac, s.Ranks)
		}
	}

	ew.printf("\nfit: peak allocated ≈ fixed + batch × slope, over the batches that fit\n")
	if len(a.Fits) == 0 {
		ew.printf("  no precision has two batches that fit\n")
	}
	for _, f := range a.Fits {
		ew.printf("  %-9s %s + batch × %s   R² %.4f over %d points (largest residual %s)\n", f.Precision,
			units.Bytes(int64(f.Fixed)), units.Bytes(int64(f.Slope)), f.R2, f.Points, units.Bytes(int64(f.MaxResidual)))
		if f.Phase != "" && len(f.Excluded) > 0 {
			ew.printf("            %s holds the peak there; batch %s left out: another phase holds its peak\n",
				f.Phase, intList(f.Excluded))
		}
	}
	ew.printf("\nOOM frontier (limit %s):\n", units.Bytes(r.MemoryLimit))
	for _, f := range a.Frontiers {
		ew.printf("  %-9s ", f.Precision)
		switch {
		case f.LargestFit == 0 && f.FirstFail == 0:
			ew.printf("no point measured")
		case f.LargestFit == 0:
			ew.printf("nothing fits: batch %d already fails", f.FirstFail)
		case f.FirstFail == 0:
			ew.printf("every batch fits, up to %d: the frontier is above the ladder", f.LargestFit)
		default:
			ew.printf("largest that fits %d, first that fails %d", f.LargestFit, f.FirstFail)
			if !f.Exact {
				ew.printf(" (not bisected)")
			}
		}
		if f.Predicted > 0 {
			ew.printf("; the fit reaches the limit at %.1f", f.Predicted)
		}
		ew.printf("\n")
		if f.LargestFit > 0 && f.FirstFail > 0 {
			ew.printf("            at batch %d: %s allocated, %s reserved\n", f.LargestFit,
				units.Bytes(f.Allocated), units.Bytes(f.Reserved))
		}
	}
	for _, s := range a.Savings {
		ew.printf("\n%s vs %s:", s.Precision, s.Baseline)
		if s.SlopeSaving != nil {
			ew.printf(" %s per sample", signedPct(-*s.SlopeSaving))
		}
		if s.PeakSaving != nil {
			ew.printf("; at batch %d peak %s → %s (%s)", s.At, units.Bytes(s.PeakBaseline), units.Bytes(s.Peak),
				signedPct(-*s.PeakSaving))
		}
		if s.LargestFit > 0 && s.BaselineLargestFit > 0 {
			ew.printf("; largest batch %d → %d", s.BaselineLargestFit, s.LargestFit)
		}
		ew.printf("\n")
	}
	if len(a.Snapshots) > 0 {
		ew.printf("\nsnapshots (memscope summary|peak|oom FILE):\n")
		for _, p := range a.Snapshots {
			ew.printf("  %-9s %-12s batch %-4d %s\n", p.Precision, p.Role, p.Batch, strings.Join(fileList(a.Dir, p.Files), ", "))
		}
	}
	if warnings := sweepWarnings(a); len(warnings) > 0 {
		ew.printf("\nwarnings:\n")
		for _, wn := range warnings {
			ew.printf("  - %s\n", wn)
		}
	}
	return ew.err
}

// sweepWarnings words what the sweep's analysis found amiss, after the
// warnings results.json carries: a frontier that is not monotonic, files
// the directory lacks, snapshot re-runs that ended otherwise.
func sweepWarnings(a *sweep.Analysis) []string {
	out := append([]string(nil), a.Results.Warnings...)
	for _, f := range a.Frontiers {
		if !f.Monotonic() {
			out = append(out, "precision "+f.Precision+": a batch fits above one that ran out of memory; the frontier is not monotonic")
		}
	}
	if len(a.Missing) > 0 {
		out = append(out, fmt.Sprintf("%d file(s) named in results.json are not in %s: %s",
			len(a.Missing), a.Dir, strings.Join(a.Missing, ", ")))
	}
	for _, r := range a.Reruns {
		s, p := r.Snapshot, r.Measured
		out = append(out, fmt.Sprintf("%s batch %d: the snapshot re-run (%s) %s but the measured point %s; "+
			"%s steps", s.Precision, s.Batch, s.Role, outcomeWord(r.SnapshotOutcome), outcomeWord(r.MeasuredOutcome),
			stepsWord(s, p, a.Results.Steps)))
	}
	return out
}

func outcomeWord(o sweep.Outcome) string {
	switch o {
	case sweep.Fits:
		return "fit"
	case sweep.OOM:
		return "ran out of memory"
	}
	return "failed"
}

func stepsWord(s, p capture.Point, steps int) string {
	if s.Steps > 0 && p.Steps > 0 {
		if s.Steps == p.Steps {
			return fmt.Sprintf("they ran the same %d measured", s.Steps)
		}
		return fmt.Sprintf("they ran %d and %d measured", s.Steps, p.Steps)
	}
	return fmt.Sprintf("the re-run perhaps ran fewer than the sweep's %d measured", steps)
}

func phaseBytes(p capture.Point, phase string) string {
	n, ok := p.Phases[phase]
	if !ok {
		return "-"
	}
	return units.Bytes(n.Allocated)
}

func stepTime(ms *float64) string {
	if ms == nil {
		return "-"
	}
	return units.Duration(int64(*ms * 1000))
}

func oomWhere(o *capture.OOMInfo) string {
	if o.Phase == "" {
		return ""
	}
	s := " in " + o.Phase
	if o.Step != nil {
		s = fmt.Sprintf(" in step %d %s", *o.Step, o.Phase)
	}
	if o.Request > 0 {
		s += " asking for " + units.Bytes(o.Request)
	}
	return s
}

func signedPct(f float64) string {
	return fmt.Sprintf("%+.1f%%", 100*f)
}

func count(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
	return fmt.Sprint(n)
}

func cmpStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func toMap(files []string) map[string]string {
	m := map[string]string{}
	for _, f := range files {
		m[f] = f
	}
	return m
}

// fileList returns the files' paths under dir, sorted by key.
func fileList(dir string, files map[string]string) []string {
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sortStrings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strings.TrimSuffix(dir, "/") + "/" + files[k]
	}
	return out
}

// firstWords cuts s to at most n runes at a space, marking the cut.
func firstWords(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := string(r[:n-1])
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return cut + " …"
}

func intList(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
