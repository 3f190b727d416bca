#!/usr/bin/env python3
"""Measure the per-phase peaks of Llama variants the fixtures do not cover.

The budget package's variants test holds its predictions against the
numbers this wrote into variants.json (on an H200, torch 2.11.0+cu130,
transformers 5.17.0):

    python3 budget/testdata/variants.py OUT [--snapshots NAME,NAME...]

Each variant builds a transformers LlamaForCausalLM from a config (random
weights, nothing downloaded), then runs one warm-up step and two measured
steps in the process of all variants before it; each phase is measured by
resetting torch's peak counters at its start (max over the measured steps).
The training step is the capture harness's: h = model.model(ids),
logits = model.lm_head(h), F.cross_entropy(logits.float()), backward,
optimizer step, zero_grad(set_to_none=True). Inference is one prefill with
a DynamicCache and logits_to_keep=1. The named variants also dump an
allocator snapshot of their measured steps (OUT/NAME.pickle).
"""

import contextlib
import json
import os
import sys
import traceback

import torch
import torch.nn.functional as F
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

STEPS = 3  # step 0 warms up (optimizer state is lazy); steps 1-2 are measured
SEED = 0

# The llama-wide fixture's shape, and what each variant changes.
BASE = dict(hidden=1024, inter=2816, layers=4, heads=8, kv=4, vocab=32000, batch=4, seq=1024,
            precision="bf16-autocast", opt="adamw", impl="foreach", attn="sdpa", tied=False,
            loss="plain", mode="train")
VARIANTS = [
    dict(name="control-wide"),  # the llama-wide fixture again
    dict(name="fp32", precision="fp32"),
    dict(name="bf16-pure", precision="bf16"),
    dict(name="fused-adamw", impl="fused"),
    dict(name="sgd-momentum", opt="sgd-momentum"),
    dict(name="sgd", opt="sgd"),
    dict(name="eager", attn="eager", seq=512),
    dict(name="tied", tied=True),
    dict(name="chunked", loss="chunked"),
    dict(name="mha-bigvocab", kv=8, vocab=128256, batch=2, seq=2048),
    dict(name="infer-bf16", precision="bf16", mode="infer", batch=8),
    dict(name="infer-autocast", mode="infer", batch=8),
]


def phase_peaks(make_phases, snapshot):
    """Max over the measured steps of each phase's peak counters."""
    rows = {}
    for step in range(STEPS):
        if step == 1 and snapshot:
            torch.cuda.memory._record_memory_history(max_entries=200000)
        for name, fn in make_phases():
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            with torch.profiler.record_function("memscope/step/%d/%s" % (step, name)):
                fn()
            torch.cuda.synchronize()
            s = torch.cuda.memory_stats()
            if step >= 1:
                r = rows.setdefault(name, {"peak_allocated": 0, "peak_requested": 0})
                r["peak_allocated"] = max(r["peak_allocated"], s["allocated_bytes.all.peak"])
                r["peak_requested"] = max(r["peak_requested"], s["requested_bytes.all.peak"])
    if snapshot:
        torch.cuda.memory._dump_snapshot(snapshot)
        torch.cuda.memory._record_memory_history(enabled=None)
    return rows


def run(v, snapshot):
    a = dict(BASE, **v)
    torch.manual_seed(SEED)
    cfg = LlamaConfig(vocab_size=a["vocab"], hidden_size=a["hidden"], intermediate_size=a["inter"],
                      num_hidden_layers=a["layers"], num_attention_heads=a["heads"],
                      num_key_value_heads=a["kv"], max_position_embeddings=a["seq"],
                      tie_word_embeddings=a["tied"], attn_implementation=a["attn"])
    model = LlamaForCausalLM(cfg).cuda()
    if a["precision"] == "bf16":
        model = model.to(torch.bfloat16)
    a["param_bytes"] = sum(p.numel() * p.element_size() for p in model.parameters())
    if a["precision"] == "bf16-autocast":
        ac = lambda: torch.autocast("cuda", dtype=torch.bfloat16)
    else:
        ac = contextlib.nullcontext
    V, B, S = a["vocab"], a["batch"], a["seq"]

    if a["mode"] == "infer":
        model.eval()

        def infer_phases():
            ids = torch.randint(0, V, (B, S), device="cuda")

            def fwd():
                with torch.no_grad(), ac():
                    out = model(input_ids=ids, use_cache=True, past_key_values=DynamicCache(), logits_to_keep=1)
                    del out
            return [("forward", fwd)]
        return a, phase_peaks(infer_phases, snapshot)

    model.train()
    if a["opt"] == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **({"fused": True} if a["impl"] == "fused" else {}))
    elif a["opt"] == "sgd-momentum":
        opt = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    state = {}

    def train_phases():
        ids = torch.randint(0, V, (B, S), device="cuda")

        def fwd():
            with ac():
                h = model.model(input_ids=ids).last_hidden_state
                if a["loss"] == "plain":
                    logits = model.lm_head(h)
                    state["loss"] = F.cross_entropy(logits.float().view(-1, V), ids.view(-1))
                else:  # chunked as torchtune does: 8 chunks, each upcast on its own
                    lg = [model.lm_head(c) for c in h.chunk(8, dim=1)]
                    total = sum(F.cross_entropy(l.float().reshape(-1, V), y.reshape(-1), reduction="sum")
                                for l, y in zip(lg, ids.chunk(8, dim=1)))
                    state["loss"] = total / ids.numel()

        def bwd():
            state.pop("loss").backward()

        def step():
            opt.step()
            opt.zero_grad(set_to_none=True)
        return [("forward", fwd), ("backward", bwd), ("optimizer", step)]
    return a, phase_peaks(train_phases, snapshot)


def main(argv):
    out = argv[1]
    snaps = argv[3].split(",") if len(argv) > 3 and argv[2] == "--snapshots" else []
    os.makedirs(out, exist_ok=True)
    res = []
    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    for v in VARIANTS:
        snap = os.path.join(out, v["name"] + ".pickle") if v["name"] in snaps else None
        try:
            a, p = run(v, snap)
            res.append({"args": a, "phases": p})
            print(json.dumps(res[-1]), flush=True)
        except Exception:
            traceback.print_exc()
        torch.cuda.empty_cache()
    with open(os.path.join(out, "variants.json"), "w") as f:
        json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "variants": res}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
