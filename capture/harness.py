#!/usr/bin/env python3
"""memscope capture harness: runs PyTorch workloads with allocator history on
and writes what torch itself measured next to the snapshot.

One file, stdlib + torch only (transformers is imported lazily by the Llama
scenario). The Go side embeds this file; it must run from anywhere.

Usage:
    python harness.py scenario NAME --out DIR [--neutral-paths]
    python harness.py scenarios            # list the scenarios

Each scenario writes into DIR:
    snapshot.pickle   torch.cuda.memory._snapshot(), pickle protocol 4
    truth.json        numbers torch measured in the same process (schema below)

truth.json (schema "memscope-truth/v1"):
    window   allocated/requested/reserved/active at the start and end of the
             recorded window, and their peaks over the window (peak counters
             are reset when recording starts and at every phase boundary; the
             window peak is the max over the phases, which partition it)
    phases   one row per (step, phase): peak allocated/requested/reserved/
             active inside the phase, allocated at its end, device used
    memory_stats_end   torch.cuda.memory_stats() when the snapshot is taken
    plus scenario facts: parameter bytes, the planted leak's file and line,
    the OOM request...

The torch-free parts (argument parsing, path rewriting, the phase
arithmetic) are tested on CPU by capture/harness_test.py.
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
ANNOTATION_PREFIX = "memscope"  # record_function names: memscope/step/3/forward

# Neutral prefixes for frame paths, so no capture machine's layout is kept.
REPO_PREFIX = "<repo>/"
SITE_PREFIX = "<site-packages>/"
PYTHON_PREFIX = "<python>/"

# ---- torch-free helpers -----------------------------------------------------


def annotation_name(step, phase):
    """The record_function name that marks one phase of one step."""
    return "%s/step/%d/%s" % (ANNOTATION_PREFIX, step, phase)


def path_rules(repo_root, site_dirs, python_dirs):
    """Rewrite rules (old prefix, new prefix), longest prefix first."""
    rules = []
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
        with t.profiler.record_function(annotation_name(step, name)):
            yield
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


def start_recording(stacks="python"):
    t = _torch()
    t.cuda.memory._record_memory_history(
        enabled="all", context="all", stacks=stacks, max_entries=MAX_ENTRIES)


def neutral_rules():
    t = _torch()
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(here)
    site = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    site.add(os.path.dirname(os.path.dirname(os.path.abspath(t.__file__))))
    py = {sysconfig.get_paths()["stdlib"]}
    return path_rules(repo, sorted(site), sorted(py))


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
    import gzip
    import tempfile

    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        with open(raw) as f:
            text = f.read().replace(raw, "trace.json")  # traceName: no temp path
    if neutral:
        for old, new in neutral_rules():
            text = text.replace(old, new)
    with gzip.open(os.path.join(out, "trace.json.gz"), "wt") as f:
        f.write(text)
    prof.export_memory_timeline(os.path.join(out, "memory_timeline.json"), device="cuda:0")
    prof.export_memory_timeline(os.path.join(out, "memory_timeline.raw.json.gz"), device="cuda:0")


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
    return p


def main(argv):
    args = build_parser().parse_args(argv)
    if args.command == "scenarios":
        for name in sorted(SCENARIOS):
            print(name, json.dumps(SCENARIOS[name][1], sort_keys=True))
        return 0
    fn, defaults = SCENARIOS[args.scenario]
    for key, value in defaults.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    try:
        t = _torch()
    except ImportError as e:
        print("harness.py: cannot import torch (%s): run it with the Python that has torch" % e,
              file=sys.stderr)
        return 2
    t.manual_seed(SEED)
    if not t.cuda.is_available():
        print("harness.py: CUDA is not available", file=sys.stderr)
        return 2
    t.cuda.init()
    return fn(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
