"""Course-style code (CS336's shape): the model and a hand-written Adam
built inside the recording; the Adam is a torch.optim.Optimizer subclass
that replaces parameters and moments out of place every step (p.data = …,
state["m"] = β·m + …), so the old blocks die inside the optimizer phase and
new ones are born. The gradients are dropped by hand (p.grad = None).

    python3 handwritten_adam.py --out DIR
"""

import argparse
import math

from common import Truth, local_bytes

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=5)
args = p.parse_args()


class Adam(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for q in group["params"]:
                if q.grad is None:
                    continue
                st = self.state[q]
                if not st:
                    st["t"] = 0
                    st["m"] = torch.zeros_like(q)
                    st["v"] = torch.zeros_like(q)
                st["t"] += 1
                g = q.grad
                st["m"] = b1 * st["m"] + (1 - b1) * g
                st["v"] = b2 * st["v"] + (1 - b2) * g * g
                a = group["lr"] * math.sqrt(1 - b2 ** st["t"]) / (1 - b1 ** st["t"])
                q.data = q.data - a * st["m"] / (st["v"].sqrt() + group["eps"])


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(self.ln(x))))


torch.manual_seed(0)
torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
truth = Truth("workload-handwritten-adam", __file__)
truth.begin_window()
truth.phase(-1, "setup")
d = 1024
model = nn.Sequential(nn.Embedding(8192, d), *[Block(d) for _ in range(4)], nn.Linear(d, 8192)).cuda()
opt = Adam(model.parameters())
for step in range(args.steps):
    truth.phase(step, "forward")
    ids = torch.randint(0, 8192, (8, 512), device="cuda")
    logits = model(ids)
    loss = nn.functional.cross_entropy(logits.view(-1, 8192), ids.view(-1))
    truth.phase(step, "backward")
    loss.backward()
    truth.phase(step, "optimizer")
    opt.step()
    for q in model.parameters():
        q.grad = None
truth.close()
state = [v for st in opt.state.values() for v in st.values() if torch.is_tensor(v)]
truth.t.update(param_bytes=local_bytes(model.parameters()), optimizer_state_bytes=local_bytes(state),
               optimizer="hand-written Adam (out of place)")
truth.finish(args.out)
