"""A small training loop written the way users write them, for memscope
capture: a token-wise MLP language model (embedding, MLP, output
projection over the vocabulary), AdamW, zero_grad after the step; under
torchrun it trains with DDP over NCCL. With --uneven, rank r gets sequences
(2 + r)/2 times longer, the way length-bucketed data makes one rank the
memory outlier. Nothing in it knows about memscope.

    python train.py --steps 8
    torchrun --nproc-per-node 2 train.py --uneven
"""

import argparse
import os

import torch
import torch.nn.functional as F
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=8)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq", type=int, default=256)
p.add_argument("--width", type=int, default=1024)
p.add_argument("--vocab", type=int, default=32000)
p.add_argument("--uneven", action="store_true")
args = p.parse_args()

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
if world > 1:
    torch.distributed.init_process_group("nccl")
torch.manual_seed(0)

model = nn.Sequential(
    nn.Embedding(args.vocab, args.width),
    nn.Linear(args.width, 4 * args.width), nn.GELU(), nn.Linear(4 * args.width, args.width),
    nn.LayerNorm(args.width),
    nn.Linear(args.width, args.vocab),
).cuda()
if world > 1:
    model = nn.parallel.DistributedDataParallel(model, device_ids=[local])
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
seq = args.seq * (2 + rank) // 2 if args.uneven else args.seq

for step in range(args.steps):
    ids = torch.randint(0, args.vocab, (args.batch, seq), device="cuda")
    logits = model(ids)
    loss = F.cross_entropy(logits.float().view(-1, args.vocab), ids.view(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if step % 4 == 0:
        print("rank %d step %d loss %.3f seq %d" % (rank, step, loss.item(), seq), flush=True)

if world > 1:
    torch.distributed.destroy_process_group()
