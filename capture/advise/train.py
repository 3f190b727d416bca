"""The advise fixtures' training run: a small LlamaForCausalLM with a 128K
vocabulary (random weights from a config) trained under bf16 autocast with
AdamW, whose peak sits at the loss (the fp32 logits of 4 × 1024 tokens ×
128,256 and their gradients at the start of backward). --fix applies one
fix, each in a fresh process:

  none            the plain run
  checkpointing   full activation checkpointing (gradient_checkpointing_enable)
  chunked-loss    the cross-entropy in chunks of 256 tokens, each chunk's
                  logits reduced and back-propagated before the next
  bf16-moments    AdamW with its moments kept in bf16 (the user's optimizer)
  micro-batch     two micro-batches of 2 sequences per step instead of 4

Recorded with plain torch from before the model is built, so weights and
moments are in the trace; truth.json has each phase's peaks
(reset_peak_memory_stats at every phase boundary, capture/plain/truthlib.py).

    python3 train.py --fix none --out DIR
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "plain"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from truthlib import Truth, optimizer_state_bytes, param_bytes  # noqa: E402

FIXES = ["none", "checkpointing", "chunked-loss", "bf16-moments", "micro-batch"]


class BF16MomentAdamW(torch.optim.Optimizer):
    """AdamW whose exp_avg and exp_avg_sq are bf16 tensors."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p, dtype=torch.bfloat16)
                    st["exp_avg_sq"] = torch.zeros_like(p, dtype=torch.bfloat16)
                st["step"] += 1
                g = p.grad
                st["exp_avg"].mul_(b1).add_(g, alpha=1 - b1)
                st["exp_avg_sq"].mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = (st["exp_avg_sq"].float() / (1 - b2 ** st["step"])).sqrt_().add_(group["eps"])
                p.addcdiv_(st["exp_avg"].float(), denom, value=-group["lr"] / (1 - b1 ** st["step"]))


def chunked_backward(model, hidden, labels, micro, chunk=256):
    """The cross-entropy in chunks of the sequence, each chunk's fp32 logits
    made, reduced and back-propagated before the next (the hidden states are
    cut from the graph, their gradient gathered, then sent back through the
    model): at most one chunk's logits live. Returns the mean loss."""
    head = model.lm_head
    h = hidden.detach().requires_grad_()
    flat = h[:, :-1].reshape(-1, h.shape[-1])
    y = labels[:, 1:].reshape(-1)
    total = 0.0
    for s in range(0, flat.shape[0], chunk):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = head(flat[s:s + chunk]).float()
        part = F.cross_entropy(logits, y[s:s + chunk], reduction="sum") / y.numel()
        part.backward(retain_graph=True)
        total += float(part)
        del logits, part
    hidden.backward(h.grad / micro)
    return total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fix", choices=FIXES, default="none")
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=4)
    args = p.parse_args()
    batch, seq = 4, 1024
    torch.manual_seed(0)
    torch.cuda.memory._record_memory_history(max_entries=1000000, stacks="python")
    truth = Truth("advise-" + args.fix, __file__, fix=args.fix, batch=batch, seq=seq)
    truth.begin_window()
    truth.phase(-1, "setup")
    cfg = LlamaConfig(vocab_size=128256, hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=2048,
                      attn_implementation="sdpa")
    model = LlamaForCausalLM(cfg).cuda()
    if args.fix == "checkpointing":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    if args.fix == "bf16-moments":
        opt = BF16MomentAdamW(model.parameters())
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    micro = 2 if args.fix == "micro-batch" else 1
    for step in range(args.steps):
        ids = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
        for m, part in enumerate(ids.chunk(micro)):
            truth.phase(step, "forward")
            if args.fix == "chunked-loss":
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    hidden = model.model(input_ids=part).last_hidden_state
                truth.phase(step, "backward")
                chunked_backward(model, hidden, part, micro)
                del hidden
                continue
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=part, labels=part).loss
            truth.phase(step, "backward")
            (loss / micro).backward()
            del loss
        truth.phase(step, "optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
    raw, rounded = optimizer_state_bytes(opt)
    truth.t.update(param_bytes=param_bytes(model), optimizer_state_bytes=raw, optimizer_state_bytes_rounded=rounded,
                   logits_bytes_fp32=batch // micro * seq * cfg.vocab_size * 4,
                   model={"vocab": cfg.vocab_size, "hidden": cfg.hidden_size, "layers": cfg.num_hidden_layers,
                          "heads": cfg.num_attention_heads, "kv_heads": cfg.num_key_value_heads,
                          "intermediate": cfg.intermediate_size})
    truth.finish(args.out)


if __name__ == "__main__":
    main()
