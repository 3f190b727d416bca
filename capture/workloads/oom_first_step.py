"""An OOM at AdamW's first step(): the moments are made lazily at the first
optimizer step, and under a per-process cap the parameters, gradients and
activations fit but the moments do not. Recorded from the start of the
script (the PyTorch docs' recipe), the snapshot dumped in the except clause.

    python3 oom_first_step.py --out DIR
"""

import argparse

from common import Truth, local_bytes, oom_facts

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--cap", type=int, default=1600 << 20)
args = p.parse_args()
total = torch.cuda.get_device_properties(0).total_memory
torch.cuda.set_per_process_memory_fraction(args.cap / total)
torch.manual_seed(0)
torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
truth = Truth("workload-oom-first-step", __file__, cap_bytes=args.cap, cap_fraction=args.cap / total)
truth.begin_window()
truth.phase(-1, "setup")
model = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(4096, 4096), nn.ReLU())]).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
params = list(model.parameters())
step = 0
try:
    for step in range(3):
        truth.phase(step, "forward")
        x = torch.randn(256, 4096, device="cuda")
        loss = model(x).pow(2).mean()
        truth.phase(step, "backward")
        loss.backward()
        truth.phase(step, "optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
except torch.OutOfMemoryError as e:
    made = sum(v.numel() * v.element_size() for st in opt.state.values() for v in st.values()
               if torch.is_tensor(v) and v.is_cuda)
    pb = local_bytes(params)
    truth.t.update(param_bytes=pb, optimizer="AdamW", optimizer_state_bytes=made,
                   optimizer_state_needed=2 * pb, gradient_bytes=pb,
                   oom=oom_facts(truth, e, truth.cur[1] if truth.cur else None, step=step))
    truth.finish(args.out)
