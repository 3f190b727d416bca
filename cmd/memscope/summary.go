package main

import "errors"

// runSummary runs 'memscope summary'. It is a variable so that tests can see
// what the command line turned into without decoding a snapshot.
var runSummary = summary

// summary prints, for each snapshot in paths, the summary described in the
// command's usage, as text or (opts.json) JSON, to cc.stdout.
func summary(cc *cmdContext, opts summaryOptions, paths []string) error {
	return errors.New("summary: not implemented yet")
}
