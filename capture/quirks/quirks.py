"""Snapshots of the ways a recording can hold less than its run did (issue
28's smaller items), each made the way users make it: the script calls
torch's own recording functions and pickles torch.cuda.memory._snapshot();
no memscope code runs in the process. One scenario a process:

    python3 quirks.py legacy-one-entry --out DIR
    python3 quirks.py late-peak --out DIR
    python3 quirks.py state-only --out DIR
    python3 quirks.py stacks-all --out DIR

legacy-one-entry: the pre-2.1 call _record_memory_history(True), which
    torch still routes to _record_memory_history_legacy: blocks carry their
    stacks, the trace keeps trace_alloc_max_entries entries, 1 by default.
late-peak: a first step at 32 times the batch, then recording from the
    second step on at the small batch: the allocator still holds what the
    big step reserved, and the true peak predates the recording.
state-only: _record_memory_history(enabled="state"): blocks carry their
    stacks, the device traces stay empty.
stacks-all: the default stacks="all" over a backward on the autograd
    thread; truth lists every native frame torch wrote with a line number
    (glibc's own files, when its debug information is installed).

Each writes DIR/snapshot.pickle and DIR/truth.json (capture/plain/truthlib:
phase peaks from reset_peak_memory_stats, memory_stats at the end) with the
scenario's own facts.
"""

import argparse
import inspect
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "plain"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from truthlib import Truth, optimizer_state_bytes, param_bytes  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("scenario", choices=["legacy-one-entry", "late-peak", "state-only", "stacks-all"])
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=4)
args = p.parse_args()
torch.manual_seed(0)

WIDTH = 2048


def mlp():
    return nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH), nn.ReLU(),
                         nn.Linear(WIDTH, WIDTH)).cuda()


def train_step(truth, step, model, opt, batch):
    truth.phase(step, "forward")
    x = torch.randn(batch, WIDTH, device="cuda")
    loss = model(x).square().mean()
    truth.phase(step, "backward")
    loss.backward()
    truth.phase(step, "optimizer")
    opt.step()
    opt.zero_grad()


def native_frames(snap):
    """Distinct frames with a line number whose file is not Python source."""
    seen = set()

    def add(frames):
        for f in frames or ():
            fn = f.get("filename", "")
            if f.get("line", 0) and not fn.endswith(".py") and not fn.startswith("<"):
                seen.add((fn, f.get("line"), f.get("name", "")))

    for seg in snap["segments"]:
        for b in seg["blocks"]:
            add(b.get("frames"))
    for trace in snap["device_traces"]:
        for e in trace:
            add(e.get("frames"))
    return [{"file": fn, "line": ln, "name": nm} for fn, ln, nm in sorted(seen)]


facts = {}
if args.scenario == "legacy-one-entry":
    legacy = inspect.signature(torch.cuda.memory._record_memory_history_legacy).parameters
    facts["legacy_call"] = "torch.cuda.memory._record_memory_history(True)"
    facts["trace_alloc_max_entries_default"] = legacy["trace_alloc_max_entries"].default
    torch.cuda.memory._record_memory_history(True)
    truth = Truth("quirk-legacy-one-entry", __file__, **facts)
    truth.begin_window()
    truth.phase(-1, "setup")
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        train_step(truth, step, model, opt, 256)
elif args.scenario == "late-peak":
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    big = 32 * 256
    x = torch.randn(big, WIDTH, device="cuda")
    model(x).square().mean().backward()  # the big first step, before recording
    opt.step()
    opt.zero_grad()
    del x
    torch.cuda.synchronize()
    facts["big_batch"], facts["batch"] = big, 256
    facts["peak_allocated_before_recording"] = torch.cuda.max_memory_allocated()
    facts["peak_reserved_before_recording"] = torch.cuda.max_memory_reserved()
    torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
    truth = Truth("quirk-late-peak", __file__, **facts)
    truth.begin_window()
    for step in range(1, args.steps + 1):
        train_step(truth, step, model, opt, 256)
elif args.scenario == "state-only":
    torch.cuda.memory._record_memory_history(enabled="state", stacks="python")
    truth = Truth("quirk-state-only", __file__, recording='_record_memory_history(enabled="state")')
    truth.begin_window()
    truth.phase(-1, "setup")
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        train_step(truth, step, model, opt, 256)
else:
    torch.cuda.memory._record_memory_history(max_entries=100000)
    truth = Truth("quirk-stacks-all", __file__)
    truth.begin_window()
    truth.phase(-1, "setup")
    model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(2):
        truth.phase(step, "forward")
        loss = model(torch.randn(256, 1024, device="cuda")).square().mean()
        truth.phase(step, "backward")
        loss.backward()
        truth.phase(step, "optimizer")
        opt.step()
        opt.zero_grad()

torch.cuda.synchronize()
snap = torch.cuda.memory._snapshot()
truth.t["trace_entries"] = [len(t) for t in snap["device_traces"]]
truth.t["blocks_with_frames"] = sum(1 for s in snap["segments"] for b in s["blocks"] if b.get("frames"))
truth.t["native_frames_with_lines"] = native_frames(snap)
truth.t.update(param_bytes=param_bytes(model), optimizer_state_bytes=optimizer_state_bytes(opt)[0],
               optimizer=type(opt).__name__)
truth.finish(args.out)
print(args.scenario, "trace entries", truth.t["trace_entries"], "blocks with frames", truth.t["blocks_with_frames"],
      "native frames with lines", len(truth.t["native_frames_with_lines"]))
for f in truth.t["native_frames_with_lines"][:40]:
    print("  ", f)
