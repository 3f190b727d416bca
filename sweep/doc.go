// Package sweep computes what the runs of package capture mean. Of a
// batch-size sweep (Analyze): the fit peak ≈ fixed + batch × slope per
// precision, over the batches whose peak is in the same phase as the
// largest's; the OOM frontier (the largest batch that fit, the first that
// failed, the batch the fit says reaches the memory limit); the saving of
// each precision over fp32; the worst rank of each multi-process point;
// and the files and snapshot re-runs that do not agree with results.json.
// Of two sweeps (Compare): each point's peak, each phase's and each fit's
// term in both, as typed rows. Of a capture run (SummarizeRun): each
// phase's highest peaks over the ranks and the worst rank. The median and
// the worst rank follow attribution.MedianWorst, the rule of 'memscope
// ranks', so the two agree on one run.
//
// The data flow is one way: capture reads a run directory into
// capture.Results or capture.RunDir; this package reduces them to values
// (numbers, outcomes, the points concerned), never words; report renders
// them. The values returned hold the capture values they were given (the
// points of an Analysis are those of its Results) and copy none; nothing
// here changes them.
package sweep
