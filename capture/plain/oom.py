"""A plain loop that doubles its batch until it runs out of memory under a
per-process cap, and dumps the snapshot in the except clause, as the
PyTorch docs suggest."""

import argparse

import torch
import torch.nn as nn

from truthlib import Truth, oom_facts, param_bytes

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--cap", type=int, default=2 << 30)
args = p.parse_args()

total = torch.cuda.get_device_properties(0).total_memory
torch.cuda.set_per_process_memory_fraction(args.cap / total)
torch.manual_seed(0)
torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
truth = Truth("plain-oom", __file__, cap_bytes=args.cap, cap_fraction=args.cap / total)
truth.begin_window()
truth.phase(-1, "setup")
model = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                      nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
batch = 1024
step = 0
try:
    while step < 20:
        truth.phase(step, "forward")
        x = torch.randn(batch, 4096, device="cuda")
        y = torch.randint(0, 10, (batch,), device="cuda")
        loss = nn.functional.cross_entropy(model(x), y)
        truth.phase(step, "backward")
        loss.backward()
        truth.phase(step, "optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        batch *= 2
except torch.OutOfMemoryError as e:
    truth.t.update(param_bytes=param_bytes(model),
                   oom=oom_facts(truth, e, truth.cur[1] if truth.cur else None, step=step, batch=batch))
    truth.finish(args.out)
