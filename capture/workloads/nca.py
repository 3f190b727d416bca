"""A long simulation loop with no phases (a neural cellular automaton's
rollout): a small conv net applied 64 times to a state tensor under
torch.no_grad, each iteration making a new state and dropping the old. No
optimizer, no annotation; the model is built before recording.

    python3 nca.py --out DIR
"""

import argparse

from common import Truth, local_bytes

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--iters", type=int, default=64)
args = p.parse_args()
torch.manual_seed(0)
ch = 16
model = nn.Sequential(nn.Conv2d(ch, 128, 3, padding=1), nn.ReLU(), nn.Conv2d(128, ch, 1)).cuda().eval()
torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
truth = Truth("workload-nca", __file__, iters=args.iters)
truth.begin_window()
truth.phase(-1, "setup")
state = torch.zeros(16, ch, 128, 128, device="cuda")
state[:, :, 64, 64] = 1.0
with torch.no_grad():
    for step in range(args.iters):
        truth.phase(step, "forward")
        state = state + 0.1 * model(state)
truth.close()
sb = state.numel() * state.element_size()
truth.t.update(param_bytes=local_bytes(model.parameters()), optimizer_state_bytes=0, optimizer=None,
               state_bytes=sb)
truth.finish(args.out)
