package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/report"
	"github.com/spf13/pflag"
)

// captureOptions are the flags of 'memscope capture'.
type captureOptions struct {
	python   string
	opts     capture.CaptureOptions
	torchrun capture.Torchrun
}

func captureFlags(fs *pflag.FlagSet) runFunc {
	var o captureOptions
	fs.SetInterspersed(false) // flags after the script's name are the script's
	fs.StringVarP(&o.opts.Out, "out", "o", "memscope-capture", "write the run into directory `DIR`")
	fs.StringVar(&o.python, "python", "python3", "the `PYTHON` with torch, when the command names no interpreter")
	fs.IntVar(&o.opts.MaxEntries, "max-entries", 1_000_000, "allocator history ring buffer: `N` entries per device")
	fs.StringVar(&o.opts.Stacks, "stacks", "python", "stacks to record: python, or all (C++ too; slower)")
	fs.StringVar(&o.opts.MeasureSteps, "measure-steps", "2-5", "measure each phase's peak on steps `FIRST-LAST` ('' for none)")
	fs.StringVar(&o.opts.ProfileSteps, "profile-steps", "", "record torch.profiler over steps `FIRST-LAST` (e.g. 3-4)")
	fs.BoolVar(&o.opts.NeutralPaths, "neutral-paths", false, "rewrite frame paths to <repo>/, <site-packages>/… (for sharing)")
	torchrunFlags(fs, &o.torchrun)
	return func(cc *cmdContext, args []string) error {
		if err := o.torchrun.Check(); err != nil {
			return usageErrorf("%v", err)
		}
		if o.opts.MaxEntries <= 0 {
			return usageErrorf("--max-entries %d: want a positive number", o.opts.MaxEntries)
		}
		return runCapture(cc, o, args)
	}
}

// torchrunFlags defines the flags that start several processes.
func torchrunFlags(fs *pflag.FlagSet, t *capture.Torchrun) {
	fs.IntVar(&t.Nproc, "nproc", 0, "run `N` processes per node under torchrun (one per GPU)")
	fs.StringVar(&t.Nnodes, "nnodes", "", "torchrun --nnodes: `N` nodes (run the same command on each)")
	fs.IntVar(&t.NodeRank, "node-rank", -1, "torchrun --node_rank: this node's `RANK`")
	fs.StringVar(&t.RdzvEndpoint, "rdzv-endpoint", "", "torchrun --rdzv_endpoint `HOST:PORT` of the rendezvous")
	fs.StringVar(&t.RdzvID, "rdzv-id", "", "torchrun --rdzv_id: the job's `ID` (default memscope)")
}

// exitStatusError carries a captured script's non-zero exit status out of
// run, so that memscope exits with it.
type exitStatusError struct {
	status int
	what   string
}

func (e *exitStatusError) Error() string {
	return fmt.Sprintf("%s exited with status %d", e.what, e.status)
}

// ExitStatus is the status memscope exits with.
func (e *exitStatusError) ExitStatus() int { return e.status }

// runCapture is the capture command; a variable for tests.
var runCapture = captureRun

func captureRun(cc *cmdContext, o captureOptions, args []string) error {
	status, err := capture.Capture(context.Background(), capture.CaptureConfig{
		Python: o.python, Command: args, Options: o.opts, Torchrun: o.torchrun,
		Stdin: os.Stdin, Stdout: cc.stdout, Stderr: cc.stderr, Progress: report.Progress{W: cc.stderr},
	})
	if ue, ok := errors.AsType[*capture.UsageError](err); ok {
		return usageErrorf("%v", ue.Err)
	}
	if err != nil {
		return err
	}
	writeRankSummaries(cc, o.opts.Out)
	fmt.Fprintf(cc.stderr, "memscope: capture: wrote %s (memscope summary --run %s)\n", o.opts.Out, o.opts.Out)
	if status != 0 {
		return &exitStatusError{status: status, what: "the captured command"}
	}
	return nil
}

// rankSummaryTop is how many sites the summary written beside each rank's
// snapshot keeps: enough for memscope ranks to tell what differs.
const rankSummaryTop = 50

// writeRankSummaries writes the 'memscope summary --json' document of
// each rank's snapshot beside it (capture.WriteRankSummaries), keeping
// rankSummaryTop sites.
func writeRankSummaries(cc *cmdContext, dir string) {
	errs := capture.WriteRankSummaries(dir, func(snap string) ([]byte, error) {
		an, err := analyzeSnapshot(cc, snap, attribution.Options{Device: -1})
		if err != nil {
			return nil, err
		}
		sum := attribution.Summarize(an, rankSummaryTop)
		sum.AddDeviceUsed(snap)
		var b bytes.Buffer
		err = report.Write(&b, report.JSON, &report.Summary{Sum: sum})
		return b.Bytes(), err
	})
	for _, err := range errs {
		cc.warnf("%v", err)
	}
}
