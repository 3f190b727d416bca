"""torch.compile(mode="reduce-overhead"): CUDA graph trees keep a private
memory pool for replay. An MLP trained with AdamW (outside the graph),
recorded from before the model is built; 8 steps, the first ones warm up
and record the graphs, the rest replay them.

    python3 reduce_overhead.py --out DIR
"""

import argparse

from common import Truth, local_bytes, private_pools, state_bytes

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=8)
args = p.parse_args()
torch.manual_seed(0)
torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
truth = Truth("workload-reduce-overhead", __file__)
truth.begin_window()
truth.phase(-1, "setup")
model = nn.Sequential(nn.Linear(2048, 8192), nn.GELU(), nn.Linear(8192, 2048), nn.GELU(),
                      nn.Linear(2048, 8192), nn.GELU(), nn.Linear(8192, 1000)).cuda()
cmodel = torch.compile(model, mode="reduce-overhead")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, capturable=False)
x = torch.randn(1024, 2048, device="cuda")
y = torch.randint(0, 1000, (1024,), device="cuda")
for step in range(args.steps):
    torch.compiler.cudagraph_mark_step_begin()
    truth.phase(step, "forward")
    loss = nn.functional.cross_entropy(cmodel(x), y)
    truth.phase(step, "backward")
    loss.backward()
    truth.phase(step, "optimizer")
    opt.step()
    opt.zero_grad(set_to_none=True)
truth.close()
pools = private_pools()
truth.t.update(param_bytes=local_bytes(model.parameters()), optimizer_state_bytes=state_bytes(opt),
               optimizer="AdamW", private_pools=pools,
               private_pool_reserved=sum(d["reserved"] for d in pools.values()))
print("private pools:", pools)
truth.finish(args.out)
