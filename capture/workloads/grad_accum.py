"""Gradient accumulation: 4 micro-batches a step (forward and backward each),
then AdamW's step and zero_grad, 3 steps, recorded from before the model is
built. truth.json's phases have a row per micro-batch ("micro": m).

    python3 grad_accum.py --out DIR
"""

import argparse

from common import Truth, local_bytes, state_bytes

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--micro", type=int, default=4)
args = p.parse_args()
torch.manual_seed(0)
torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
truth = Truth("workload-grad-accum", __file__, micro_batches=args.micro)
truth.begin_window()
truth.phase(-1, "setup")
model = nn.Sequential(nn.Linear(2048, 8192), nn.GELU(), nn.Linear(8192, 2048), nn.GELU(),
                      nn.Linear(2048, 1000)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(args.steps):
    for m in range(args.micro):
        truth.phase(step, "forward", micro=m)
        # the micro-batches differ in size, so that each has a peak of its own
        x = torch.randn(512 * (m + 1), 2048, device="cuda")
        y = torch.randint(0, 1000, (512 * (m + 1),), device="cuda")
        loss = nn.functional.cross_entropy(model(x), y) / args.micro
        truth.phase(step, "backward", micro=m)
        loss.backward()
    truth.phase(step, "optimizer")
    opt.step()
    opt.zero_grad(set_to_none=True)
truth.close()
truth.t.update(param_bytes=local_bytes(model.parameters()), optimizer_state_bytes=state_bytes(opt),
               optimizer="AdamW")
truth.finish(args.out)
