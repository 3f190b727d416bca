"""torch.compile of a plain MLP trained with AdamW, recording from before
the model exists (the compile happens inside the recording). Allocations
come from inductor's generated modules; the backward runs as
CompiledFunctionBackward on the autograd thread."""

import argparse

import torch
import torch.nn as nn

from truthlib import Truth, marked_line, param_bytes, optimizer_state_bytes

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=6)
args = p.parse_args()


class MLP(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = torch.nn.functional.gelu(layer(x))  # FORWARD
        return x


torch.manual_seed(0)
torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
truth = Truth("plain-compiled", __file__)
truth.begin_window()
truth.phase(-1, "setup")

model = MLP(1024, 4).cuda()
cmodel = torch.compile(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

for step in range(args.steps):
    truth.phase(step, "forward")
    x = torch.randn(8192, 1024, device="cuda")
    y = torch.randn(8192, 1024, device="cuda")
    out = cmodel(x)  # CALL
    loss = torch.nn.functional.mse_loss(out, y)
    truth.phase(step, "backward")
    loss.backward()
    truth.phase(step, "optimizer")
    opt.step()
    opt.zero_grad(set_to_none=True)

raw, rounded = optimizer_state_bytes(opt)
truth.t.update(
    param_bytes=param_bytes(model), optimizer_state_bytes=raw,
    optimizer_state_bytes_rounded=rounded, optimizer="AdamW",
    sites={"forward": {"file": truth.script, "line": marked_line(__file__, "# FORWARD")},
           "call": {"file": truth.script, "line": marked_line(__file__, "# CALL")}},
)
truth.finish(args.out)
