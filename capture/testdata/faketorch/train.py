"""A training loop for the fake torch beside it (the capture runner's
test): a Linear of 1 MiB whose output is (rank + 1) × 2 MiB, AdamW, --steps
steps. Exits with --exit-code, raises in step 3 with --raise, or runs out
of (fake) memory in step 3's backward with --oom: the error escapes, or
with --survive the loop catches it and goes on."""
import argparse
import os

import torch

MiB = 1 << 20

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=6)
p.add_argument("--exit-code", type=int, default=0)
p.add_argument("--raise", dest="raise_", action="store_true")
p.add_argument("--oom", action="store_true")
p.add_argument("--survive", action="store_true")
args = p.parse_args()

rank = int(os.environ.get("RANK", "0"))
if int(os.environ.get("WORLD_SIZE", "1")) > 1:
    torch.distributed.init_process_group("gloo")
model = torch.nn.Linear(1 * MiB, (rank + 1) * 2 * MiB)
opt = torch.optim.AdamW(model.parameters())
for step in range(args.steps):
    opt.zero_grad(set_to_none=True)
    out = model(None)
    try:
        if args.oom and step == 3:
            torch.cuda._oom(1 << 30)
        out.backward()
    except torch.cuda.OutOfMemoryError:
        if not args.survive:
            raise
        opt.zero_grad(set_to_none=True)
        continue
    del out
    opt.step()
    if args.raise_ and step == 3:
        raise RuntimeError("planted failure at step 3")
print("trained", args.steps, "steps; __name__ =", __name__)
if int(os.environ.get("WORLD_SIZE", "1")) > 1:
    torch.distributed.destroy_process_group()
raise SystemExit(args.exit_code)
