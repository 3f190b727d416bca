// Package report renders memscope's analyses: aligned text for terminals,
// versioned JSON documents for scripts, HTML pages and pprof profiles. A
// command builds one result value (Summary, Peak, Diff, Sweep, Run,
// SweepDiff…) from what attribution or sweep computed and writes it with
// Write in the format it chose once. Renderers take a finished analysis and
// an io.Writer; they compute nothing and open no files. Every word the user
// reads is chosen here: the analyses return values (an outcome, the points
// concerned), and report says what they mean.
//
// Files are named by result. Each result a command writes lives in the
// file of that command's name, with its text and JSON writers: summary.go
// (Summary), peak.go, leaks.go, frag.go, oom.go (OOMs), diff.go, ops.go
// (Ops) and ops_timeline.go (MemoryTimeline), pprof.go (Profile), advise.go,
// budget.go, check.go, fit.go, ranks.go, sweep.go (Sweep, Run, SweepDiff),
// whatif.go. A long result has more files, each its name and the part's:
// a format (summary_text.go, summary_json.go, sweep_json.go, fit_html.go,
// pprof_proto.go) or a piece (budget_fixes.go, run_warnings.go).
// The report command's page (Page) is html.go, one html_NAME.go per part of
// the page. What several results share is named for what it is: text.go
// (the text writers' helpers), json.go (JSON values of several documents;
// the documents' shapes are jsondoc's), verdicts.go (the verdicts' words),
// table.go, plural.go, safe.go (escaping), write.go (Format, Result,
// Write), progress.go (capture's and sweep's progress lines), serve.go
// (serve's progress and the page's notes), echarts.go (the vendored
// library).
package report

import "github.com/memscope/memscope/report/jsondoc"

// Schema is the version every JSON document carries in its "schema" field
// (jsondoc.Schema).
const Schema = jsondoc.Schema
