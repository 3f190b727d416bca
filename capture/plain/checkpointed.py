"""Activation checkpointing (non-reentrant) around each block, trained by
the user's own Adam that replaces its moments out of place every step (the
old ones are freed inside Optimizer.step). Recording starts after two
warm-up steps, so the parameters and the first moments predate it."""

import argparse

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from truthlib import Truth, param_bytes, optimizer_state_bytes

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--warmup", type=int, default=2)
p.add_argument("--steps", type=int, default=5)
args = p.parse_args()


class Block(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


class Net(nn.Module):
    def __init__(self, width=512, hidden=2048, depth=4):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width, hidden) for _ in range(depth))
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False)
        return self.head(x)


class OutOfPlaceAdam(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["t"] = 0
                    st["m"] = torch.zeros_like(p)
                    st["v"] = torch.zeros_like(p)
                st["t"] += 1
                st["m"] = b1 * st["m"] + (1 - b1) * p.grad
                st["v"] = b2 * st["v"] + (1 - b2) * p.grad * p.grad
                mhat = st["m"] / (1 - b1 ** st["t"])
                vhat = st["v"] / (1 - b2 ** st["t"])
                p.sub_(group["lr"] * mhat / (vhat.sqrt() + group["eps"]))


torch.manual_seed(0)
model = Net().cuda()
opt = OutOfPlaceAdam(model.parameters())
truth = None

for step in range(args.warmup + args.steps):
    if step == args.warmup:
        torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
        truth = Truth("plain-checkpointed", __file__, warmup_steps=args.warmup)
        truth.begin_window()
    rec = step - args.warmup
    if truth:
        truth.phase(rec, "forward")
    x = torch.randn(4096, 512, device="cuda")
    loss = model(x).square().mean()
    if truth:
        truth.phase(rec, "backward")
    loss.backward()
    if truth:
        truth.phase(rec, "optimizer")
    opt.step()
    opt.zero_grad(set_to_none=True)
    del loss, x

raw, rounded = optimizer_state_bytes(opt)
truth.t.update(param_bytes=param_bytes(model), optimizer_state_bytes=raw,
               optimizer_state_bytes_rounded=rounded, optimizer="OutOfPlaceAdam (user code)")
truth.finish(args.out)
