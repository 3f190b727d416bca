"""memscope.record used as a user would: a plain training loop inside
`with memscope.record(path):`, and (--oom) a loop that doubles its batch
until it runs out of memory under a per-process cap, where the OOM
observer of memscope.record writes the snapshot at the failure.

Truth is torch's own counters (truthlib); the snapshot is the file
memscope.record wrote, its frame paths rewritten neutral afterwards."""

import argparse
import os
import sys

import torch
import torch.nn as nn

from truthlib import Truth, oom_facts, optimizer_state_bytes, param_bytes

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python"))
import memscope  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--oom", action="store_true")
p.add_argument("--cap", type=int, default=2 << 30)
args = p.parse_args()

total = torch.cuda.get_device_properties(0).total_memory
if args.oom:
    torch.cuda.set_per_process_memory_fraction(args.cap / total)
torch.manual_seed(0)
os.makedirs(args.out, exist_ok=True)
path = os.path.join(args.out, "snapshot.pickle")
facts = {"cap_bytes": args.cap, "cap_fraction": args.cap / total} if args.oom else {}
truth = Truth("plain-record-oom" if args.oom else "plain-record", __file__, **facts)
rec = memscope.record(path)


def at_oom(device, alloc, device_allocated, device_free):
    # Called with memscope.record's own observer, at the failure: the
    # snapshot's end is this moment, so the truth's end is too.
    if truth.cur is not None:
        truth.oom_at = truth.cur
        truth.freeze_end()


if args.oom:
    torch._C._cuda_attach_out_of_memory_observer(at_oom)
step, batch = 0, 256
try:
    with rec:
        truth.begin_window()
        truth.phase(-1, "setup")
        model = nn.Sequential(nn.Linear(2048, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(),
                              nn.Linear(4096, 10)).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        while step < (20 if args.oom else 4):
            truth.phase(step, "forward")
            x = torch.randn(batch, 2048, device="cuda")
            y = torch.randint(0, 10, (batch,), device="cuda")
            loss = nn.functional.cross_entropy(model(x), y)
            truth.phase(step, "backward")
            loss.backward()
            truth.phase(step, "optimizer")
            opt.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            if args.oom:
                batch *= 2
except torch.OutOfMemoryError as e:
    truth.t.update(oom=oom_facts(truth, e, getattr(truth, "oom_at", truth.cur or (None, None))[1],
                                 step=step, batch=batch, written_by_observer=rec.oom_written))
if "RANK" in os.environ:
    # Under torchrun (both ranks on one GPU here): each rank's own file.
    print("rank", os.environ["RANK"], "wrote", rec.path, os.path.getsize(rec.path), "bytes")
    sys.exit(0)
truth.t.update(param_bytes=param_bytes(model), optimizer_state_bytes=optimizer_state_bytes(opt)[0],
               record_path=os.path.basename(rec.path))
if not os.path.exists(path):
    sys.exit("memscope.record wrote no snapshot at " + path)
truth.finish(args.out, snapshot=False)
print("ok:", path, os.path.getsize(path), "bytes; oom written by observer:", rec.oom_written)
