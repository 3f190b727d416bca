"""Hand-made CUDA graphs and a MemPool: an MLP's inference captured twice
with torch.cuda.graph into one set-aside pool (torch.cuda.graph_pool_handle),
replayed 10 times each, and a buffer made inside a torch.cuda.MemPool
(use_mem_pool). Recorded from before the model is built; no optimizer, no
annotation.

    python3 cuda_graph.py --out DIR
"""

import argparse

from common import Truth, local_bytes, private_pools

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--replays", type=int, default=10)
args = p.parse_args()
torch.manual_seed(0)
torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
truth = Truth("workload-cuda-graph", __file__, replays=args.replays)
truth.begin_window()
truth.phase(-1, "setup")
model = nn.Sequential(nn.Linear(4096, 8192), nn.GELU(), nn.Linear(8192, 4096)).cuda().eval()
small = torch.randn(256, 4096, device="cuda")
large = torch.randn(1024, 4096, device="cuda")
pool = torch.cuda.graph_pool_handle()
graphs, outs = [], []
with torch.no_grad():
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for x in (large, small):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    for x in (large, small):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool):
            outs.append(model(x))
        graphs.append(g)
    mp = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(mp):
        scratch = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    for step in range(args.replays):
        truth.phase(step, "forward")
        for g in graphs:
            g.replay()
        y = outs[0].sum() + outs[1].sum()
truth.close()
pools = private_pools()
truth.t.update(param_bytes=local_bytes(model.parameters()), optimizer_state_bytes=0, optimizer=None,
               private_pools=pools, private_pool_reserved=sum(d["reserved"] for d in pools.values()),
               graph_pool=str(tuple(pool)), mem_pool=str(tuple(mp.id)))
print("private pools:", pools)
truth.finish(args.out)
