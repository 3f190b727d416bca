// Package attribution computes every finding memscope reports from decoded
// snapshots: the summary of a device's memory, the peak's attribution to
// allocation sites, and (as they are added) phases, categories, leaks,
// fragmentation and OOM post-mortems. It prints nothing: renderers in
// package report turn its results into text, JSON, HTML and pprof.
//
// Results hold IDs into the snapshot's stack table; the snapshot must stay
// alive as long as the results are used.
package attribution
