#!/usr/bin/env python3
"""Writes the small snapshot files the decoder tests read, and expected.json.

Stdlib only (no torch). The dicts follow the torch 2.11 schema of
torch.cuda.memory._snapshot() (shared/FORMATS.md §1.3-1.7) and share
objects the way torch does: dict keys and enum strings are single objects,
frame dicts and frame lists are shared by reference, compile_context is a
new string per entry, every block without context shares one empty list.

Run from this directory:  python3 make_testdata.py
It rewrites every output; the Go tests compare decoded values against
expected.json, which this script derives from the same dicts.
"""

import base64
import collections
import gzip
import json
import pickle
import random

SEED = 20251129


def fresh(s):
    """A new str object equal to s (torch builds one per entry)."""
    return "".join(list(s))


def frame(name, filename, line, **fx):
    d = {"name": name, "filename": filename, "line": line}
    d.update(fx)
    return d


def full_snapshot():
    """A 2.11 snapshot touching every key and action."""
    f_alloc = frame("malloc", "CUDACachingAllocator.cpp", 0)
    f_unwind = frame("torch::unwind::unwind()", "??", 0)
    f_linear = frame("forward", "<repo>/model.py", 42)
    f_train = frame("train_step", "<repo>/train.py", 117)
    f_main = frame("<module>", "<repo>/train.py", 200)
    f_fx = frame("addmm", "<repo>/model.py", 43, fx_node_op="call_function",
                 fx_node_name=None, fx_node_target="aten.addmm.default",
                 fx_original_trace="File model.py, line 43")
    f_dup = frame("forward", "<repo>/model.py", 42)  # same value, another object

    empty_frames = []
    stack_a = [f_alloc, f_unwind, f_linear, f_train, f_main]
    stack_b = [f_fx, f_dup, f_train, f_main]
    stack_c = [f_train, f_main]

    G = 1 << 30
    seg0 = 0x7F3A00000000  # LONG1 addresses, like real ones (~1.4e14)
    seg1 = 0x7F3A40000000
    seg2 = 0x7F3B00000000
    segments = [
        {"device": 0, "address": seg0, "total_size": 3 * G, "allocated_size": 2 * G,
         "active_size": 2 * G + (1 << 20), "requested_size": 2 * G - 100,
         "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
         "is_expandable": False, "frames": stack_a,
         "blocks": [
             {"address": seg0, "size": 2 * G, "requested_size": 2 * G - 100,
              "state": "active_allocated", "frames": stack_a},
             {"address": seg0 + 2 * G, "size": 1 << 20, "requested_size": 1 << 19,
              "state": "active_pending_free", "frames": stack_b},
             {"address": seg0 + 2 * G + (1 << 20), "size": G - (1 << 20),
              "requested_size": 4194304, "state": "inactive", "frames": empty_frames},
         ]},
        {"device": 0, "address": seg1, "total_size": 2 << 20, "allocated_size": 512,
         "active_size": 512, "requested_size": 40, "stream": 669024416,
         "segment_type": "small", "segment_pool_id": (1, 0), "is_expandable": False,
         "blocks": [
             {"address": seg1, "size": 512, "requested_size": 40,
              "state": "active_allocated", "frames": stack_c},
             {"address": seg1 + 512, "size": (2 << 20) - 512, "requested_size": 0,
              "state": "inactive", "frames": empty_frames},
         ], "frames": empty_frames},
        {"device": 1, "address": seg2, "total_size": 20 << 20, "allocated_size": 0,
         "active_size": 0, "requested_size": 0, "stream": 0,
         "segment_type": "large", "segment_pool_id": (0, 1), "is_expandable": True,
         "frames": empty_frames,
         "blocks": [{"address": seg2, "size": 20 << 20, "requested_size": 0,
                     "state": "inactive", "frames": empty_frames}]},
    ]

    t0 = 1795969944824791
    na = "N/A"
    trace0 = []

    def entry(action, addr, size, t, frames=None, stream=0, cc=None, um="", key="addr"):
        e = {"action": action, key: addr, "size": size, "stream": stream,
             "time_us": t0 + t, "compile_context": fresh(cc or na),
             "user_metadata": um if um == "" else fresh(um)}
        if frames is not None:
            e["frames"] = frames
        return e

    trace0.append(entry("segment_alloc", seg0, 3 * G, 0, stack_a))
    trace0.append(entry("alloc", seg0, 2 * G - 100, 5, stack_a))
    trace0.append(entry("alloc", seg0 + 2 * G, 1 << 19, 9, stack_b,
                        cc="Torch-Compiled Region: 0/0", um="step=3"))
    trace0.append(entry("free_requested", seg0 + 2 * G, 1 << 19, 12, stack_b, stream=669024416))
    trace0.append(entry("segment_alloc", seg1, 2 << 20, 20, stack_c))
    trace0.append(entry("alloc", seg1, 40, 21, stack_c))
    trace0.append(entry("alloc", seg1 + 512, 700, 22))  # no frames: key absent
    trace0.append(entry("free_requested", seg1 + 512, 700, 23))
    trace0.append(entry("free_completed", seg1 + 512, 700, 24))
    trace0.append(entry("snapshot", 0, 2 * G + 40, 30))
    trace0.append(entry("oom", 1234567, 5 * G, 31, stack_c, key="device_free"))
    trace0.append(entry("segment_free", seg0 + 8 * G, 2 << 20, 32, empty_frames))
    trace0.append(entry("future_action", seg0, 1, 33))  # unknown action: kept

    trace1 = [
        entry("segment_map", seg2, 20 << 20, 40, stack_c),
        entry("alloc", seg2, 1 << 21, 41, stack_a),
        entry("free_requested", seg2, 1 << 21, 42, stack_a),
        entry("free_completed", seg2, 1 << 21, 43, stack_a),
        entry("segment_unmap", seg2 + (20 << 20), 20 << 20, 44),
    ]
    for e in trace1:
        e["time_us"] += 0  # device 1 shares the clock

    settings = {
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "max_split_size": -1,
        "garbage_collection_threshold": 0.0,
        "expandable_segments": True,
        "pinned_num_register_threads": 1,
        "release_lock_on_cudamalloc": False,
        "pinned_use_cuda_host_register": False,
        "graph_capture_record_stream_reuse": False,
        "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)},
    }
    annotations = [
        {fresh("stage"): fresh("START"), fresh("name"): fresh("## forward ##"), "device": 0, "time_us": t0 + 4},
        {fresh("stage"): fresh("END"), fresh("name"): fresh("## forward ##"), "device": 0, "time_us": t0 + 25},
        {fresh("stage"): fresh("START"), fresh("name"): fresh("Optimizer.step#AdamW.step"), "device": 0, "time_us": t0 + 26},
    ]
    return {"segments": segments, "device_traces": [trace0, trace1],
            "allocator_settings": settings, "external_annotations": annotations}


def future_snapshot():
    """Keys from torch after 2.11: unknown keys, pool_id, annotate."""
    s = full_snapshot()
    s["host_segments"] = []
    s["host_traces"] = [[]]
    e = s["device_traces"][0][1]
    e["pool_id"] = (0, 0)
    e["internal_metadata"] = "x"
    s["device_traces"][0].append({"action": "annotate", "addr": e["addr"], "size": 0,
                                  "stream": 0, "time_us": e["time_us"] + 100,
                                  "compile_context": "N/A", "user_metadata": "{\"k\": 1}"})
    return s


def legacy_snapshot():
    """A ≤2.0 snapshot: blocks with history, no block address, cpp_frames."""
    fr = [frame("forward", "model.py", 10), frame("<module>", "train.py", 3)]
    base = 139_900_000_000_000
    segments = [
        {"device": 0, "address": base, "total_size": 4 << 20, "allocated_size": 3 << 20,
         "active_size": 3 << 20, "stream": 0, "segment_type": "large",
         "blocks": [
             {"size": 2 << 20, "requested_size": 2000000, "state": "active_allocated",
              "history": [{"addr": base, "real_size": 2000000, "frames": fr}]},
             {"size": 1 << 20, "state": "active_allocated",  # 1.13: no requested_size
              "history": [{"addr": base + (2 << 20), "real_size": 1000000,
                           "cpp_frames": ["c10::cuda::malloc", "at::empty"]}]},
             {"size": 1 << 20, "state": "inactive"},
         ]},
    ]
    traces = [[
        {"action": "alloc", "addr": base, "size": 2000000, "stream": 0, "frames": fr},
        {"action": "alloc", "addr": base + (2 << 20), "size": 1000000, "stream": 0,
         "cpp_frames": ["c10::cuda::malloc", "at::empty"]},
    ]]
    return {"segments": segments, "device_traces": traces}


def synthetic_snapshot(steps=60):
    """A training-loop-shaped trace with balanced allocations inside one
    large segment, realistic deep shared stacks and increasing time_us. It
    stands in for a real GPU fixture as the benchmark generator's source."""
    rng = random.Random(SEED)
    files = ["<site-packages>/torch/nn/modules/module.py", "<site-packages>/torch/nn/modules/linear.py",
             "<site-packages>/torch/optim/adamw.py", "<repo>/model.py", "<repo>/train.py"]
    pool = [frame(f"fn_{i}", files[i % len(files)], 10 + 7 * i) for i in range(60)]
    cpp = [frame(n, "??", 0) for n in ("c10::cuda::CUDACachingAllocator::malloc", "at::empty_strided",
                                       "at::native::addmm_out", "torch::autograd::Engine::evaluate_function")]
    sites = []
    for i in range(40):
        depth = rng.randint(12, 30)
        st = cpp[: rng.randint(1, 4)] + rng.sample(pool, depth) + [pool[0]]
        sites.append(st)
    base = 0x7F0000000000
    seg_size = 1 << 30
    t = 1795969944824791
    trace = [{"action": "segment_alloc", "addr": base, "size": seg_size, "stream": 0,
              "time_us": t, "compile_context": fresh("N/A"), "user_metadata": "",
              "frames": list(sites[0])}]
    # Parameters: allocated once, live at the end.
    top = base
    params = []
    for i in range(8):
        size = 1 << rng.randint(16, 22)
        t += rng.randint(1, 50)
        trace.append({"action": "alloc", "addr": top, "size": size, "stream": 0, "time_us": t,
                      "compile_context": fresh("N/A"), "user_metadata": "", "frames": list(sites[i])})
        params.append((top, size, trace[-1]["frames"]))
        top += (size + 511) // 512 * 512
    for step in range(steps):
        live = []
        cur = top
        for i in range(rng.randint(10, 30)):
            size = rng.randint(1, 1 << 20) * rng.choice([4, 2])
            t += rng.randint(1, 50)
            fr = list(sites[rng.randrange(len(sites))])
            trace.append({"action": "alloc", "addr": cur, "size": size, "stream": 0, "time_us": t,
                          "compile_context": fresh("N/A"), "user_metadata": "", "frames": fr})
            live.append((cur, size, fr))
            cur += max(512, (size + 511) // 512 * 512)
        rng.shuffle(live)
        for addr, size, fr in live:
            t += rng.randint(1, 50)
            trace.append({"action": "free_requested", "addr": addr, "size": size, "stream": 0,
                          "time_us": t, "compile_context": fresh("N/A"), "user_metadata": "", "frames": fr})
            t += 1
            trace.append({"action": "free_completed", "addr": addr, "size": size, "stream": 0,
                          "time_us": t, "compile_context": fresh("N/A"), "user_metadata": "", "frames": fr})
    empty = []
    blocks = []
    for addr, size, fr in params:
        blocks.append({"address": addr, "size": (size + 511) // 512 * 512, "requested_size": size,
                       "state": "active_allocated", "frames": fr})
    blocks.append({"address": top, "size": base + seg_size - top, "requested_size": 0,
                   "state": "inactive", "frames": empty})
    used = sum(b["size"] for b in blocks[:-1])
    segments = [{"device": 0, "address": base, "total_size": seg_size, "allocated_size": used,
                 "active_size": used, "requested_size": sum(p[1] for p in params), "stream": 0,
                 "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
                 "frames": trace[0]["frames"], "blocks": blocks}]
    return {"segments": segments, "device_traces": [trace],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                   "garbage_collection_threshold": 0.0, "expandable_segments": False,
                                   "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}},
            "external_annotations": []}


# ---- expected values: the decoder's rules, applied to the dicts above ----

ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "snapshot", "oom", "annotate"}
STATES = {"active_allocated", "active_pending_free", "inactive"}


def norm_frame(f):
    return [f.get("name") or "", f.get("filename") or "", f.get("line") or 0,
            f.get("fx_node_op") or "", f.get("fx_node_name") or "",
            f.get("fx_node_target") or "", f.get("fx_original_trace") or ""]


def norm_stack(frames):
    return [norm_frame(f) for f in frames or []]


def cpp_stack(strs):
    return [[s, "??", 0, "", "", "", ""] for s in strs]


def norm_event(e):
    action = e["action"] if e["action"] in ACTIONS else "unknown"
    addr = e.get("addr") or 0
    if action == "oom" and "device_free" in e:
        addr = e["device_free"]
    if "frames" in e:
        frames = norm_stack(e["frames"])
    elif "cpp_frames" in e:
        frames = cpp_stack(e["cpp_frames"])
    else:
        frames = []
    return {"action": action, "addr": addr, "size": e.get("size") or 0,
            "stream": e.get("stream") or 0, "time_us": e.get("time_us") or 0,
            "compile_context": e.get("compile_context") or "",
            "user_metadata": e.get("user_metadata") or "", "frames": frames}


def norm_segment(s):
    blocks, addr = [], s["address"]
    for b in s["blocks"]:
        hist = b.get("history")
        h0 = hist[0] if hist else None
        req = b.get("requested_size")
        if req is None:
            req = h0["real_size"] if h0 and h0.get("real_size") is not None else b["size"]
        if "frames" in b:
            frames = norm_stack(b["frames"])
        elif h0 and "frames" in h0:
            frames = norm_stack(h0["frames"])
        elif h0 and "cpp_frames" in h0:
            frames = cpp_stack(h0["cpp_frames"])
        else:
            frames = []
        blocks.append({"address": addr, "size": b["size"], "requested_size": req,
                       "state": b["state"] if b["state"] in STATES else "unknown",
                       "frames": frames})
        addr += b["size"]
    return {"device": s["device"], "address": s["address"], "total_size": s["total_size"],
            "allocated_size": s.get("allocated_size") or 0, "active_size": s.get("active_size") or 0,
            "requested_size": s.get("requested_size") or 0, "stream": s.get("stream") or 0,
            "small": s.get("segment_type") == "small",
            "pool": list(s.get("segment_pool_id") or (0, 0)),
            "expandable": bool(s.get("is_expandable")), "frames": norm_stack(s.get("frames")),
            "blocks": blocks}


def typed(v):
    """Settings values with their type, so the test can check int vs float."""
    if v is None:
        return {"none": None}
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    if isinstance(v, float):
        return {"float": v}
    if isinstance(v, str):
        return {"str": v}
    if isinstance(v, dict):
        return {"map": {k: typed(x) for k, x in v.items()}}
    return {"list": [typed(x) for x in v]}


def expect(data, fmt, protocol):
    if isinstance(data, list):
        data = {"segments": data}
        has_traces = False
    else:
        has_traces = "device_traces" in data
    known = {"segments", "device_traces", "allocator_settings", "external_annotations"}
    legacy = any("history" in b for s in data["segments"] for b in s["blocks"])
    return {
        "format": fmt, "protocol": protocol,
        "segments": [norm_segment(s) for s in data["segments"]],
        "has_traces": has_traces,
        "traces": [[norm_event(e) for e in t] for t in data["device_traces"]] if has_traces else None,
        "annotations": [{"start": a["stage"] == "START", "name": a["name"], "device": a["device"],
                         "time_us": a["time_us"]} for a in data.get("external_annotations", [])],
        "settings": typed(data["allocator_settings"]) if "allocator_settings" in data else None,
        "unknown_keys": [k for k in data if k not in known],
        "legacy": legacy,
    }


VIZ_TEMPLATE = r"""
<!DOCTYPE html>
<html>
<head>
</head>
<body>
<script type="module">
import {add_local_files} from "https://cdn.jsdelivr.net/gh/pytorch/pytorch@main/torch/utils/viz/MemoryViz.js"
const local_files = $SNAPSHOT
add_local_files(local_files, $VIZ_KIND)
</script>
</body>
"""


def trace_plot_html(data):
    """torch.cuda._memory_viz.trace_plot's page (_format_viz, 2.11)."""
    buffer = pickle.dumps(data)
    buffer += b"\x00" * (3 - len(buffer) % 3)
    encoded = base64.b64encode(buffer).decode("utf-8")
    js = json.dumps([{"name": "snapshot.pickle", "base64": encoded}])
    return VIZ_TEMPLATE.replace("$VIZ_KIND", repr("Active Memory Timeline")).replace("$SNAPSHOT", js)


def main():
    expected = {}

    def write(name, blob, data, fmt, protocol):
        with open(name, "wb") as f:
            f.write(blob)
        expected[name] = expect(data, fmt, protocol)

    full = full_snapshot()
    for p in (2, 3, 4, 5):
        write(f"snap_p{p}.pickle", pickle.dumps(full, protocol=p), full, "pickle", p)
    write("snap.json", json.dumps(full, indent=1).encode(), full, "json", 0)
    write("snap_p4.pickle.gz", gzip.compress(pickle.dumps(full, protocol=4), mtime=0), full, "pickle", 4)
    write("snap_trace_plot.html", trace_plot_html(full).encode(), full, "html", 4)
    write("bare_segments.pickle", pickle.dumps(full["segments"], protocol=4), full["segments"], "pickle", 4)
    fut = future_snapshot()
    write("future.pickle", pickle.dumps(fut, protocol=4), fut, "pickle", 4)
    leg = legacy_snapshot()
    write("legacy.pickle", pickle.dumps(leg, protocol=3), leg, "pickle", 3)
    # The benchmark generator's stand-in source. Checked against gopickle
    # only (its expanded expectation would be megabytes).
    with open("synthetic.pickle", "wb") as f:
        f.write(pickle.dumps(synthetic_snapshot(), protocol=4))

    # Not snapshots: a class reference, refused by name.
    for p in (2, 4):
        with open(f"ordered_dict_p{p}.pickle", "wb") as f:
            f.write(pickle.dumps(collections.OrderedDict(a=1), protocol=p))

    with open("expected.json", "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
