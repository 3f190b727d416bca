"""A plain training loop with SGD (no momentum) and a planted leak: per-batch
statistics kept on the GPU instead of read with .item(). Recording is turned
on the way PyTorch's docs show, with the two lines and their defaults
(stacks="all": Python and C++ frames), before the model exists."""

import argparse

import torch
import torch.nn as nn

from truthlib import Truth, marked_line, param_bytes, optimizer_state_bytes

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=8)
args = p.parse_args()

torch.manual_seed(0)
torch.cuda.memory._record_memory_history(max_entries=100000)
truth = Truth("plain-sgd-leak", __file__)
truth.begin_window()
truth.phase(-1, "setup")

model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                      nn.Linear(1024, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.MSELoss()
batch_stats = []

for step in range(args.steps):
    truth.phase(step, "forward")
    x = torch.randn(512, 1024, device="cuda")
    y = torch.randn(512, 1024, device="cuda")
    out = model(x)
    loss = loss_fn(out, y)
    batch_stats.append(out.detach().square())  # LEAK: kept on the GPU every step
    truth.phase(step, "backward")
    loss.backward()
    truth.phase(step, "optimizer")
    opt.step()
    opt.zero_grad()

leak = batch_stats[0]
truth.t.update(
    param_bytes=param_bytes(model),
    optimizer_state_bytes=optimizer_state_bytes(opt)[0],
    optimizer="SGD",
    leak={"file": truth.script, "line": marked_line(__file__, "# LEAK"), "function": "<module>",
          "steps": len(batch_stats), "bytes_per_step": leak.numel() * leak.element_size()},
)
truth.finish(args.out)
