"""A plain training loop with AdamW(fused=True), zero_grad at the top of the
loop, recording from before the model exists. Fused AdamW allocates
nothing inside Optimizer.step once its state exists."""

import argparse

import torch
import torch.nn as nn

from truthlib import Truth, param_bytes, optimizer_state_bytes

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=6)
args = p.parse_args()

torch.manual_seed(0)
torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
truth = Truth("plain-adamw-fused", __file__)
truth.begin_window()
truth.phase(-1, "setup")

model = nn.Sequential(nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(),
                      nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, 10)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
loss_fn = nn.CrossEntropyLoss()

for step in range(args.steps):
    opt.zero_grad()  # frees the previous step's gradients: that step's optimizer phase
    truth.phase(step, "forward")
    x = torch.randn(256, 2048, device="cuda")
    y = torch.randint(0, 10, (256,), device="cuda")
    loss = loss_fn(model(x), y)
    truth.phase(step, "backward")
    loss.backward()
    truth.phase(step, "optimizer")
    opt.step()
opt.zero_grad()

raw, rounded = optimizer_state_bytes(opt)
truth.t.update(param_bytes=param_bytes(model), optimizer_state_bytes=raw,
               optimizer_state_bytes_rounded=rounded, optimizer="AdamW(fused=True)")
truth.finish(args.out)
