package main

import (
	"io"

	"github.com/spf13/pflag"
)

// command is one entry of the command table. The overview, each command's
// help and the checking of its arguments are all generated from these fields,
// so the help cannot disagree with what the command accepts.
type command struct {
	name  string // what the user types: memscope NAME
	short string // one line for the overview, lower case, no final period
	// args are the positional arguments as the synopsis shows them, and say
	// how many the command takes: "SNAP..." is one or more, "[COMMAND]" at
	// most one, "A B" exactly two, "" none. See parseArgs.
	args string
	// long is the help after the synopsis: paragraphs, wrapped at 80 columns.
	long string

	// flags defines the command's flags in fs, a fresh set for this one
	// command line, and returns the function that runs the command. That
	// function reads the flag values, so it is called only after fs.Parse:
	// typically flags declares an options struct, binds its fields to flags
	// and returns a closure over it.
	flags func(fs *pflag.FlagSet) runFunc
}

// runFunc runs a command on its positional arguments, whose count run has
// already checked against command.args.
type runFunc func(cc *cmdContext, args []string) error

// cmdContext is what a running command gets besides its flags and arguments.
type cmdContext struct {
	stdout io.Writer // results: text, JSON
	stderr io.Writer // warnings and diagnostics
	// maxMemory is --max-memory, for the commands that take it: the
	// decoding budget in bytes; 0 for the default.
	maxMemory int64
}

// commands is the command table, in the order the overview lists them. It is
// filled in init because the help command reads it.
var commands []*command

func init() {
	commands = []*command{
		{
			name:  "summary",
			short: "the four memory numbers at peak and at end, top sites, findings",
			args:  "[SNAP...]",
			long: `Summary reads each allocator snapshot (a torch.cuda.memory._dump_snapshot
pickle) and prints, per device:

  - the four numbers that get called "GPU memory", never merged: requested
    (bytes tensors asked for), allocated (rounded blocks), reserved (segments
    the caching allocator holds) and, when recorded, device used;
  - those numbers at the peak and at the end of the recording, and when the
    peak happens (time, phase, step);
  - the allocation sites (Python stacks) that hold the most memory at the peak;
  - findings: leak, fragmentation, out-of-memory, truncated recording.

` + sitesHelp + `

With --run DIR it summarizes a run directory instead: a sweep's table, fit,
OOM frontier and precision savings, or a capture's exit status, peaks,
phases and worst rank.

Sizes print in binary units (KiB, MiB, GiB); with --json they are raw bytes.`,
			flags: summaryFlags,
		},
		{
			name:  "peak",
			short: "what was live at the peak (or another moment) by site, category and stream",
			args:  "SNAP...",
			long: `Peak attributes the blocks live at one moment — by default the peak of
allocated bytes — to allocation sites (see below), to categories
(parameter, optimizer state, gradient, activation, input, temporary,
kv cache, unknown, inferred from each block's lifetime across the training
phases, or generate()'s prefill and decode, and its stack) and to
streams. --tree prints the whole call tree instead. At the peak it also
prints the per-step phase table: the floor, each phase's peak, and which
phase holds the device's peak.

` + sitesHelp,
			flags: peakFlags,
		},
		{
			name:  "leaks",
			short: "step-over-step growth: the floor after each step and the sites that keep memory",
			args:  "SNAP...",
			long: `Leaks looks for a staircase: the allocated floor after each steady step
(every step but the first, whose optimizer state is created lazily) growing
over at least 3 steps, and names the sites of blocks born in those steps
that are still live at the end, with bytes per step. Sites are chosen as
'memscope help peak' says (--focus, --ignore).`,
			flags: leaksFlags,
		},
		{
			name:  "frag",
			short: "free memory inside reserved segments at the peak, the end and each OOM",
			args:  "SNAP...",
			long: `Frag measures fragmentation from the segments and blocks: reserved minus
allocated, the free holes between active blocks (count, sizes, the largest
per pool), torch's inactive_split_bytes, and the segment churn of the
trace, with a verdict and the allocator setting to try. At each OOM the
verdict is oom's, by simulation where the model runs the trace.`,
			flags: fragFlags,
		},
		{
			name:  "oom",
			short: "post-mortem of each out-of-memory event: capacity or fragmentation",
			args:  "SNAP...",
			long: `Oom explains each out-of-memory event the allocator recorded: the request
and where it was made (the oom entry's stack, folded like sites), the
device's free memory, allocated and reserved at that moment, the
per-process cap when one applied (set_per_process_memory_fraction: the
device had room for the segment, the allocator refused it; the snapshot
does not record the limit, so it is bracketed from the trace), what was
live by site and category, the largest free block, and a verdict decided
by simulation: the recorded requests re-run under expandable_segments:True
(a defragmented allocator) with the same capacity — fragmentation when that
serves them, capacity when it still runs out of memory — with the settings
that would have served them and their reserved peaks (see memscope
whatif). Where the model cannot run the trace (recording began late,
cudaMallocAsync, torch ≤ 2.0) the free blocks decide:
fragmentation when no free block could take the request but it would have
fit in the free bytes stranded in split segments (which release cannot
return) plus what could still be reserved; capacity otherwise.
Sites are chosen as 'memscope help peak' says (--focus, --ignore).`,
			flags: oomFlags,
		},
		{
			name:  "whatif",
			short: "the recorded requests under other allocator settings: peak reserved, segments, OOM",
			args:  "SNAP",
			long: `Whatif drives a model of torch 2.11's caching allocator by the requests a
snapshot recorded (every alloc with its size and stream, every free at its
recorded place, every empty_cache() call) under other allocator settings,
and prints each one's peak and end of reserved memory, peak allocated,
segments, inactive_split blocks at the peak, OOM retries, and whether and
at which request it runs out of memory (the what-if stops there: the
program would have raised). With no --conf it runs the recorded settings
only, after the replay check: how many of the recording's decisions the
model matched, and the first it did not. Each --conf
"expandable_segments:True,max_split_size_mb:128" (a PYTORCH_CUDA_ALLOC_CONF
string) adds a column beside the recorded settings. Where the model matched
every recorded decision (and no --memory-limit is given) the recorded
settings' column is the recorded run itself, as the replay checked it; when
the what-if under the recorded settings (a late start's rebuilt state, new
segments at addresses of its own) reaches another peak, a line says so: the
other columns are what-ifs like it, to compare with it.

The limit is --memory-limit, a per-process cap as
set_per_process_memory_fraction sets (a snapshot does not record one), else
what the recorded OOM shows: reserved then plus the device's free memory,
or, when the device had room, a cap just below every failed cudaMalloc's
reserved plus size (also when retries show failures with no OOM); else
unlimited. It is "same requests, different allocator": a program whose
requests depend on the allocator (cuDNN workspaces sized by the largest free
block, code that catches an OOM and retries smaller) or whose side-stream
frees complete at other times would ask otherwise. When recording began late
the what-if starts from the state rebuilt at the first entry and covers the
recorded window only. A CUDA graph's private pool gets the requests whose
recorded blocks were in it. cudaMallocAsync, torch ≤ 2.0 snapshots and
traces recorded with skip_actions are refused, with the reason.`,
			flags: whatifFlags,
		},
		{
			name:  "fit",
			short: "the largest batch that fits a cap, from snapshots at two or more small batches",
			args:  "SNAP SNAP...",
			long:  fitLong,
			flags: fitFlags,
		},
		{
			name:  "ranks",
			short: "a job's ranks compared: peaks, the median, outliers and what differs by site",
			args:  "PATH...",
			long: `Ranks compares the ranks of one job from their snapshots (files, globs, a
capture run directory of snapshot.rankN.pickle, or a directory of them) or
from the summaries each rank wrote (memscope summary --json, one file per
rank or one with many): per rank the peak allocated and reserved, device
used where recorded, and the step and phase of the peak; the median rank
(the rule of summary --run: the mean of the middle two of an even count);
the worst; outliers (|z| > 3.5) by a robust z-score of any of the allocated,
reserved and device-used peaks, allocator retries, OOMs, the bytes kept
from step to step (blocks of steady steps still live at the end: a young
leak) and a leak finding, each spread from the median absolute deviation
but at least 2% of the median, so that noise is no outlier; and, for each
outlier, the numbers it stands out in and what differs by site from the
typical rank (the one nearest the median). The rank of a file is the N of
"rankN" in its name or its directory's; a file with none is named by its
path. A rank's snapshot and its summary in one folder count once. A named
pipe, device or
socket found in a directory or by a glob is skipped with why, never
opened (a FIFO no process writes to would wait forever); one named on its
own is read once a process writes to it, skipped after 10 s without one.
A rank whose file was cut short, or whose analysis (or summary) warns that
its trace contradicts its segments, is marked [truncated] or
[contradiction] wherever it is named; two inputs of one rank number
(rank0, rank00) are a warning.
--jobs workers read ranks
in parallel, each holding one snapshot, one decoding while the others
analyse, so memory stays that of a few snapshots whatever their number;
summaries are a few KB each, so a thousand ranks compare in well under a
second.`,
			flags: ranksFlags,
		},
		{
			name:  "diff",
			short: "what grew between two snapshots, by site, category and phase",
			args:  "A B",
			long: `Diff compares snapshot B with snapshot A (e.g. fp32 against bf16, or before
and after a fix): the peak and end numbers, then the largest changes at the
peak by phase, category and site, device by device (when each has one
device, those two, whatever their indexes). A and B may also be run
directories: a 'memscope capture' run stands for its snapshot; two
'memscope sweep' runs compare point by point (each precision and batch
measured in both: the peak and each phase's) and their fits. Sites are chosen as
'memscope help peak' says (--focus, --ignore).`,
			flags: diffFlags,
		},
		{
			name:  "check",
			short: "CI gate: exit 1 on a recorded OOM or a broken limit (peak, reserved, leak, fragmentation)",
			args:  "SNAP...",
			long: `Check analyses each snapshot (or the snapshots of a capture run directory)
and exits with status 1, naming every failure with its numbers, when an
out-of-memory event was recorded (unless --allow-oom), the peak allocated
exceeds --max-peak, the peak reserved exceeds --max-reserved, a leak grows by
more than --max-leak per step, or more than --max-frag of reserved memory is
free at the peak. It exits 0 when none of these holds. A broken leak limit
names the leak's site, chosen as 'memscope help peak' says (--focus,
--ignore).`,
			flags: checkFlags,
		},
		{
			name:  "ops",
			short: "per-operator memory from a torch.profiler trace, like key_averages",
			args:  "TRACE...",
			long: `Ops reads Chrome traces written by torch.profiler (profile_memory=True;
.json or .json.gz) and charges each [memory] event to the innermost
operator or record_function range on the same thread, then up the op
tree: per operator the bytes it allocated itself and with its children,
its net bytes, and the bytes still live at the trace's peak of Total
Allocated. Backward ops are labelled with the forward op (and module) they
belong to. --by module groups by nn.Module instead. Traces of torch 1.9 to
1.12, whose memory events carry Bytes only, are read too: allocated is then
the running sum of Bytes from the trace's start. A file written by
export_memory_timeline (.json, .raw.json.gz) gives its live bytes by
torch's category: at the peak, each one's maximum, and at the end.`,
			flags: opsFlags,
		},
		{
			name:  "pprof",
			short: "a pprof profile: memory live at a moment and every allocation, by Python frame",
			args:  "SNAP",
			long: `Pprof writes a profile for 'go tool pprof': inuse_space and inuse_objects
hold the blocks live at --at (default: the peak of allocated bytes),
alloc_space and alloc_objects every allocation recorded. Python frames are
functions with file and line, leaf first; plumbing frames are dropped by
the same filter the other commands use (user and library code are kept;
--ignore, --focus; see 'memscope help peak'), so the leaf is the
allocation site. Samples carry the labels category, phase, step, stream
and bytes. The step is the step's number when the run has at most 32
steps; in a longer run the first step keeps its own and the others are
grouped into 31 runs of consecutive steps ("step=1-447"), so the profile
grows with the stacks, not the steps (--at step:N:PHASE profiles one step's
live blocks):

  go tool pprof -top mem.pb.gz
  go tool pprof -sample_index=alloc_space -http=: mem.pb.gz
  go tool pprof -tagfocus=category=activation -top mem.pb.gz
  go tool pprof -tagfocus='step=^0$' -sample_index=alloc_space -top mem.pb.gz`,
			flags: pprofFlags,
		},
		{
			name:  "budget",
			short: "predict a step's memory from a model config, and hold it against a capture",
			args:  "[SNAP]",
			long: `Budget predicts the memory of one training (or inference) step of a
decoder-only transformer before it runs, from a Hugging Face config.json
(--config) or flags, and a run shape (--batch, --seq, --precision,
--optimizer, --checkpointing, --loss, --mode). It prints the five terms:
model states (bytes per parameter shown), saved activations (derived from
the architecture, layer by layer, next to the 34·s·b·h rule), logits and
loss, KV cache, and overhead; the predicted peak of allocated bytes in each
phase (forward, backward, optimizer) and which phase and term should hold
the step's peak; the headroom on a device (--device-memory 80GiB or a GPU
name); and fixes ranked cheapest first, each with its predicted new peak.

With a snapshot (SNAP, --snapshot), a truth.json (--truth) or a directory
holding them (--run), it puts what was measured next to the prediction,
phase by phase, by term and by category, with the gap in bytes and percent
and the term most likely responsible. With a snapshot of a training run it
also puts advise's fixes, computed from the snapshot's blocks, next to the
predicted ones: fix | predicted new peak | from the snapshot.`,
			flags: budgetFlags,
		},
		{
			name:  "advise",
			short: "what holds the peak, by term, and the fixes that lower it, cheapest first, each with its new peak",
			args:  "SNAP...",
			long:  adviseLong,
			flags: adviseFlags,
		},
		{
			name:  "capture",
			short: "run a training script under capture: phase peaks, per-step stats, snapshot at exit and at OOM",
			args:  "COMMAND...",
			long: `Capture runs your unmodified training script under memscope's harness:
memscope capture [flags] -- python train.py ARGS... (also python -m MODULE,
train.py alone with --python, or torchrun [OPTIONS] train.py). It records
the allocator's history (Python stacks), marks every step's forward,
backward and optimizer phases (hooks on Optimizer.step, zero_grad and
backward: the phases land in the snapshot as memscope/step/N/PHASE),
measures each phase's peak on the --measure-steps (it resets torch's peak
counters there), writes memory_stats() and mem_get_info() after every step,
records the profiler over --profile-steps, and watches for out-of-memory
errors. Into the run directory (--out) go the snapshot at exit (and at the
first OOM the script survives), steps.jsonl, trace.json.gz, capture.json
(what happened) and run.json. The exit status is the script's own.

With --nproc N it runs under torchrun, and every rank writes its own files
(snapshot.rank1.pickle…). Several nodes: run the same command on each with
--nnodes, --node-rank and --rdzv-endpoint. 'memscope summary --run DIR'
reads the run and names the rank with the highest peak.`,
			flags: captureFlags,
		},
		{
			name:  "sweep",
			short: "the batch-size sweep: one fresh process per point, the fit, the OOM frontier, bf16 vs fp32",
			args:  "",
			long: `Sweep measures a built-in workload (--model mlp, llama, vit, or your own
pkg.module:factory) at each batch of the ladder (--batch) and precision
(--precision fp32,bf16,fp16-amp), each point in a fresh process: warm-up
steps first (optimizer state is lazy), then measured steps with each
phase's peak allocated, requested and reserved, the step time (CUDA
events), allocator retries and whether it ran out of memory. A
precision's ladder stops at its first OOM and bisects down to the largest
batch that fits. Then the safe batch, the largest that fits and the first
that fails are re-run with recording on, for snapshots (and with
--profile, traces). --memory-fraction or --memory-limit caps each process
so that the frontier falls inside the ladder. Everything goes into the
run directory (results.json, points/); the table, the fit peak = fixed +
batch × slope per precision with R², the frontier and the saving over
fp32 print at the end, and again with 'memscope summary --run DIR'.
Progress goes to stderr, one line per point.`,
			flags: sweepFlags,
		},
		{
			name:  "report",
			short: "one self-contained HTML page: timeline, peak breakdown, steps, leak, fragmentation, OOM",
			args:  "[SNAP...]",
			long:  reportLong,
			flags: reportFlags,
		},
		{
			name:  "serve",
			short: "a local web UI: allocation timeline with stacks, allocator state at any moment, sites, steps, leaks, OOMs",
			args:  "[SNAP...]",
			long:  serveLong,
			flags: serveFlags,
		},
		{
			name:  "help",
			short: "show this overview, or one command's usage and flags",
			args:  "[COMMAND]",
			long: `Help prints the overview of memscope's commands or, given a COMMAND, that
command's usage and flags.`,
			flags: func(*pflag.FlagSet) runFunc { return runHelp },
		},
	}
}

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// summaryOptions are the flags of 'memscope summary'.
type summaryOptions struct {
	json   bool   // JSON instead of text
	top    int    // allocation sites to list
	device int    // CUDA device to report; -1 for all
	stacks bool   // print each top site's full stack
	run    string // a capture or sweep run directory to summarize
	trace  string // a profiler trace of the same run, joined by operator
	// focus and ignore choose the frames sites are charged to
	// (attribution.NewFilter).
	focus, ignore string
	// allFrames prints the stacks' native frames (C++, CPython, libc) too.
	allFrames bool
}

func summaryFlags(fs *pflag.FlagSet) runFunc {
	var o summaryOptions
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	fs.IntVar(&o.top, "top", 10, "list the `N` sites holding the most memory at the peak")
	deviceFlag(fs, &o.device, "report only CUDA device `N`; -1 for every device")
	fs.BoolVar(&o.stacks, "stacks", false, "print the Python stack of each top site, native frames counted (JSON always has every frame)")
	fs.BoolVar(&o.allFrames, "all-frames", false, "with --stacks, print the native frames too (C++, CPython, libc: a stacks=\"all\" recording)")
	fs.StringVar(&o.run, "run", "", "summarize the capture or sweep run directory `DIR` (memscope capture, sweep)")
	fs.StringVar(&o.trace, "trace", "", "join with the torch.profiler `TRACE` of the same run: the peak by operator, or by category for an export_memory_timeline file")
	filterFlags(fs, &o.focus, &o.ignore)
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error {
		if o.run != "" {
			return runSummaryRun(cc, o, paths)
		}
		if len(paths) == 0 {
			return usageErrorf("missing SNAP argument")
		}
		if o.top < 0 {
			return usageErrorf("--top %d: want 0 or more", o.top)
		}
		return runSummary(cc, o, paths)
	}
}
