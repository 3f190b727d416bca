"""What torch measured, written beside a snapshot made the way users make
them: plain torch.cuda.memory._record_memory_history / _snapshot, no
memscope harness and no annotation of ours in the snapshot.

The fixture scripts in this folder import this module. Nothing here
allocates device memory or records a function range, so the snapshot holds
only what the script and the libraries it calls did. Truth is kept with
torch's own counters: reset_peak_memory_stats() at every phase boundary (the
phases partition the recorded window, so the window's peak is the max of
the phase peaks), memory_stats() at each boundary.

Phase boundaries follow the definitions memscope reads from a plain
snapshot: a step's forward runs from the end of the previous step to the
call of backward; backward from that call to its return; optimizer from
there through optimizer.step() and the zero_grad that follows (a zero_grad
at the top of a loop belongs to the step before: it frees that step's
gradients). Inference steps have one phase, forward.

Written schema: memscope-truth/v1 (capture/harness.py), with "plain": true
and, per fixture, steps (floor at the end of each step and its peak),
param_bytes, optimizer_state_bytes, leak, sites and oom facts.
"""

import json
import os
import pickle
import sys
import sysconfig

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import harness  # noqa: E402  (path rewriting only: the harness is not run)

INDUCTOR_PREFIX = "/tmp/torchinductor_user/"


def marked_line(path, marker):
    """The 1-based line of path holding marker (a comment such as # LEAK)."""
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if marker in line and "marked_line" not in line:
                return i
    raise ValueError("%s: no line marked %r" % (path, marker))


def tensor_bytes(t):
    return t.numel() * t.element_size()


def param_bytes(model):
    return sum(tensor_bytes(p) for p in model.parameters())


def round512(n):
    return (n + 511) // 512 * 512


def oom_facts(truth, e, phase, **extra):
    """truth.json's "oom" for an OutOfMemoryError e caught by the script:
    torch's message, the phase, the script's line that asked, num_ooms,
    and the script's own facts (step, batch…)."""
    import traceback

    mine = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == truth.script]
    facts = {"message": str(e).splitlines()[0], "phase": phase, "file": truth.script,
             "line": mine[-1].lineno if mine else None,
             "num_ooms": torch.cuda.memory_stats().get("num_ooms")}
    facts.update(extra)
    return facts


def optimizer_state_bytes(opt):
    """Bytes of every device tensor in opt.state, and the same rounded up to
    the allocator's 512-byte blocks."""
    raw = rounded = 0
    for st in opt.state.values():
        for v in st.values():
            if torch.is_tensor(v) and v.is_cuda:
                raw += tensor_bytes(v)
                rounded += round512(tensor_bytes(v))
    return raw, rounded


class Truth(object):
    def __init__(self, name, script, **facts):
        props = torch.cuda.get_device_properties(0)
        self.script = os.path.abspath(script)
        self.t = {
            "schema": harness.TRUTH_SCHEMA,
            "scenario": name,
            "plain": True,
            "script": self.script,
            "torch": torch.__version__,
            "python": sys.version.split()[0],
            "device_name": props.name,
            "device_total": props.total_memory,
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
            "phases": [],
        }
        self.t.update(facts)
        self.cur = None
        self.start = None

    def stats(self):
        torch.cuda.synchronize()
        return torch.cuda.memory_stats()

    def begin_window(self):
        """Call right after _record_memory_history."""
        s = self.stats()
        torch.cuda.reset_peak_memory_stats()
        self.start = {
            "allocated_start": s["allocated_bytes.all.current"],
            "requested_start": s["requested_bytes.all.current"],
            "reserved_start": s["reserved_bytes.all.current"],
            "active_start": s["active_bytes.all.current"],
        }

    def phase(self, step, name, micro=None):
        """Close the open phase and open (step, name); micro numbers a
        micro-batch's phase inside a step (gradient accumulation)."""
        self.close()
        torch.cuda.reset_peak_memory_stats()
        self.cur = (step, name)
        self.micro = micro

    def close(self):
        if self.cur is None:
            return
        s = self.stats()
        step, name = self.cur
        row = {
            "step": step,
            "phase": name,
            "peak_allocated": s["allocated_bytes.all.peak"],
            "peak_requested": s["requested_bytes.all.peak"],
            "peak_reserved": s["reserved_bytes.all.peak"],
            "peak_active": s["active_bytes.all.peak"],
            "allocated_end": s["allocated_bytes.all.current"],
            "reserved_end": s["reserved_bytes.all.current"],
        }
        if getattr(self, "micro", None) is not None:
            row["micro"] = self.micro
        self.t["phases"].append(row)
        self.cur = None

    def freeze_end(self):
        """Close the open phase and take the window's end now: for a
        snapshot written at this moment (memscope.record's OOM observer
        writes it at the failure, before the error unwinds and frees the
        step's tensors), so the truth's end is the snapshot's."""
        self.close()
        self.frozen = self.stats()

    def finish(self, out, snapshot=True):
        """Close the window, take the snapshot as _dump_snapshot does (with
        frame paths rewritten to neutral prefixes) and write truth.json.
        With snapshot=False the script wrote OUT/snapshot.pickle itself
        (memscope.record): its frame paths are rewritten in place."""
        self.close()
        s = getattr(self, "frozen", None) or self.stats()
        end = {
            "allocated_end": s["allocated_bytes.all.current"],
            "requested_end": s["requested_bytes.all.current"],
            "reserved_end": s["reserved_bytes.all.current"],
            "active_end": s["active_bytes.all.current"],
        }
        rows = self.t["phases"]
        self.t["window"] = harness.window_summary(self.start, rows, end)
        self.t["memory_stats_end"] = dict(s)
        steps = {}
        for r in rows:
            if r["step"] < 0:
                continue
            st = steps.setdefault(r["step"], {"step": r["step"], "peak_allocated": 0})
            st["floor_end"] = r["allocated_end"]
            if r["peak_allocated"] > st["peak_allocated"]:
                st["peak_allocated"] = r["peak_allocated"]
                st["peak_phase"] = r["phase"]
        self.t["steps"] = [steps[k] for k in sorted(steps)]
        self.t["steps_recorded"] = len(steps)

        rules = neutral_rules()
        if snapshot:
            snap = torch.cuda.memory._snapshot()
            torch.cuda.memory._record_memory_history(enabled=None)
        else:
            with open(os.path.join(out, "snapshot.pickle"), "rb") as f:
                snap = pickle.load(f)
        harness.rewrite_snapshot_paths(snap, rules)
        self.t["script"] = harness.rewrite_path(self.script, rules)
        for key in ("leak", "oom"):
            v = self.t.get(key)
            if isinstance(v, dict) and "file" in v:
                v["file"] = harness.rewrite_path(v["file"], rules)
        for site in self.t.get("sites", {}).values():
            site["file"] = harness.rewrite_path(site["file"], rules)
        os.makedirs(out, exist_ok=True)
        # _dump_snapshot is pickle.dump(_snapshot(), f) with the default
        # protocol; memscope.record writes protocol 4, kept.
        with open(os.path.join(out, "snapshot.pickle"), "wb") as f:
            pickle.dump(snap, f, **({} if snapshot else {"protocol": 4}))
        with open(os.path.join(out, "truth.json"), "w") as f:
            json.dump(self.t, f, indent=1, sort_keys=True)
            f.write("\n")


    def finish_stats(self, out):
        """finish without a snapshot (nothing was recorded): the window,
        memory_stats() at the end and the phases into OUT/truth.json."""
        self.close()
        s = self.stats()
        self.t["memory_stats_end"] = dict(s)
        self.t["script"] = harness.rewrite_path(self.script, neutral_rules())
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "truth.json"), "w") as f:
            json.dump(self.t, f, indent=1, sort_keys=True)
            f.write("\n")


def neutral_rules():
    """This machine's prefixes → <repo>/, <site-packages>/, <python>/ and a
    neutral inductor cache folder."""
    repo = os.path.dirname(os.path.dirname(HERE))
    site = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    site.add(os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__))))
    py = {sysconfig.get_paths()["stdlib"]}
    extra = []
    import tempfile
    tmp = tempfile.gettempdir()
    for d in os.listdir(tmp) if os.path.isdir(tmp) else ():
        if d.startswith("torchinductor_"):
            extra.append((os.path.join(tmp, d), INDUCTOR_PREFIX))
    return harness.path_rules(repo, sorted(site), sorted(py), extra)
