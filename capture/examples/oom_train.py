"""A training loop that runs out of memory, for memscope capture's OOM
fixture: an MLP under a 2 GiB cap the script sets itself, the batch
doubling every step until an allocation fails. The OutOfMemoryError is not
caught, so the script dies with status 1, as a real job would.

    python oom_train.py
"""

import torch
import torch.nn.functional as F
from torch import nn

CAP = 2 << 30
WIDTH = 2048

torch.cuda.set_per_process_memory_fraction(CAP / torch.cuda.get_device_properties(0).total_memory, 0)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU(),
                      nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, 10)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

batch = 1024
for step in range(30):
    x = torch.randn(batch, WIDTH, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    print("step %d batch %d ok" % (step, batch), flush=True)
    batch *= 2
