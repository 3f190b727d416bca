"""What-if fixtures: one workload run under one allocator setting
(PYTORCH_CUDA_ALLOC_CONF, set by make_whatif_fixtures.sh before the process
starts), recorded with plain torch calls from the process's first
allocation, so the trace holds every request the program made.

    python3 workloads.py --workload varlen|fragoom|sidestream|servefull|servelate|servewrap|twinwrap-a|twinwrap-b|twinlate-a|twinlate-b --out DIR

Each run writes DIR/snapshot.pickle and DIR/truth.json (memscope-truth/v1,
"plain": true): the window (one phase over the whole run, so its peaks are
the run's), memory_stats() at the end (reserved peak and end, segment
counts, num_alloc_retries, num_ooms, inactive_split), the per-process cap,
and the OOM when one happened: the observer's request and free bytes, the
step, and torch's message. A run that runs out of memory stops there and
dumps, as the PyTorch docs suggest.
"""

import argparse
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "plain"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from truthlib import Truth  # noqa: E402

MiB = 1 << 20
GiB = 1 << 30

# The per-process cap of each workload: garbage_collection_threshold acts
# only under one, and fragoom is built to fail against it.
CAPS = {"varlen": 6 * GiB, "fragoom": 1200 * MiB, "sidestream": 4 * GiB}


def varlen(truth):
    """Variable-length batches through two transformer layers with AdamW:
    the sequence length changes every step, so every step asks for blocks
    of new sizes (the case expandable_segments is for)."""
    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(*[nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, dropout=0.0)
                            for _ in range(2)]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(10):
        truth.t["step"] = step
        seq = int(torch.randint(64, 1025, (1,), generator=g))
        x = torch.randn(8, seq, 1024, device="cuda")
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)


def fragoom(truth):
    """Free memory stranded in the holes of one split segment: a 1 GiB
    block is cached, 16 blocks of 60 MiB are cut from it and every other
    one is freed, then 200 MiB is asked for. Live memory plus the request
    (680 MiB) fits the 1200 MiB cap, but no hole takes the request, the
    split segment cannot be released, and a new segment would pass the cap:
    under the default settings this runs out of memory; expandable segments
    unmap the holes and map the request."""
    truth.t["step"] = 0
    big = torch.empty(GiB, dtype=torch.uint8, device="cuda")
    del big
    keep = [torch.empty(60 * MiB, dtype=torch.uint8, device="cuda") for _ in range(16)]
    for i in range(0, 16, 2):
        keep[i] = None
    truth.t["step"] = 1
    want = torch.empty(200 * MiB, dtype=torch.uint8, device="cuda")
    truth.t["step"] = 2
    more = [torch.empty(30 * MiB, dtype=torch.uint8, device="cuda") for _ in range(4)]
    del want, more


def sidestream(truth):
    """Blocks used on a side stream and freed with record_stream: their
    frees complete when the side stream's work does (free_completed after
    free_requested), and the side stream's own allocations live in its own
    free lists."""
    g = torch.Generator().manual_seed(0)
    side = torch.cuda.Stream()
    w = torch.randn(2048, 2048, device="cuda")
    for step in range(12):
        truth.t["step"] = step
        n = int(torch.randint(1, 17, (1,), generator=g)) * 2 * MiB // 4
        x = torch.randn(n, device="cuda")
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y = (x * 2).sum()          # allocated on the side stream
            z = w @ w                  # a side-stream temporary of 16 MiB
        x.record_stream(side)
        del x, z
        a = torch.randn(n // 2, device="cuda")
        b = torch.randn(int(torch.randint(1, 9, (1,), generator=g)) * MiB // 4, device="cuda")
        torch.cuda.current_stream().wait_stream(side)
        del y, a, b
        if step % 4 == 3:
            torch.cuda.synchronize()


def serve_model():
    """A Llama of about 110M parameters from a config (random weights),
    built in fp32 on the GPU and cast to bf16 there, as a server that loads
    fp32 weights does: the fp32 copies are freed and their segments stay
    cached."""
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                      num_attention_heads=16, num_key_value_heads=8, max_position_embeddings=4096)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg)
    model = model.to(torch.bfloat16).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model, cfg


def serve_requests(truth, model, cfg):
    """12 generate() requests of mixed shapes: batch 1-16, prompts of
    64-2048 tokens, 12 new tokens each (greedy, no early stop), seed 0."""
    g = torch.Generator().manual_seed(0)
    for req in range(12):
        truth.t["step"] = req
        b = int(torch.randint(1, 17, (1,), generator=g))
        n = int(torch.randint(64, 2049, (1,), generator=g))
        ids = torch.randint(0, cfg.vocab_size, (b, n), generator=g).cuda()
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False)
        del out, ids


def run_plan(plan):
    """Runs a plan of ("a", key, bytes) and ("f", key) steps through this
    one allocating line, so two plans leave the same stacks."""
    live = {}
    for op in plan:
        if op[0] == "a":
            live[op[1]] = torch.empty(op[2], dtype=torch.uint8, device="cuda")
        else:
            del live[op[1]]


# Twins: two programs whose recordings hold the same requests and the same
# start state, made by different histories the recording does not keep
# (the ring wrapped past them, or recording began after them), so that no
# reading of the files can tell them apart while torch's reserved peak
# under another setting differs. twinwrap* record from the start into a
# ring of 64 entries under the default allocator: a holds ten 104 MiB
# blocks at once (peak allocated 1,040 MiB), b one at a time, each segment
# pinned by a 53 MiB block while the next is made (peak about 581 MiB);
# both end their prefix with ten free 104 MiB segments. twinlate* start
# recording after their prefix: a frees one 500 MiB block, b fifty 10 MiB
# blocks, and under expandable segments both leave one free 500 MiB
# mapped range; the window asks for four 100 MiB blocks at once, three
# times.
TWIN_PREFIX = {
    "twinwrap-a": [("a", i, 104 * MiB) for i in range(10)] + [("f", i) for i in range(10)],
    "twinwrap-b": [op for i in range(10) for op in (("a", "x", 104 * MiB), ("f", "x"), ("a", i, 53 * MiB))]
    + [("f", i) for i in range(10)],
    "twinlate-a": [("a", 0, 500 * MiB), ("f", 0)],
    "twinlate-b": [("a", i, 10 * MiB) for i in range(50)] + [("f", i) for i in range(50)],
}
TWIN_WINDOW = {
    "twinwrap": [op for _ in range(200) for op in (("a", "t", 20 * MiB), ("f", "t"))],
    "twinlate": [op for _ in range(3) for op in [("a", j, 100 * MiB) for j in range(4)] + [("f", j) for j in range(4)]],
}
TWIN_ENTRIES = {"twinwrap": 64, "twinlate": 1000000}


WORKLOADS = {"varlen": varlen, "fragoom": fragoom, "sidestream": sidestream}

# The serving workloads: one server, recorded three ways. servefull records
# from the process's first allocation; servelate after the model was built
# and cast (the freed fp32 segments cached in the start state); servewrap
# as servelate with a history of 8,000 entries, so the ring wraps.
SERVE = {"servefull": None, "servelate": 1000000, "servewrap": 8000}
CAPS["servefull"] = CAPS["servelate"] = CAPS["servewrap"] = 3584 * MiB
for _t in TWIN_PREFIX:
    CAPS[_t] = 3584 * MiB


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", required=True, choices=sorted(WORKLOADS) + sorted(SERVE) + sorted(TWIN_PREFIX))
    p.add_argument("--out", required=True)
    args = p.parse_args()
    total = torch.cuda.get_device_properties(0).total_memory
    cap = CAPS[args.workload]
    torch.cuda.set_per_process_memory_fraction(cap / total)
    seen = []
    torch._C._cuda_attach_out_of_memory_observer(
        lambda device, alloc, device_allocated, device_free: seen.append(
            {"device": device, "request": alloc, "device_limit": device_allocated, "device_free": device_free}))
    serve = args.workload in SERVE
    twin = args.workload.split("-")[0] if args.workload in TWIN_PREFIX else None
    late = serve and SERVE[args.workload] is not None or twin == "twinlate"
    entries = SERVE[args.workload] if serve and late else TWIN_ENTRIES.get(twin, 1000000)
    if late and twin:
        run_plan(TWIN_PREFIX[args.workload])
        torch.cuda.synchronize()
    elif late:
        model, cfg = serve_model()
        torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=entries, stacks="python")
    truth = Truth("whatif-" + args.workload, __file__, cap_bytes=cap, cap_fraction=cap / total,
                  workload=args.workload, recorded_late=late)
    truth.begin_window()
    truth.phase(-1, "run")
    try:
        if twin:
            if not late:
                run_plan(TWIN_PREFIX[args.workload])
            run_plan(TWIN_WINDOW[twin])
        elif serve:
            if not late:
                model, cfg = serve_model()
            serve_requests(truth, model, cfg)
        else:
            WORKLOADS[args.workload](truth)
    except torch.OutOfMemoryError as e:
        tb = traceback.extract_tb(e.__traceback__)
        mine = [f for f in tb if f.filename == truth.script]
        truth.t["oom"] = {"message": str(e).splitlines()[0], "step": truth.t.get("step"),
                          "file": truth.script, "line": mine[-1].lineno if mine else None,
                          "observer": seen, "num_ooms": torch.cuda.memory_stats().get("num_ooms")}
    truth.finish(args.out)


if __name__ == "__main__":
    main()
