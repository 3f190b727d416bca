// Package report renders memscope's analyses: aligned text for terminals,
// versioned JSON documents for scripts, HTML pages and pprof profiles. A
// command builds one result value (Summary, Peak, Diff, Sweep, Run,
// SweepDiff…) from what attribution or sweep computed and writes it with
// Write in the format it chose once. Renderers take a finished analysis and
// an io.Writer; they compute nothing and open no files. Every word the user
// reads is chosen here: the analyses return values (an outcome, the points
// concerned), and report says what they mean.
package report

import "github.com/memscope/memscope/report/jsondoc"

// Schema is the version every JSON document carries in its "schema" field
// (jsondoc.Schema).
const Schema = jsondoc.Schema
