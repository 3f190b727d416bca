"""`memscope fit` fixtures: one workload at one batch size, in a fresh
process, optionally under a per-process cap, optionally recorded the way
users record (plain torch.cuda.memory._record_memory_history from the
process's first allocation, _snapshot at the end; no memscope code runs).

    python3 fitwork.py --workload lm|conv|gen --batch N --out DIR [--cap BYTES] [--record] [--seq L] [--loss chunked]

lm    a LlamaForCausalLM from a config (1024 hidden, 6 layers, 32,000
      vocabulary, random weights), fp32 weights under bf16 autocast, AdamW,
      512 tokens per sample (--seq), 3 steps (forward, backward, optimizer.step,
      zero_grad). --loss chunked: the cross-entropy in 8 slices of the
      tokens, each slice's fp32 logits made, reduced and back-propagated
      before the next (advise's "chunked cross-entropy (8 chunks, upcast per
      chunk)"; the hidden states cut from the graph, their gradient
      gathered, then sent back through the model).
conv  torchvision's resnet50, fp32, 224x224 images, SGD with momentum 0.9,
      3 steps.
gen   the same Llama in bf16 serving generate(): N prompts of 1,024 tokens (--seq),
      64 new tokens each (greedy, no early stop), two requests.

DIR/truth.json (memscope-truth/v1, "plain": true) holds the phases' peaks
(torch's counters reset at each boundary; the phases, the model's build
included, partition the run, so the run's peak is their max),
memory_stats() at the end, the batch, the cap, and the OOM when one
happened (torch's message, the step and phase, the observer's request).
With --record DIR/snapshot.pickle is written too, at the end or at the OOM.
"""

import argparse
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "plain"))

import torch  # noqa: E402

from truthlib import Truth  # noqa: E402

STEPS = 3


def llama_config():
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=6,
                       num_attention_heads=16, num_key_value_heads=8, max_position_embeddings=4096)


LOSS = "plain"


def chunked_backward(model, hidden, ids, chunks=8):
    """The shifted cross-entropy over ids in chunks of the tokens, each
    chunk's fp32 logits made and back-propagated before the next; then the
    hidden states' gathered gradient through the model."""
    import torch.nn.functional as F
    h = hidden.detach().requires_grad_()
    flat = h[:, :-1].reshape(-1, h.shape[-1])
    y = ids[:, 1:].reshape(-1)
    n = flat.shape[0]
    size = -(-n // chunks)
    for s in range(0, n, size):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model.lm_head(flat[s:s + size]).float()
        part = F.cross_entropy(logits, y[s:s + size], reduction="sum") / n
        part.backward(retain_graph=True)
        del logits, part
    hidden.backward(h.grad)


def lm(truth, batch, seq):
    from transformers import LlamaForCausalLM
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(llama_config())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(0)
    for step in range(STEPS):
        ids = torch.randint(0, 32000, (batch, seq), generator=g).cuda()
        truth.phase(step, "forward")
        if LOSS == "chunked":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                hidden = model.model(input_ids=ids).last_hidden_state
            truth.phase(step, "backward")
            chunked_backward(model, hidden, ids)
            del hidden
        else:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids).loss
            truth.phase(step, "backward")
            loss.backward()
            del loss
        truth.phase(step, "optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
        del ids


def conv(truth, batch, seq):
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet50().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    lossf = torch.nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(0)
    for step in range(STEPS):
        x = torch.randn(batch, 3, 224, 224, generator=g).cuda()
        y = torch.randint(0, 1000, (batch,), generator=g).cuda()
        truth.phase(step, "forward")
        loss = lossf(model(x), y)
        truth.phase(step, "backward")
        loss.backward()
        truth.phase(step, "optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
        del loss, x, y


def gen(truth, batch, seq):
    from transformers import LlamaForCausalLM
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(llama_config()).to(torch.bfloat16).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    g = torch.Generator().manual_seed(0)
    for step in range(2):
        ids = torch.randint(0, 32000, (batch, seq), generator=g).cuda()
        truth.phase(step, "forward")
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=64, do_sample=False)
        del out, ids


WORKLOADS = {"lm": lm, "conv": conv, "gen": gen}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--cap", type=int, default=0, help="per-process cap in bytes (0: none)")
    p.add_argument("--record", action="store_true")
    p.add_argument("--seq", type=int, default=0, help="lm: tokens per sample (512); gen: prompt tokens (1024)")
    p.add_argument("--loss", choices=["plain", "chunked"], default="plain", help="lm: the cross-entropy whole or in 8 chunks")
    args = p.parse_args()
    global LOSS
    LOSS = args.loss
    total = torch.cuda.get_device_properties(0).total_memory
    if args.cap:
        torch.cuda.set_per_process_memory_fraction(args.cap / total)
    seen = []
    torch._C._cuda_attach_out_of_memory_observer(
        lambda device, alloc, device_allocated, device_free: seen.append(
            {"device": device, "request": alloc, "device_limit": device_allocated, "device_free": device_free}))
    if args.record:
        torch.cuda.memory._record_memory_history(max_entries=1000000, stacks="python")
    seq = args.seq or {"lm": 512, "gen": 1024}.get(args.workload, 0)
    truth = Truth("fit-" + args.workload, __file__, workload=args.workload, batch=args.batch, seq=seq, loss=args.loss,
                  cap_bytes=args.cap, cap_fraction=args.cap / total if args.cap else 0)
    truth.begin_window()
    truth.phase(-1, "setup")  # the model's build: the phases partition the run
    try:
        WORKLOADS[args.workload](truth, args.batch, seq)
    except torch.OutOfMemoryError as e:
        tb = traceback.extract_tb(e.__traceback__)
        mine = [f for f in tb if f.filename == truth.script]
        step, phase = truth.cur if truth.cur else (None, None)
        truth.t["oom"] = {"message": str(e).splitlines()[0], "step": step, "phase": phase,
                          "file": truth.script, "line": mine[-1].lineno if mine else None,
                          "observer": seen, "num_ooms": torch.cuda.memory_stats().get("num_ooms")}
    if args.record:
        truth.finish(args.out)
    else:
        truth.finish_stats(args.out)


if __name__ == "__main__":
    main()
