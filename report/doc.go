// Package report renders memscope's analyses: aligned text for terminals,
// versioned JSON documents for scripts, and (as they are added) HTML and
// pprof. Renderers take a finished analysis and an io.Writer; they compute
// nothing and open no files.
package report

// Schema is the version every JSON document carries in its "schema" field.
const Schema = "memscope/v1"
