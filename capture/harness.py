#!/usr/bin/env python3
"""memscope capture harness: runs PyTorch workloads with allocator history on
and writes what torch itself measured next to the snapshot.

One file, stdlib + torch only (transformers and torchvision are imported
lazily by the workloads that need them). The Go side embeds this file and
writes it to a temporary directory; it must run from anywhere.

Usage:
    python harness.py run --out DIR [options] -- SCRIPT.py ARGS...   # capture a script
    python harness.py run --out DIR [options] -- -m MODULE ARGS...
    python harness.py point --out DIR --workload NAME --batch N ...  # one sweep point
    python harness.py check [--workload NAME] [--nproc N]            # what this Python has
    python harness.py scenario NAME --out DIR [--neutral-paths]      # the fixtures' scenarios
    python harness.py scenarios                                      # list the scenarios

Exit status: run returns the script's own status; point returns 0 when the
batch fits, 3 (EXIT_OOM) when it ran out of memory; every subcommand returns
2 (EXIT_ENV) on bad usage, no torch, no CUDA or a workload that cannot load,
after one line on stderr.

Under torchrun (RANK/WORLD_SIZE/LOCAL_RANK set), every process writes its
own files, named by rank_file(): snapshot.pickle when the world has one
process, snapshot.rank3.pickle for rank 3 of several.

run writes into DIR (the capture run directory; capture/doc.go documents it):
    snapshot.pickle      torch.cuda.memory._snapshot() at exit, pickle protocol 4
    snapshot.oom.pickle  at the first phase boundary after an OOM the script survived
    steps.jsonl          one line per optimizer step: memory_stats() subset, mem_get_info()
    trace.json.gz        the --profile-steps window, when asked
    capture.json         what happened (schema "memscope-capture/v1"): exit status,
                         exception, OOM observer calls, per-phase peaks of the
                         measured steps (peak counters reset at every boundary),
                         the run's peaks, memory_stats() at the end

point writes point.json (schema "memscope-point/v1") and, when asked, a
snapshot and a trace; the Go side merges the points into results.json.

scenario writes snapshot.pickle and truth.json (schema "memscope-truth/v1"):
    window   allocated/requested/reserved/active at the start and end of the
             recorded window, and their peaks over the window (peak counters
             are reset when recording starts and at every phase boundary; the
             window peak is the max over the phases, which partition it)
    phases   one row per (step, phase): peak allocated/requested/reserved/
             active inside the phase, allocated at its end, device used
    memory_stats_end   torch.cuda.memory_stats() when the snapshot is taken
    plus scenario facts: parameter bytes, the planted leak's file and line,
    the OOM request...

The torch-free parts (argument parsing, rank naming, path rewriting, the
phase and step bookkeeping, point summaries) are tested on CPU by
capture/harness_test.py.
"""

import argparse
import contextlib
import inspect
import json
import os
import pickle
import sys
import sysconfig

# ---- constants --------------------------------------------------------------

SEED = 1234
MAX_ENTRIES = 1_000_000  # ring buffer size per device
PICKLE_PROTOCOL = 4
TRUTH_SCHEMA = "memscope-truth/v1"
CAPTURE_SCHEMA = "memscope-capture/v1"
POINT_SCHEMA = "memscope-point/v1"
CHECK_SCHEMA = "memscope-check/v1"
ANNOTATION_PREFIX = "memscope"  # record_function names: memscope/step/3/forward

EXIT_OK = 0
EXIT_ENV = 2  # bad usage, no torch, no CUDA, a workload that cannot load
EXIT_OOM = 3  # a sweep point ran out of device memory

MEASURE_STEPS = "2-5"  # capture: steps whose phases get their own peaks
POINT_WARMUP = 1       # sweep point: warm-up steps, not measured (lazy optimizer state)
POINT_STEPS = 3        # sweep point: measured steps
OOM_EVENTS_KEPT = 100  # OOM observer calls kept in capture.json
PHASES = ("forward", "backward", "optimizer")
PRECISIONS = ("fp32", "bf16", "fp16-amp")
MODES = ("train", "infer")
OPTIMIZERS = ("adamw", "sgd")
PARALLEL = ("none", "ddp", "fsdp")
WORKLOADS = ("mlp", "llama", "vit")  # or pkg.module:factory

# memory_stats() keys kept per step in steps.jsonl (the full dict is in
# capture.json at exit).
STEP_STATS_KEYS = (
    "allocated_bytes.all.current", "allocated_bytes.all.peak",
    "requested_bytes.all.current", "requested_bytes.all.peak",
    "reserved_bytes.all.current", "reserved_bytes.all.peak",
    "active_bytes.all.current", "active_bytes.all.peak",
    "inactive_split_bytes.all.current", "segment.all.current",
    "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
)
# Messages of out-of-memory failures that are not torch.cuda.OutOfMemoryError.
OOM_MESSAGES = ("out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED")

# Neutral prefixes for frame paths, so no capture machine's layout is kept.
REPO_PREFIX = "<repo>/"
SITE_PREFIX = "<site-packages>/"
PYTHON_PREFIX = "<python>/"
MEMSCOPE_PREFIX = "<memscope>/"  # the harness itself, written to a temporary folder

# ---- torch-free helpers -----------------------------------------------------


def annotation_name(step, phase):
    """The record_function name that marks one phase of one step."""
    return "%s/step/%d/%s" % (ANNOTATION_PREFIX, step, phase)


def path_rules(repo_root, site_dirs, python_dirs, extra=()):
    """Rewrite rules (old prefix, new prefix), longest prefix first; extra
    holds more (directory, prefix) pairs."""
    rules = [(d.rstrip("/") + "/", new) for d, new in extra]
    for d in site_dirs:
        rules.append((d.rstrip("/") + "/", SITE_PREFIX))
    for d in python_dirs:
        rules.append((d.rstrip("/") + "/", PYTHON_PREFIX))
    if repo_root:
        rules.append((repo_root.rstrip("/") + "/", REPO_PREFIX))
    rules.sort(key=lambda r: len(r[0]), reverse=True)
    return rules


def rewrite_path(path, rules):
    for old, new in rules:
        if path.startswith(old):
            return new + path[len(old):]
    return path


def rewrite_snapshot_paths(snap, rules):
    """Rewrite every frame filename in a snapshot dict in place.

    Frame dicts and frame lists are shared between entries (torch dedups
    them), so each dict is visited once and equal new strings are interned:
    the pickle keeps the sharing the original had.
    """
    seen = set()
    interned = {}

    def frames(lst):
        for fr in lst or ():
            if id(fr) in seen or not isinstance(fr, dict):
                continue
            seen.add(id(fr))
            fn = fr.get("filename")
            if isinstance(fn, str):
                new = rewrite_path(fn, rules)
                fr["filename"] = interned.setdefault(new, new)

    segs = snap if isinstance(snap, list) else snap.get("segments", [])
    for seg in segs:
        frames(seg.get("frames"))
        for blk in seg.get("blocks", ()):
            frames(blk.get("frames"))
            for h in blk.get("history", ()) or ():
                frames(h.get("frames"))
    if isinstance(snap, dict):
        for trace in snap.get("device_traces", ()) or ():
            for entry in trace:
                frames(entry.get("frames"))
    return snap


def window_summary(start, rows, end):
    """Window peaks from per-phase peaks: the phases partition the window."""
    out = dict(start)
    out.update(end)
    for key in ("allocated", "requested", "reserved", "active"):
        peaks = [r["peak_" + key] for r in rows] + [start[key + "_start"]]
        out["max_" + key] = max(peaks)
    return out


def rank_file(base, ext, rank, world):
    """The name of one process's file: snapshot.pickle when the world has one
    process, snapshot.rank3.pickle for rank 3 of several. The Go side
    (capture.RankFile) names and parses them the same way."""
    if world <= 1:
        return base + ext
    return "%s.rank%d%s" % (base, rank, ext)


def dist_env(environ):
    """Rank, world size and local rank from torchrun's environment."""
    def num(key, default):
        try:
            return int(environ.get(key, default))
        except ValueError:
            return default
    world = max(num("WORLD_SIZE", 1), 1)
    return {"rank": num("RANK", 0), "world": world, "local_rank": num("LOCAL_RANK", 0),
            "local_world": max(num("LOCAL_WORLD_SIZE", world), 1)}


def rank_coords(environ, env):
    """A rank's coordinates for 'memscope ranks': its node (torchrun's
    GROUP_RANK, else rank // local world size) and local rank, and the
    parallel coordinates the job states in MEMSCOPE_COORDS ("dp=3,tp=1,pp=0":
    torchrun does not know them). Malformed entries are left out."""
    node = environ.get("GROUP_RANK", "")
    coords = {"node": int(node) if node.isdigit() else env["rank"] // env["local_world"],
              "local_rank": env["local_rank"]}
    for part in environ.get("MEMSCOPE_COORDS", "").split(","):
        key, sep, val = part.strip().partition("=")
        key = key.strip()
        if sep and key and key.replace("_", "").isalnum():
            try:
                coords[key] = int(val)
            except ValueError:
                pass
    return coords


def parse_steps(text):
    """'3-4' -> (3, 4); '3' -> (3, 3); '' -> None. Raises ValueError."""
    text = (text or "").strip()
    if not text:
        return None
    lo, sep, hi = text.partition("-")
    first = int(lo)
    last = int(hi) if sep else first
    if first < 0 or last < first:
        raise ValueError("bad step range %r: want FIRST-LAST with 0 <= FIRST <= LAST" % text)
    return first, last


def in_steps(window, step):
    return window is not None and window[0] <= step <= window[1]


def is_oom_message(text):
    return any(m in text for m in OOM_MESSAGES)


def exit_status(exc):
    """The process exit status Python gives for an exception out of a script
    (None: it ended normally), as (status, message to print or None)."""
    if exc is None:
        return 0, None
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None:
            return 0, None
        if isinstance(code, int):
            return code & 0xFF, None
        return 1, str(code)
    if isinstance(exc, KeyboardInterrupt):
        return 130, None
    return 1, None


class PhaseTracker(object):
    """Turns the hook events of a training loop into non-overlapping phase
    ranges memscope/step/N/{forward,backward,optimizer}, without knowing the
    loop.

    Events: forward() (a module was called), backward_begin()/backward_end()
    (Tensor.backward or torch.autograd.backward, outermost call),
    optimizer_begin()/optimizer_end() (Optimizer.step),
    zero_grad_begin()/zero_grad_end(), finish(). A step ends at its last
    optimizer step and the next step starts with the next forward or
    backward, so gradient accumulation (several forward/backward pairs) and
    several optimizers (a GAN) stay in one step. zero_grad right after a step
    is that step's optimizer phase (it frees the gradients); anywhere else it
    is not marked. Work inside Optimizer.step (an LBFGS closure) stays in the
    optimizer phase.

    The time between phases is an interval labelled "other" (data loading,
    logging); before the first phase it is "setup" of step -1. The tracker
    calls sink.open_range(name) -> handle, sink.close_range(handle),
    sink.boundary(prev, nxt) with (step, label) of the interval that ended and
    the one that begins (nxt None at finish), between closing one range and
    opening the next, and sink.step_end(step) after each optimizer step.
    """

    def __init__(self, sink):
        self.sink = sink
        self.step = 0
        self.state = "idle"  # idle forward backward after_backward optimizer after_optimizer zero_grad
        self.interval = (-1, "setup")
        self.handle = None
        self.steps_seen = 0  # steps that had any phase

    def wants_forward(self):
        """Whether a module call now would start a forward phase."""
        return self.state in ("idle", "after_backward", "after_optimizer")

    def _move(self, step, label, phase):
        if self.handle is not None:
            self.sink.close_range(self.handle)
            self.handle = None
        prev, self.interval = self.interval, (step, label)
        self.sink.boundary(prev, self.interval)
        if phase:
            self.handle = self.sink.open_range(annotation_name(step, label))
            self.steps_seen = max(self.steps_seen, step + 1)

    def _next_step(self):
        if self.state == "after_optimizer":
            self.step += 1

    def forward(self):
        if not self.wants_forward():
            return
        self._next_step()
        self.state = "forward"
        self._move(self.step, "forward", True)

    def backward_begin(self):
        if self.state in ("optimizer", "backward"):
            return
        self._next_step()
        self.state = "backward"
        self._move(self.step, "backward", True)

    def backward_end(self):
        if self.state != "backward":
            return
        self.state = "after_backward"
        self._move(self.step, "other", False)

    def optimizer_begin(self):
        if self.state == "optimizer":
            return
        self.state = "optimizer"
        self._move(self.step, "optimizer", True)

    def optimizer_end(self):
        if self.state != "optimizer":
            return
        self.state = "after_optimizer"
        self._move(self.step, "other", False)
        self.sink.step_end(self.step)

    def zero_grad_begin(self):
        if self.state != "after_optimizer":
            return
        self.state = "zero_grad"
        self._move(self.step, "optimizer", True)

    def zero_grad_end(self):
        if self.state != "zero_grad":
            return
        self.state = "after_optimizer"
        self._move(self.step, "other", False)

    def finish(self):
        if self.handle is not None:
            self.sink.close_range(self.handle)
            self.handle = None
        prev, self.interval = self.interval, None
        if prev is not None:
            self.sink.boundary(prev, None)


class MeasureWindow(object):
    """Which intervals of a capture get their own peaks: those of steps
    first..last. The peak counters are reset when the window opens and after
    every measured interval; before a reset the peaks so far are folded into
    the run's peaks, so resetting loses nothing."""

    def __init__(self, window):
        self.window = window

    def measured(self, interval):
        return interval is not None and in_steps(self.window, interval[0])

    def action(self, prev, nxt):
        """What to do at a boundary: 'row' (record prev's peaks, reset),
        'reset' (the window opens: reset) or None."""
        if self.measured(prev):
            return "row"
        if self.measured(nxt):
            return "reset"
        return None


def fold_peaks(run_peak, stats):
    """Fold a memory_stats() dict's peaks into run_peak, in place."""
    for key in ("allocated", "requested", "reserved", "active"):
        v = stats.get(key + "_bytes.all.peak", 0)
        run_peak[key] = max(run_peak.get(key, 0), v)
    return run_peak


def phase_row(step, label, stats, device_used):
    return {
        "step": step,
        "phase": label,
        "peak_allocated": stats.get("allocated_bytes.all.peak", 0),
        "peak_requested": stats.get("requested_bytes.all.peak", 0),
        "peak_reserved": stats.get("reserved_bytes.all.peak", 0),
        "peak_active": stats.get("active_bytes.all.peak", 0),
        "allocated_end": stats.get("allocated_bytes.all.current", 0),
        "reserved_end": stats.get("reserved_bytes.all.current", 0),
        "device_used": device_used,
        "num_alloc_retries": stats.get("num_alloc_retries", 0),
    }


def step_line(step, at, stats, free, total):
    """One steps.jsonl line: the kept memory_stats() keys and the driver's view."""
    line = {"step": step, "at": at, "free": free, "total": total, "device_used": total - free}
    for key in STEP_STATS_KEYS:
        line[key] = stats.get(key, 0)
    line["outside_reserved"] = line["device_used"] - stats.get("reserved_bytes.all.current", 0)
    return line


def summarize_point(rows, step_times_ms, measured_steps):
    """A sweep point's numbers from its phase rows: per phase the highest peak
    over the measured steps (warm-up rows carry step < first measured), the
    point's peak over all phases, the median step time."""
    first = measured_steps[0] if measured_steps else 0
    phases = {}
    peak = {"allocated": 0, "requested": 0, "reserved": 0, "active": 0}
    device_used = 0
    for r in rows:
        if r["step"] < first:
            continue
        ph = phases.setdefault(r["phase"], {"allocated": 0, "requested": 0, "reserved": 0,
                                            "active": 0})
        for key in peak:
            ph[key] = max(ph[key], r["peak_" + key])
            peak[key] = max(peak[key], r["peak_" + key])
        device_used = max(device_used, r.get("device_used", 0))
    times = sorted(step_times_ms)
    median = None
    if times:
        mid = len(times) // 2
        median = times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2.0
    return {"phases": phases, "peak": peak, "device_used": device_used,
            "step_time_ms": median, "step_times_ms": list(step_times_ms)}


def workload_kind(name):
    """'mlp' / 'llama' / 'vit' or 'custom' for pkg.module:factory; None when bad."""
    if name in WORKLOADS:
        return name
    mod, sep, fn = name.partition(":")
    if sep and mod and fn and all(p.isidentifier() for p in mod.split(".")) and fn.isidentifier():
        return "custom"
    return None


def micro_batches(batch, micro):
    """Split a batch into micro-batches of at most micro (0: one)."""
    if micro <= 0 or micro >= batch:
        return [batch]
    n, rest = divmod(batch, micro)
    return [micro] * n + ([rest] if rest else [])


# ---- torch side -------------------------------------------------------------


def _torch():
    import torch

    return torch


class Meter:
    """Per-phase peak measurement with the peak counters reset at each boundary.

    Every allocation of the recorded window must happen inside a phase, so
    the window peak is the max of the phase peaks.
    """

    def __init__(self, device=0):
        self.torch = _torch()
        self.device = device
        self.rows = []
        self.start = None
        self.open_phase = None  # (step, name) while a phase runs; left set when it raised

    def stats(self):
        t = self.torch
        s = t.cuda.memory_stats(self.device)
        return s

    def begin_window(self):
        t = self.torch
        t.cuda.synchronize(self.device)
        t.cuda.reset_peak_memory_stats(self.device)
        s = self.stats()
        self.start = {
            "allocated_start": s["allocated_bytes.all.current"],
            "requested_start": s["requested_bytes.all.current"],
            "reserved_start": s["reserved_bytes.all.current"],
            "active_start": s["active_bytes.all.current"],
        }

    @contextlib.contextmanager
    def phase(self, step, name):
        t = self.torch
        t.cuda.synchronize(self.device)
        t.cuda.reset_peak_memory_stats(self.device)
        self.open_phase = (step, name)
        with t.profiler.record_function(annotation_name(step, name)):
            yield
        self.open_phase = None
        t.cuda.synchronize(self.device)
        s = self.stats()
        free, total = t.cuda.mem_get_info(self.device)
        self.rows.append({
            "step": step,
            "phase": name,
            "peak_allocated": s["allocated_bytes.all.peak"],
            "peak_requested": s["requested_bytes.all.peak"],
            "peak_reserved": s["reserved_bytes.all.peak"],
            "peak_active": s["active_bytes.all.peak"],
            "allocated_end": s["allocated_bytes.all.current"],
            "reserved_end": s["reserved_bytes.all.current"],
            "device_used": total - free,
            "num_alloc_retries": s.get("num_alloc_retries", 0),
        })

    def end_window(self):
        t = self.torch
        t.cuda.synchronize(self.device)
        s = self.stats()
        end = {
            "allocated_end": s["allocated_bytes.all.current"],
            "requested_end": s["requested_bytes.all.current"],
            "reserved_end": s["reserved_bytes.all.current"],
            "active_end": s["active_bytes.all.current"],
        }
        return window_summary(self.start, self.rows, end), dict(s)


def start_recording(stacks="python", max_entries=MAX_ENTRIES):
    t = _torch()
    t.cuda.memory._record_memory_history(
        enabled="all", context="all", stacks=stacks, max_entries=max_entries)


def neutral_rules(repo=None):
    """Rules for this machine: site-packages, the standard library and the
    repository. With no repo, the repository is the one holding this file
    (the scenarios); with one (a captured script's folder), this file's own
    folder becomes <memscope>/."""
    t = _torch()
    here = os.path.dirname(os.path.abspath(__file__))
    extra = []
    if repo is None:
        repo = os.path.dirname(here)
    else:
        extra.append((here, MEMSCOPE_PREFIX))
    site = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    site.add(os.path.dirname(os.path.dirname(os.path.abspath(t.__file__))))
    py = {sysconfig.get_paths()["stdlib"]}
    return path_rules(repo, sorted(site), sorted(py), extra)


def write_outputs(out, truth, neutral):
    """Take the snapshot, rewrite paths if asked, write snapshot and truth."""
    t = _torch()
    snap = t.cuda.memory._snapshot()
    t.cuda.memory._record_memory_history(enabled=None)
    rules = neutral_rules() if neutral else []
    if rules:
        rewrite_snapshot_paths(snap, rules)
        for key in ("leak",):
            if key in truth and "file" in truth[key]:
                truth[key]["file"] = rewrite_path(truth[key]["file"], rules)
        for site in truth.get("sites", {}).values():
            site["file"] = rewrite_path(site["file"], rules)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "snapshot.pickle"), "wb") as f:
        pickle.dump(snap, f, protocol=PICKLE_PROTOCOL)
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
        f.write("\n")


def base_truth(name, args):
    t = _torch()
    props = t.cuda.get_device_properties(0)
    return {
        "schema": TRUTH_SCHEMA,
        "scenario": name,
        "args": {k: v for k, v in vars(args).items() if k not in ("func", "out")},
        "torch": t.__version__,
        "device_name": props.name,
        "device_total": props.total_memory,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    }


def param_bytes(model):
    return sum(p.numel() * p.element_size() for p in model.parameters())


def mlp(width, depth):
    nn = _torch().nn
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.GELU()]
    layers.append(nn.Linear(width, 10))
    return nn.Sequential(*layers)


def train_steps(meter, model, opt, make_batch, loss_fn, first, last, autocast=None):
    """Run steps first..last, each split into the four measured phases."""
    t = _torch()
    for step in range(first, last + 1):
        with meter.phase(step, "data"):
            x, y = make_batch()
        with meter.phase(step, "forward"):
            ctx = autocast() if autocast else contextlib.nullcontext()
            with ctx:
                loss = loss_fn(model(x), y)
        with meter.phase(step, "backward"):
            loss.backward()
        with meter.phase(step, "optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
            del loss, x, y
    t.cuda.synchronize()


# ---- scenarios --------------------------------------------------------------


def scenario_mlp_adamw(args):
    """MLP + AdamW, recording from before the model exists, steps 0-4."""
    t = _torch()
    meter = Meter()
    start_recording(args.stacks)
    meter.begin_window()
    with meter.phase(-1, "setup"):
        model = mlp(args.width, args.depth).cuda()
        opt = t.optim.AdamW(model.parameters(), lr=1e-3)
    crit = t.nn.CrossEntropyLoss()

    def batch():
        return (t.randn(args.batch, args.width, device="cuda"),
                t.randint(0, 10, (args.batch,), device="cuda"))

    train_steps(meter, model, opt, batch, crit, 0, args.steps - 1)
    window, stats = meter.end_window()
    truth = base_truth(args.scenario, args)
    truth.update(window=window, phases=meter.rows, memory_stats_end=stats,
                 param_bytes=param_bytes(model))
    write_outputs(args.out, truth, args.neutral_paths)
    return 0


class Stasher(object):
    """Wraps a model and leaks: keeps a clone of every step's input batch
    (batch x width fp32: 8 MiB a step with the defaults, larger than any
    other site, so the staircase is plain)."""

    def __init__(self, model):
        self.model = model
        self.stash = []
        self.leak_line = None

    def __call__(self, x):
        self.leak_line = inspect.currentframe().f_lineno + 1
        self.stash.append(x.detach().clone())  # the planted leak
        return self.model(x)


def scenario_leak(args):
    """An MLP whose wrapper stashes a clone of its output every step."""
    t = _torch()
    meter = Meter()
    start_recording(args.stacks)
    meter.begin_window()
    with meter.phase(-1, "setup"):
        net = mlp(args.width, args.depth).cuda()
        opt = t.optim.AdamW(net.parameters(), lr=1e-3)
    model = Stasher(net)
    crit = t.nn.CrossEntropyLoss()

    def batch():
        return (t.randn(args.batch, args.width, device="cuda"),
                t.randint(0, 10, (args.batch,), device="cuda"))

    train_steps(meter, model, opt, batch, crit, 0, args.steps - 1)
    window, stats = meter.end_window()
    truth = base_truth(args.scenario, args)
    leaked = model.stash[0]
    truth.update(window=window, phases=meter.rows, memory_stats_end=stats,
                 param_bytes=param_bytes(net),
                 leak={"file": os.path.abspath(__file__), "line": model.leak_line,
                       "function": "__call__", "steps": len(model.stash),
                       "bytes_per_step": leaked.numel() * leaked.element_size()})
    write_outputs(args.out, truth, args.neutral_paths)
    return 0


def scenario_llama_bf16(args):
    """A small Llama from a transformers config, 128K vocab, bf16 autocast.

    The training step calls the output projection and the cross-entropy
    itself, the way many training loops do, so those lines are user frames.
    One warm-up step runs before recording starts (optimizer state is lazy);
    then args.steps steps are recorded. --checkpointing turns on activation
    checkpointing (non-reentrant) in every decoder layer.
    """
    t = _torch()
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden,
                      intermediate_size=args.intermediate, num_hidden_layers=args.layers,
                      num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
                      max_position_embeddings=args.seq, tie_word_embeddings=False,
                      attn_implementation="sdpa")
    model = LlamaForCausalLM(cfg).cuda()
    model.train()
    if args.checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = t.optim.AdamW(model.parameters(), lr=1e-4)
    F = t.nn.functional

    def batch():
        ids = t.randint(0, args.vocab, (args.batch, args.seq), device="cuda")
        return ids, ids

    def loss_fn(out, _):
        return out

    class Wrapped(object):
        def __call__(self, ids):
            h = model.model(input_ids=ids).last_hidden_state
            logits = model.lm_head(h)  # the output projection: tokens x vocab
            return F.cross_entropy(logits.float().view(-1, args.vocab), ids.view(-1))

    autocast = lambda: t.autocast("cuda", dtype=t.bfloat16)
    warm = Meter()
    warm.begin_window()
    train_steps(warm, Wrapped(), opt, batch, loss_fn, 0, 0, autocast)
    meter = Meter()
    start_recording(args.stacks)
    prof = profiler() if args.profile else contextlib.nullcontext()
    with prof:
        meter.begin_window()
        train_steps(meter, Wrapped(), opt, batch, loss_fn, 1, args.steps, autocast)
        window, stats = meter.end_window()
    truth = base_truth(args.scenario, args)
    truth.update(window=window, phases=meter.rows, memory_stats_end=stats,
                 param_bytes=param_bytes(model), warmup_phases=warm.rows,
                 logits_bytes_fp32=args.batch * args.seq * args.vocab * 4,
                 sites=source_lines(Wrapped.__call__, ("lm_head", "cross_entropy")))
    if args.profile:
        truth["key_averages"] = key_averages(prof)
        write_profile(prof, args.out, args.neutral_paths)
    write_outputs(args.out, truth, args.neutral_paths)
    return 0


def source_lines(fn, names):
    """The file and line of the first line of fn that mentions each name."""
    lines, first = inspect.getsourcelines(fn)
    out = {}
    for i, text in enumerate(lines):
        for name in names:
            if name in text and name not in out:
                out[name] = {"file": os.path.abspath(inspect.getsourcefile(fn)), "line": first + i}
    return out


def profiler():
    """A torch.profiler window with everything memory attribution needs."""
    t = _torch()
    acts = [t.profiler.ProfilerActivity.CPU, t.profiler.ProfilerActivity.CUDA]
    return t.profiler.profile(activities=acts, profile_memory=True, record_shapes=True,
                              with_stack=True)


def key_averages(prof):
    """What prof.key_averages() reports per operator, memory columns only."""
    rows = []
    for e in prof.key_averages():
        self_dev = getattr(e, "self_device_memory_usage", None)
        if self_dev is None:
            self_dev = getattr(e, "self_cuda_memory_usage", 0)
        dev = getattr(e, "device_memory_usage", None)
        if dev is None:
            dev = getattr(e, "cuda_memory_usage", 0)
        rows.append({"name": e.key, "count": e.count, "self_device_memory_usage": self_dev,
                     "device_memory_usage": dev,
                     "self_cpu_memory_usage": e.self_cpu_memory_usage,
                     "cpu_memory_usage": e.cpu_memory_usage})
    rows.sort(key=lambda r: (-abs(r["self_device_memory_usage"]), r["name"]))
    return rows


def write_profile(prof, out, neutral):
    """Chrome trace (gzip) and the profiler's memory timeline files."""
    os.makedirs(out, exist_ok=True)
    write_trace(prof, os.path.join(out, "trace.json.gz"), neutral_rules() if neutral else [])
    prof.export_memory_timeline(os.path.join(out, "memory_timeline.json"), device="cuda:0")
    prof.export_memory_timeline(os.path.join(out, "memory_timeline.raw.json.gz"), device="cuda:0")


def write_trace(prof, path, rules):
    """The profiler's Chrome trace, gzipped, machine paths rewritten by rules."""
    import gzip
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        with open(raw) as f:
            text = f.read().replace(raw, "trace.json")  # traceName: no temp path
    for old, new in rules:
        text = text.replace(old, new)
    with gzip.open(path, "wt") as f:
        f.write(text)


def scenario_oom(args):
    """Cap the process's memory and grow the batch until an allocation fails.

    The OOM observer records what the allocator reported; the snapshot is
    taken after the handler has returned, so no frame of the failed step
    holds tensors.
    """
    t = _torch()
    total = t.cuda.get_device_properties(0).total_memory
    t.cuda.set_per_process_memory_fraction(args.cap / total, 0)
    seen = []

    def observer(device, alloc, device_allocated, device_free):
        s = t.cuda.memory_stats(device)
        seen.append({"device": device, "request": alloc, "device_limit": device_allocated,
                     "device_free": device_free,
                     "allocated": s["allocated_bytes.all.current"],
                     "reserved": s["reserved_bytes.all.current"],
                     "requested": s["requested_bytes.all.current"]})

    meter = Meter()
    start_recording(args.stacks)
    meter.begin_window()
    with meter.phase(-1, "setup"):
        model = mlp(args.width, args.depth).cuda()
        opt = t.optim.AdamW(model.parameters(), lr=1e-3)
        t._C._cuda_attach_out_of_memory_observer(observer)
    crit = t.nn.CrossEntropyLoss()
    batch_size = args.batch
    failed = None
    step = 0
    while failed is None and step < 64:
        try:
            train_steps(meter, model, opt,
                        lambda: (t.randn(batch_size, args.width, device="cuda"),
                                 t.randint(0, 10, (batch_size,), device="cuda")),
                        crit, step, step)
        except t.cuda.OutOfMemoryError as e:
            failed = {"step": step, "batch": batch_size, "message": str(e).splitlines()[0]}
            # the failing phase never appended its row: record it now
            s = t.cuda.memory_stats()
            failed["peak_allocated_in_phase"] = s["allocated_bytes.all.peak"]
            failed["peak_requested_in_phase"] = s["requested_bytes.all.peak"]
            failed["peak_reserved_in_phase"] = s["reserved_bytes.all.peak"]
            failed["peak_active_in_phase"] = s["active_bytes.all.peak"]
        step += 1
        batch_size *= 2
    opt.zero_grad(set_to_none=True)
    window, stats = meter.end_window()
    if failed:
        for key in ("allocated", "requested", "reserved", "active"):
            window["max_" + key] = max(window["max_" + key], failed["peak_%s_in_phase" % key])
    truth = base_truth(args.scenario, args)
    truth.update(window=window, phases=meter.rows, memory_stats_end=stats,
                 param_bytes=param_bytes(model), cap_bytes=args.cap,
                 oom={"failed": failed, "observer": seen})
    write_outputs(args.out, truth, args.neutral_paths)
    return 0


SCENARIOS = {
    "mlp-adamw": (scenario_mlp_adamw, dict(width=1024, depth=4, batch=256, steps=5)),
    "leak": (scenario_leak, dict(width=1024, depth=3, batch=2048, steps=8)),
    "llama-bf16": (scenario_llama_bf16, dict(vocab=128256, hidden=256, intermediate=688,
                                              layers=2, heads=4, kv_heads=2, seq=256,
                                              batch=2, steps=3)),
    "llama-profiled": (scenario_llama_bf16, dict(vocab=128256, hidden=256, intermediate=688,
                                                  layers=2, heads=4, kv_heads=2, seq=256,
                                                  batch=2, steps=2, profile=1)),
    "oom": (scenario_oom, dict(width=2048, depth=3, batch=1024, steps=1, cap=1 << 30)),
}


# ---- capture of a user's script (harness.py run) --------------------------


class CaptureSession(object):
    """Everything memscope adds to an unmodified training script: phase
    ranges from hooks, per-phase peaks on the measured steps, per-step stats,
    the OOM observer, the optional profiler window, and the files at exit.
    It is the PhaseTracker's sink."""

    def __init__(self, args, env, rules):
        import threading

        self.t = t = _torch()
        self.args = args
        self.env = env
        self.rules = rules
        self.out = args.out
        self.main_thread = threading.main_thread()
        self.device = t.cuda.current_device()
        self.window = MeasureWindow(parse_steps(args.measure_steps))
        self.profile = parse_steps(args.profile_steps)
        self.tracker = PhaseTracker(self)
        self.rows = []
        self.run_peak = {}
        self.device_used_max = 0
        self.oom_events = []
        self.oom_pending = False
        self.files = {}
        self.prof = None
        self.profile_done = False
        self.handles = []
        self.restore = []
        self.forward_handle = None
        self.depth = 0
        self.unwinding = False
        self.steps_path = os.path.join(self.out, self.name("steps", ".jsonl"))
        self.steps_file = open(self.steps_path, "w")
        self.files["steps"] = os.path.basename(self.steps_path)

    def name(self, base, ext):
        return rank_file(base, ext, self.env["rank"], self.env["world"])

    # -- the tracker's sink --

    def open_range(self, name):
        rf = self.t.profiler.record_function(name)
        rf.__enter__()
        return rf

    def close_range(self, rf):
        rf.__exit__(None, None, None)

    def boundary(self, prev, nxt):
        act = self.window.action(prev, nxt)
        if act:
            stats, used = self.sample()
            if act == "row":
                self.rows.append(phase_row(prev[0], prev[1], stats, used))
            self.t.cuda.reset_peak_memory_stats(self.device)
        if self.profile and not self.profile_done:
            if self.prof is None and nxt is not None and in_steps(self.profile, nxt[0]):
                self.start_profiler()
            elif self.prof is not None and (nxt is None or nxt[0] > self.profile[1]):
                self.stop_profiler()
        if self.oom_pending and not self.unwinding and "snapshot_oom" not in self.files:
            self.oom_pending = False
            self.dump_snapshot(self.name("snapshot.oom", ".pickle"), "snapshot_oom", stop=False)
        self.sync_forward_hook()

    def step_end(self, step):
        t = self.t
        t.cuda.synchronize(self.device)
        free, total = t.cuda.mem_get_info(self.device)
        stats = t.cuda.memory_stats(self.device)
        self.device_used_max = max(self.device_used_max, total - free)
        self.steps_file.write(json.dumps(step_line(step, "optimizer_end", stats, free, total)) + "\n")
        self.steps_file.flush()

    def sample(self):
        """Synchronize, read memory_stats() and the driver's used bytes, and
        fold the peaks into the run's peaks."""
        t = self.t
        t.cuda.synchronize(self.device)
        stats = t.cuda.memory_stats(self.device)
        free, total = t.cuda.mem_get_info(self.device)
        fold_peaks(self.run_peak, stats)
        self.device_used_max = max(self.device_used_max, total - free)
        return stats, total - free

    # -- hooks --

    def install(self):
        t = self.t
        tr = self.tracker
        import importlib

        om = importlib.import_module("torch.optim.optimizer")
        if hasattr(om, "register_optimizer_step_pre_hook"):
            def pre(opt, args, kwargs):
                self.on_main(tr.optimizer_begin)

            def post(opt, args, kwargs):
                self.on_main(tr.optimizer_end)

            self.handles.append(om.register_optimizer_step_pre_hook(pre))
            self.handles.append(om.register_optimizer_step_post_hook(post))
        else:  # torch < 2.0: wrap each optimizer's step as it is made
            self.patch(t.optim.Optimizer, "__init__", self.wrap_init)
        for cls in (t.optim.Optimizer, t.nn.Module):
            self.patch(cls, "zero_grad", self.wrap(tr.zero_grad_begin, tr.zero_grad_end))
        self.patch(t.Tensor, "backward", self.wrap(self.backward_begin, self.backward_end))
        self.patch(t.autograd, "backward", self.wrap(self.backward_begin, self.backward_end))
        self.sync_forward_hook()

    def uninstall(self):
        for h in self.handles:
            h.remove()
        self.handles = []
        if self.forward_handle is not None:
            self.forward_handle.remove()
            self.forward_handle = None
        for obj, attr, old in reversed(self.restore):
            setattr(obj, attr, old)
        self.restore = []

    def patch(self, obj, attr, make):
        old = getattr(obj, attr)
        self.restore.append((obj, attr, old))
        setattr(obj, attr, make(old))

    def on_main(self, fn):
        import threading

        if threading.current_thread() is self.main_thread:
            fn()

    def wrap(self, begin, end):
        import functools

        def make(old):
            @functools.wraps(old)
            def hooked(*a, **k):
                self.on_main(begin)
                try:
                    out = old(*a, **k)
                except BaseException:
                    # an exception (an OOM) is unwinding: close the phase,
                    # but take no snapshot while its frames hold tensors
                    self.unwinding = True
                    try:
                        self.on_main(end)
                    finally:
                        self.unwinding = False
                    raise
                self.on_main(end)
                return out
            return hooked
        return make

    def wrap_init(self, old):
        session = self

        def init(opt, *a, **k):
            old(opt, *a, **k)
            step = opt.step

            def hooked_step(*sa, **sk):
                session.on_main(session.tracker.optimizer_begin)
                try:
                    return step(*sa, **sk)
                finally:
                    session.on_main(session.tracker.optimizer_end)
            opt.step = hooked_step
        return init

    def backward_begin(self):
        self.depth += 1
        if self.depth == 1:
            self.tracker.backward_begin()

    def backward_end(self):
        self.depth -= 1
        if self.depth == 0:
            self.tracker.backward_end()

    def sync_forward_hook(self):
        """The global forward pre-hook is registered only while a module call
        would start a forward phase: modules skip the hook path otherwise."""
        want = self.tracker.wants_forward()
        if want and self.forward_handle is None:
            import importlib

            reg = importlib.import_module("torch.nn.modules.module").register_module_forward_pre_hook
            self.forward_handle = reg(lambda mod, inp: self.on_main(self.tracker.forward))
        elif not want and self.forward_handle is not None:
            self.forward_handle.remove()
            self.forward_handle = None

    def on_oom(self, device, alloc, device_limit, device_free):
        """The allocator's OOM observer: record, dump later (outside the
        exception's frames, at the next phase boundary or at exit)."""
        if len(self.oom_events) < OOM_EVENTS_KEPT:
            s = self.t.cuda.memory_stats(device)
            self.oom_events.append({
                "device": device, "request": alloc, "device_limit": device_limit,
                "device_free": device_free, "step": self.tracker.step,
                "phase": self.tracker.interval[1] if self.tracker.interval else None,
                "allocated": s.get("allocated_bytes.all.current", 0),
                "reserved": s.get("reserved_bytes.all.current", 0),
                "requested": s.get("requested_bytes.all.current", 0)})
        self.oom_pending = True

    # -- profiler and files --

    def start_profiler(self):
        self.prof = profiler()
        self.prof.__enter__()

    def stop_profiler(self):
        prof, self.prof = self.prof, None
        self.profile_done = True
        if prof is None:
            return
        prof.__exit__(None, None, None)
        name = self.name("trace", ".json.gz")
        write_trace(prof, os.path.join(self.out, name), self.rules)
        self.files["trace"] = name

    def dump_snapshot(self, name, key, stop):
        t = self.t
        snap = t.cuda.memory._snapshot()
        if stop:
            t.cuda.memory._record_memory_history(enabled=None)
        if self.rules:
            rewrite_snapshot_paths(snap, self.rules)
        with open(os.path.join(self.out, name), "wb") as f:
            pickle.dump(snap, f, protocol=PICKLE_PROTOCOL)
        self.files[key] = name

    def finish(self, status, exc_info, wall_s):
        """After the script: close the phases, stop the profiler, take the
        snapshot (the exception's frames are gone by now) and write
        capture.json."""
        import gc

        self.oom_pending = False  # the snapshot at exit holds the OOM's events
        self.tracker.finish()
        self.uninstall()
        if self.prof is not None:
            self.stop_profiler()
        gc.collect()
        t = self.t
        stats, used = self.sample()
        free, total = t.cuda.mem_get_info(self.device)
        self.steps_file.write(json.dumps(step_line(self.tracker.step, "exit", stats, free, total)) + "\n")
        self.steps_file.close()
        self.dump_snapshot(self.name("snapshot", ".pickle"), "snapshot", stop=True)
        props = t.cuda.get_device_properties(self.device)
        doc = {
            "schema": CAPTURE_SCHEMA,
            "rank": self.env["rank"], "world": self.env["world"],
            "local_rank": self.env["local_rank"], "device": self.device,
            "coords": rank_coords(os.environ, self.env),
            "device_name": props.name, "device_total": props.total_memory,
            "torch": t.__version__, "python": sys.version.split()[0],
            "script": self.args.script, "exit_code": status, "exception": exc_info,
            "wall_s": wall_s, "steps": self.tracker.steps_seen,
            "measure_steps": list(self.window.window) if self.window.window else None,
            "profile_steps": list(self.profile) if self.profile else None,
            "max_entries": self.args.max_entries, "stacks": self.args.stacks,
            "phases": self.rows, "peak": self.run_peak, "device_used_max": self.device_used_max,
            "oom": self.oom_events, "files": self.files,
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
            "memory_stats_end": dict(stats),
        }
        with open(os.path.join(self.out, self.name("capture", ".json")), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")


def run_script(script):
    """Run the user's script (or '-m module') as __main__, the way python
    would, and return the exception it ended with (None if none)."""
    import runpy

    try:
        if script[0] == "-m":
            sys.argv = [script[1]] + script[2:]
            sys.path[0] = os.getcwd()
            runpy.run_module(script[1], run_name="__main__", alter_sys=True)
        else:
            path = os.path.abspath(script[0])
            sys.argv = list(script)
            sys.path[0] = os.path.dirname(path)
            runpy.run_path(path, run_name="__main__")
    except BaseException as e:  # noqa: B902 - the script's own exit, as python would report it
        return e
    return None


def print_user_traceback(exc):
    """Print exc's traceback the way python would for the script: without
    this file's frames (runpy's at the top, the hooks' in the middle)."""
    import traceback

    here = os.path.abspath(__file__)
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    frames = [f for f in te.stack if f.filename != here]
    while frames and "runpy" in frames[0].filename:
        frames = frames[1:]
    te.stack = traceback.StackSummary.from_list(frames)
    sys.stderr.write("".join(te.format()))


def exception_info(exc, t):
    if exc is None or isinstance(exc, SystemExit):
        return None
    msg = str(exc).strip().splitlines()
    oom = isinstance(exc, t.cuda.OutOfMemoryError) or is_oom_message(str(exc))
    return {"type": type(exc).__name__, "message": msg[0] if msg else "", "oom": bool(oom)}


def cmd_run(args, t):
    import time

    env = dist_env(os.environ)
    if env["world"] > 1 or "LOCAL_RANK" in os.environ:
        if env["local_rank"] < t.cuda.device_count():
            t.cuda.set_device(env["local_rank"])
    os.makedirs(args.out, exist_ok=True)
    script_dir = os.getcwd() if args.script[0] == "-m" else os.path.dirname(os.path.abspath(args.script[0]))
    rules = neutral_rules(script_dir) if args.neutral_paths else []
    t.cuda.init()
    t.cuda.memory._record_memory_history(enabled="all", context="all", stacks=args.stacks,
                                         max_entries=args.max_entries)
    session = CaptureSession(args, env, rules)
    if hasattr(t._C, "_cuda_attach_out_of_memory_observer"):
        t._C._cuda_attach_out_of_memory_observer(session.on_oom)
    session.install()
    import signal

    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    try:
        signal.signal(signal.SIGTERM, on_term)  # torchrun stops the other ranks with SIGTERM
    except ValueError:
        pass
    start = time.time()
    exc = run_script(args.script)
    wall = time.time() - start
    status, text = exit_status(exc)
    info = exception_info(exc, t)
    if info is not None:
        print_user_traceback(exc)
    elif text:
        print(text, file=sys.stderr)
    if exc is not None:
        exc.__traceback__ = None  # let the frames, and the tensors they hold, go
    del exc
    try:
        session.finish(status, info, wall)
    except Exception as e:  # noqa: B902 - the script's status matters more
        print("harness.py: writing the capture files failed: %s: %s" % (type(e).__name__, e),
              file=sys.stderr)
    return status


# ---- one sweep point (harness.py point) -----------------------------------


def build_workload(args, t, device):
    """The workload: (model, make_batch(n) -> (inputs, targets), loss_fn(out,
    targets) -> loss, facts). Models are built on the device with random
    weights; nothing is downloaded."""
    kind = workload_kind(args.workload)
    nn = t.nn
    F = nn.functional
    if kind == "mlp":
        with t.device(device):
            layers = []
            for _ in range(args.depth):
                layers += [nn.Linear(args.width, args.width), nn.GELU()]
            layers.append(nn.Linear(args.width, args.classes))
            model = nn.Sequential(*layers)

        def make_batch(n):
            return (t.randn(n, args.seq, args.width, device=device),
                    t.randint(0, args.classes, (n, args.seq), device=device))

        def loss_fn(out, y):
            return F.cross_entropy(out.float().view(-1, args.classes), y.view(-1))
        facts = {"width": args.width, "depth": args.depth, "seq": args.seq, "classes": args.classes}
        return model, make_batch, loss_fn, facts
    if kind == "llama":
        import transformers

        if args.config:
            with open(args.config) as f:
                d = json.load(f)
            cfg = transformers.AutoConfig.for_model(d.pop("model_type", "llama"), **d)
        else:
            cfg = transformers.LlamaConfig(
                vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
                num_hidden_layers=args.layers, num_attention_heads=args.heads,
                num_key_value_heads=args.kv_heads, max_position_embeddings=args.seq,
                tie_word_embeddings=False)
        with t.device(device):
            model = transformers.AutoModelForCausalLM.from_config(cfg)
        vocab = cfg.vocab_size
        if args.checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})

        def make_batch(n):
            ids = t.randint(0, vocab, (n, args.seq), device=device)
            return ids, ids

        class CausalLM(nn.Module):
            """The step calls the output projection and the cross-entropy
            itself, as many training loops do, so the logits show as a user
            frame in the snapshot."""

            def __init__(self, lm):
                super().__init__()
                self.lm = lm

            def forward(self, ids):
                base = self.lm.get_decoder() if hasattr(self.lm, "get_decoder") else None
                head = self.lm.get_output_embeddings()
                if base is None or head is None:
                    return self.lm(input_ids=ids).logits
                h = base(input_ids=ids).last_hidden_state
                return head(h)  # the logits: tokens x vocab

        def loss_fn(logits, ids):
            return F.cross_entropy(logits.float().view(-1, vocab), ids.view(-1))
        facts = {"model_type": cfg.model_type, "vocab": vocab, "seq": args.seq,
                 "hidden": getattr(cfg, "hidden_size", None),
                 "layers": getattr(cfg, "num_hidden_layers", None)}
        return CausalLM(model), make_batch, loss_fn, facts
    if kind == "vit":
        import torchvision

        with t.device(device):
            model = torchvision.models.get_model(args.vision_model, weights=None,
                                                 num_classes=args.classes)

        def make_batch(n):
            return (t.randn(n, 3, args.image_size, args.image_size, device=device),
                    t.randint(0, args.classes, (n,), device=device))

        def loss_fn(out, y):
            return F.cross_entropy(out, y)
        return model, make_batch, loss_fn, {"vision_model": args.vision_model,
                                            "image_size": args.image_size}
    import importlib

    mod, _, fn = args.workload.partition(":")
    factory = getattr(importlib.import_module(mod), fn)
    model, make_batch, loss_fn = factory(device)[:3]
    return model.to(device), make_batch, loss_fn, {"factory": args.workload}


def call_model(model, inputs):
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def wrap_parallel(model, args, t, env):
    if args.parallel == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, device_ids=[env["local_rank"]])
    if args.parallel == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for m in list(model.modules())[1:]:
            if type(m).__name__.endswith(("DecoderLayer", "Block", "EncoderLayer")):
                fully_shard(m)
        fully_shard(model)
    return model


class PointRun(object):
    """One batch size at one precision in a fresh process: warm-up steps,
    then measured steps, each split into phases whose peaks the Meter reads."""

    def __init__(self, args, t, env, device):
        self.args, self.t, self.env, self.device = args, t, env, device
        self.meter = Meter(device)
        self.step_times = []
        self.oom = None
        self.scaler = None
        self.autocast = None
        if args.precision in ("bf16", "fp16-amp"):
            dtype = t.bfloat16 if args.precision == "bf16" else t.float16
            self.autocast = lambda: t.autocast("cuda", dtype=dtype)
        if args.precision == "fp16-amp" and args.mode == "train":
            self.scaler = t.amp.GradScaler("cuda")

    def step(self, step, model, opt, make_batch, loss_fn):
        t, args, meter = self.t, self.args, self.meter
        ctx = self.autocast or contextlib.nullcontext
        if args.mode == "infer":
            x, _ = make_batch(args.batch)
            with meter.phase(step, "forward"):
                with t.inference_mode(), ctx():
                    out = call_model(model, x)
                del out
            return
        parts = micro_batches(args.batch, args.micro_batch)
        for n in parts:
            x, y = make_batch(n)
            with meter.phase(step, "forward"):
                with ctx():
                    loss = loss_fn(call_model(model, x), y) * (float(n) / args.batch)
            with meter.phase(step, "backward"):
                (self.scaler.scale(loss) if self.scaler else loss).backward()
            del loss, x, y
        with meter.phase(step, "optimizer"):
            if self.scaler:
                self.scaler.step(opt)
                self.scaler.update()
            else:
                opt.step()
            opt.zero_grad(set_to_none=True)

    def steps(self, first, last, model, opt, make_batch, loss_fn, timed):
        t = self.t
        for s in range(first, last + 1):
            if timed:
                a, b = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
                a.record()
            self.step(s, model, opt, make_batch, loss_fn)
            if timed:
                b.record()
                b.synchronize()
                self.step_times.append(a.elapsed_time(b))
        t.cuda.synchronize(self.device)


def cmd_point(args, t):
    env = dist_env(os.environ)
    name = lambda base, ext: rank_file(base, ext, env["rank"], env["world"])
    os.makedirs(args.out, exist_ok=True)
    device = 0
    if env["world"] > 1:
        device = env["local_rank"]
        t.cuda.set_device(device)
        import datetime

        t.distributed.init_process_group("nccl", timeout=datetime.timedelta(seconds=120))
    t.manual_seed(SEED + env["rank"])
    props = t.cuda.get_device_properties(device)
    limit = props.total_memory
    if args.memory_fraction:
        t.cuda.set_per_process_memory_fraction(args.memory_fraction, device)
        limit = int(args.memory_fraction * props.total_memory)
    observed = []

    def observer(dev, alloc, device_limit, device_free):
        if len(observed) < OOM_EVENTS_KEPT:
            s = t.cuda.memory_stats(dev)
            observed.append({"device": dev, "request": alloc, "device_limit": device_limit,
                             "device_free": device_free,
                             "allocated": s.get("allocated_bytes.all.current", 0),
                             "reserved": s.get("reserved_bytes.all.current", 0)})
    if hasattr(t._C, "_cuda_attach_out_of_memory_observer"):
        t._C._cuda_attach_out_of_memory_observer(observer)
    # the workloads' code is this file: <memscope>/harness.py, not a temporary path
    rules = neutral_rules(os.getcwd()) if args.neutral_paths else []
    run = PointRun(args, t, env, device)
    doc = {"schema": POINT_SCHEMA, "workload": args.workload, "batch": args.batch,
           "precision": args.precision, "mode": args.mode, "optimizer": args.optimizer,
           "micro_batch": args.micro_batch, "parallel": args.parallel,
           "rank": env["rank"], "world": env["world"], "torch": t.__version__,
           "device_name": props.name, "device_total": props.total_memory, "memory_limit": limit,
           "warmup": args.warmup, "steps": args.steps, "files": {}}
    status = EXIT_OK
    prof = None
    failed = None
    opt = None
    if args.snapshot:
        # from before the model exists: parameters get their stacks, and an
        # OOM in the warm-up step (the usual place at the first failing
        # batch) is in the recording
        start_recording(args.stacks, args.max_entries)
    try:
        model, make_batch, loss_fn, facts = build_workload(args, t, "cuda:%d" % device)
        doc["workload_facts"] = facts
        doc["parameters"] = sum(p.numel() for p in model.parameters())
        doc["param_bytes"] = param_bytes(model)
        if args.mode == "train":
            model.train()
            opt = (t.optim.AdamW(model.parameters(), lr=1e-4) if args.optimizer == "adamw"
                   else t.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9))
        else:
            model.eval()
            opt = None
        model = wrap_parallel(model, args, t, env)
        run.meter.begin_window()
        run.steps(0, args.warmup - 1, model, opt, make_batch, loss_fn, timed=False)
        if args.profile:
            prof = profiler()
            prof.__enter__()
        first = args.warmup
        run.steps(first, first + args.steps - 1, model, opt, make_batch, loss_fn, timed=True)
    except Exception as e:  # noqa: B902 - OOM is a result here, not a failure
        oom = isinstance(e, t.cuda.OutOfMemoryError) or is_oom_message(str(e))
        if not oom:
            raise
        lines = str(e).strip().splitlines()
        failed = {"message": lines[0] if lines else "", "step": None, "phase": None}
        s = t.cuda.memory_stats(device)
        failed["peak_allocated_in_phase"] = s.get("allocated_bytes.all.peak", 0)
        failed["peak_reserved_in_phase"] = s.get("reserved_bytes.all.peak", 0)
        status = EXIT_OOM
        del e
    if failed is not None:
        opened = run.meter.open_phase
        if opened:
            failed["step"], failed["phase"] = opened
        if opt is not None:
            opt.zero_grad(set_to_none=True)
    if prof is not None:
        prof.__exit__(None, None, None)
        write_trace(prof, os.path.join(args.out, name("trace", ".json.gz")), rules)
        doc["files"]["trace"] = name("trace", ".json.gz")
    if args.snapshot:
        import gc

        gc.collect()
        snap = t.cuda.memory._snapshot()
        t.cuda.memory._record_memory_history(enabled=None)
        if rules:
            rewrite_snapshot_paths(snap, rules)
        with open(os.path.join(args.out, name("snapshot", ".pickle")), "wb") as f:
            pickle.dump(snap, f, protocol=PICKLE_PROTOCOL)
        doc["files"]["snapshot"] = name("snapshot", ".pickle")
    stats = t.cuda.memory_stats(device)
    doc.update(summarize_point(run.meter.rows, run.step_times,
                               (args.warmup, args.warmup + args.steps - 1)))
    doc["warmup_phases"] = [r for r in run.meter.rows if r["step"] < args.warmup]
    doc["fits"] = failed is None
    doc["oom"] = failed
    doc["oom_observer"] = observed
    doc["num_alloc_retries"] = stats.get("num_alloc_retries", 0)
    doc["num_ooms"] = stats.get("num_ooms", 0)
    doc["memory_stats_end"] = dict(stats)
    with open(os.path.join(args.out, name("point", ".json")), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    if env["world"] > 1 and failed is not None:
        # the other ranks wait in a collective that will never come: leave
        # now; torchrun stops them.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    if env["world"] > 1:
        t.distributed.destroy_process_group()
    return status


# ---- what this Python has (harness.py check) ------------------------------


def cmd_check(args):
    """Print what this Python offers as one JSON line; exit 2 with a one-line
    error when a capture or sweep could not run."""
    doc = {"schema": CHECK_SCHEMA, "python": sys.version.split()[0], "executable": sys.executable}

    def fail(msg):
        print("harness.py: " + msg, file=sys.stderr)
        return EXIT_ENV
    try:
        t = _torch()
    except ImportError as e:
        return fail("cannot import torch (%s): run with a Python that has torch (--python)" % e)
    doc["torch"] = t.__version__
    doc["cuda"] = bool(t.cuda.is_available())
    if not doc["cuda"]:
        return fail("CUDA is not available to torch %s (%s)" % (t.__version__, sys.executable))
    doc["devices"] = []
    for i in range(t.cuda.device_count()):
        p = t.cuda.get_device_properties(i)
        doc["devices"].append({"name": p.name, "total": p.total_memory})
    if args.nproc > len(doc["devices"]):
        return fail("--nproc %d: this machine has %d CUDA device(s)" % (args.nproc, len(doc["devices"])))
    if args.workload:
        kind = workload_kind(args.workload)
        need = {"llama": "transformers", "vit": "torchvision"}.get(kind)
        try:
            if kind is None:
                return fail("unknown workload %r: want mlp, llama, vit or pkg.module:factory"
                            % args.workload)
            if need:
                doc[need] = __import__(need).__version__
            if kind == "custom":
                import importlib

                mod, _, fn = args.workload.partition(":")
                if not callable(getattr(importlib.import_module(mod), fn, None)):
                    return fail("workload %s: %s has no function %s" % (args.workload, mod, fn))
        except ImportError as e:
            return fail("workload %s needs %s: %s" % (args.workload, need or "its module", e))
    print(json.dumps(doc, sort_keys=True))
    return EXIT_OK


def build_parser():
    p = argparse.ArgumentParser(prog="harness.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("scenarios", help="list the built-in scenarios")
    sc = sub.add_parser("scenario", help="run one built-in scenario")
    sc.add_argument("scenario", choices=sorted(SCENARIOS))
    sc.add_argument("--out", required=True, help="output directory")
    sc.add_argument("--stacks", choices=("python", "all"), default="python")
    sc.add_argument("--neutral-paths", action="store_true",
                    help="rewrite frame paths to <repo>/, <site-packages>/, <python>/")
    for key in ("width", "depth", "batch", "steps", "vocab", "hidden", "intermediate",
                "layers", "heads", "kv_heads", "seq", "cap", "profile", "checkpointing"):
        sc.add_argument("--" + key.replace("_", "-"), dest=key, type=int, default=None)

    rn = sub.add_parser("run", help="run a training script under capture")
    rn.add_argument("--out", required=True, help="run directory")
    rn.add_argument("--max-entries", type=int, default=MAX_ENTRIES,
                    help="allocator history ring buffer, entries per device")
    rn.add_argument("--stacks", choices=("python", "all"), default="python")
    rn.add_argument("--measure-steps", default=MEASURE_STEPS,
                    help="steps FIRST-LAST whose phases get their own peaks ('' for none)")
    rn.add_argument("--profile-steps", default="",
                    help="steps FIRST-LAST to record with torch.profiler")
    rn.add_argument("--neutral-paths", action="store_true",
                    help="rewrite frame paths to <repo>/ (the script's folder), <site-packages>/ ...")
    rn.add_argument("script", nargs=argparse.REMAINDER,
                    help="-- SCRIPT.py ARGS... or -- -m MODULE ARGS...")

    pt = sub.add_parser("point", help="measure one batch size at one precision")
    pt.add_argument("--out", required=True, help="the point's directory")
    pt.add_argument("--workload", required=True, help="mlp, llama, vit or pkg.module:factory")
    pt.add_argument("--batch", type=int, required=True)
    pt.add_argument("--precision", choices=PRECISIONS, default="fp32")
    pt.add_argument("--mode", choices=MODES, default="train")
    pt.add_argument("--optimizer", choices=OPTIMIZERS, default="adamw")
    pt.add_argument("--micro-batch", type=int, default=0,
                    help="gradient accumulation: micro-batches of at most N (0: one)")
    pt.add_argument("--parallel", choices=PARALLEL, default="none")
    pt.add_argument("--warmup", type=int, default=POINT_WARMUP)
    pt.add_argument("--steps", type=int, default=POINT_STEPS)
    pt.add_argument("--memory-fraction", type=float, default=0.0)
    pt.add_argument("--snapshot", action="store_true", help="record and write a snapshot")
    pt.add_argument("--profile", action="store_true", help="write a profiler trace of the measured steps")
    pt.add_argument("--max-entries", type=int, default=MAX_ENTRIES)
    pt.add_argument("--stacks", choices=("python", "all"), default="python")
    pt.add_argument("--neutral-paths", action="store_true")
    pt.add_argument("--seq", type=int, default=512, help="tokens per sample (mlp, llama)")
    pt.add_argument("--width", type=int, default=4096)
    pt.add_argument("--depth", type=int, default=8)
    pt.add_argument("--classes", type=int, default=1000)
    pt.add_argument("--config", default="", help="llama: a transformers config.json instead of the flags")
    pt.add_argument("--vocab", type=int, default=128256)
    pt.add_argument("--hidden", type=int, default=1024)
    pt.add_argument("--intermediate", type=int, default=2816)
    pt.add_argument("--layers", type=int, default=12)
    pt.add_argument("--heads", type=int, default=16)
    pt.add_argument("--kv-heads", type=int, default=8)
    pt.add_argument("--checkpointing", action="store_true")
    pt.add_argument("--vision-model", default="vit_b_16", help="vit: a torchvision model name")
    pt.add_argument("--image-size", type=int, default=224)

    ck = sub.add_parser("check", help="print what this Python has for capture")
    ck.add_argument("--workload", default="")
    ck.add_argument("--nproc", type=int, default=1)
    return p


def check_args(args):
    """Argument checks argparse cannot express; returns an error or None."""
    if args.command == "run":
        if args.script and args.script[0] == "--":
            args.script = args.script[1:]
        if not args.script or args.script == ["-m"]:
            return "run: missing the script: run --out DIR -- SCRIPT.py ARGS..."
        try:
            parse_steps(args.measure_steps)
            parse_steps(args.profile_steps)
        except ValueError as e:
            return "run: %s" % e
        if args.max_entries <= 0:
            return "run: --max-entries must be positive"
    if args.command == "point":
        if workload_kind(args.workload) is None:
            return "point: unknown workload %r: want mlp, llama, vit or pkg.module:factory" % args.workload
        if args.batch <= 0 or args.steps <= 0 or args.warmup < 0 or args.micro_batch < 0:
            return "point: --batch and --steps must be positive, --warmup and --micro-batch not negative"
        if not 0 <= args.memory_fraction <= 1:
            return "point: --memory-fraction must be in [0, 1]"
    return None


def main(argv):
    args = build_parser().parse_args(argv)
    if args.command == "scenarios":
        for name in sorted(SCENARIOS):
            print(name, json.dumps(SCENARIOS[name][1], sort_keys=True))
        return EXIT_OK
    err = check_args(args)
    if err:
        print("harness.py: " + err, file=sys.stderr)
        return EXIT_ENV
    if args.command == "check":
        return cmd_check(args)
    if args.command == "scenario":
        fn, defaults = SCENARIOS[args.scenario]
        for key, value in defaults.items():
            if getattr(args, key, None) is None:
                setattr(args, key, value)
    try:
        t = _torch()
    except ImportError as e:
        print("harness.py: cannot import torch (%s): run it with the Python that has torch" % e,
              file=sys.stderr)
        return EXIT_ENV
    t.manual_seed(SEED)
    if not t.cuda.is_available():
        print("harness.py: CUDA is not available", file=sys.stderr)
        return EXIT_ENV
    t.cuda.init()
    if args.command == "run":
        return cmd_run(args, t)
    if args.command == "point":
        return cmd_point(args, t)
    return fn(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
