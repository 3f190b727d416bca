"""An evaluation loop over batches of varying sizes (a server's or a
ragged dataset's), keeping each batch's probabilities on the GPU: no
optimizer, no annotation, and no allocation pattern that repeats exactly.
The model is built before recording.

    python3 eval_varied.py --out DIR
"""

import argparse

from common import Truth, local_bytes

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
args = p.parse_args()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024), nn.GELU(), nn.Linear(1024, 1000)).cuda().eval()
sizes = [96, 17, 250, 64, 131, 7, 200, 45, 160, 88, 240, 33]
torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
truth = Truth("workload-eval-varied", __file__, batches=len(sizes), sizes=sizes)
truth.begin_window()
kept = []
with torch.no_grad():
    for k, n in enumerate(sizes):
        truth.phase(k, "forward")
        x = torch.randn(n, 1024, device="cuda")
        kept.append(torch.softmax(model(x), dim=-1))  # LEAK: every batch's probabilities kept
truth.close()
truth.t.update(param_bytes=local_bytes(model.parameters()), optimizer_state_bytes=0, optimizer=None,
               kept_bytes=sum(t.numel() * t.element_size() for t in kept))
truth.finish(args.out)
