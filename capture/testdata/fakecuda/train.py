"""A tiny CPU training loop for the fake-CUDA capture test. With WORLD_SIZE
> 1 it trains under DDP with gloo. Exits with --exit-code, raises with
--raise, or runs out of (fake) memory in step 3's backward with --oom: the
error escapes, or with --survive the loop catches it and goes on."""
import argparse
import os

import torch

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=6)
p.add_argument("--exit-code", type=int, default=0)
p.add_argument("--raise", dest="raise_", action="store_true")
p.add_argument("--oom", action="store_true")
p.add_argument("--survive", action="store_true")
args = p.parse_args()


class FakeOOM(torch.autograd.Function):
    """Identity forward; its backward reports an OOM the way the allocator does."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        for fn in getattr(torch, "_fake_oom_observers", []):
            fn(0, 1 << 30, 80 << 30, 1 << 20)
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB (fake)")


model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
if int(os.environ.get("WORLD_SIZE", "1")) > 1:
    torch.distributed.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(args.steps):
    opt.zero_grad(set_to_none=True)
    x = torch.randn(4, 8)
    out = model(x)
    if args.oom and step == 3:
        out = FakeOOM.apply(out)
    loss = torch.nn.functional.cross_entropy(out, torch.zeros(4, dtype=torch.long))
    try:
        loss.backward()
    except torch.cuda.OutOfMemoryError:
        if not args.survive:
            raise
        opt.zero_grad(set_to_none=True)
        continue
    opt.step()
    if args.raise_ and step == 3:
        raise RuntimeError("planted failure at step 3")
print("trained", args.steps, "steps; __name__ =", __name__, "; argv =", __import__("sys").argv)
if int(os.environ.get("WORLD_SIZE", "1")) > 1:
    torch.distributed.destroy_process_group()
raise SystemExit(args.exit_code)
