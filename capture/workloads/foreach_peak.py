"""AdamW's foreach temporaries as the peak: an MLP of 16 layers of
4096×4096 (1 GiB of fp32 parameters) trained on a batch of 64, so that
activations are small and the peak sits inside Optimizer.step, where the
default (foreach) AdamW makes a temporary of each parameter's size.
Recorded after a warm-up step (the moments exist), 3 steps. With --fused
the same run uses AdamW(fused=True): the fix's measured peak.

    python3 foreach_peak.py --out DIR [--fused]
"""

import argparse

from common import Truth, local_bytes, state_bytes

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--fused", action="store_true")
args = p.parse_args()
torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(16) for m in (nn.Linear(4096, 4096), nn.ReLU())]).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=args.fused)


def step(truth, k):
    x = torch.randn(64, 4096, device="cuda")
    if truth:
        truth.phase(k, "forward")
    loss = model(x).pow(2).mean()
    if truth:
        truth.phase(k, "backward")
    loss.backward()
    if truth:
        truth.phase(k, "optimizer")
    opt.step()
    opt.zero_grad(set_to_none=True)


step(None, -1)
torch.cuda.synchronize()
torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
truth = Truth("workload-foreach-peak" + ("-fused" if args.fused else ""), __file__, fused=args.fused)
truth.begin_window()
for k in range(args.steps):
    step(truth, k)
truth.close()
truth.t.update(param_bytes=local_bytes(model.parameters()), optimizer_state_bytes=state_bytes(opt),
               optimizer="AdamW(fused=True)" if args.fused else "AdamW (foreach)")
truth.finish(args.out)
