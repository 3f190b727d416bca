"""A plain loop with Adam (foreach) that keeps every step's output with its
autograd graph (appended without .detach(), a common way to collect
predictions): a leak of one output tensor a step."""

import argparse

import torch
import torch.nn as nn

from truthlib import Truth, marked_line, param_bytes, optimizer_state_bytes

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=8)
args = p.parse_args()

torch.manual_seed(0)
torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
truth = Truth("plain-leak-graph", __file__)
truth.begin_window()
truth.phase(-1, "setup")

model = nn.Sequential(nn.Linear(1024, 2048), nn.Tanh(), nn.Linear(2048, 1024)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
outputs = []

for step in range(args.steps):
    truth.phase(step, "forward")
    x = torch.randn(1024, 1024, device="cuda")
    out = model(x)  # LEAK: each step's output stays referenced below
    outputs.append(out)
    loss = out.pow(2).mean()
    truth.phase(step, "backward")
    loss.backward()
    truth.phase(step, "optimizer")
    opt.step()
    opt.zero_grad(set_to_none=True)

raw, rounded = optimizer_state_bytes(opt)
truth.t.update(
    param_bytes=param_bytes(model), optimizer_state_bytes=raw,
    optimizer_state_bytes_rounded=rounded, optimizer="Adam",
    leak={"file": truth.script, "line": marked_line(__file__, "# LEAK"), "function": "<module>",
          "steps": len(outputs), "bytes_per_step": outputs[0].numel() * outputs[0].element_size()},
)
truth.finish(args.out)
