"""FSDP2 (fully_shard) on a one-rank NCCL group, recorded the way users
record: plain _record_memory_history after a warm-up step, so the sharded
fp32 parameters and AdamW's moments predate the recording and the three
recorded Optimizer.step calls work on them. Each decoder layer and the root
are fully_shard'ed with bf16 parameters for compute (MixedPrecisionPolicy).

    python3 fsdp2.py --out DIR            # 3 steps after a warm-up
    python3 fsdp2.py --out DIR --oom      # torchtitan's shape: recording from
        the start of training, one forward that runs out of memory under a
        cap, the dump written at the OOM as rank0_memory_snapshot.pickle too
"""

import argparse
import os
import pickle
import shutil

from common import Truth, annotation_names, local_bytes, oom_facts, small_llama, state_bytes  # noqa: I001

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from transformers import LlamaForCausalLM

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--oom", action="store_true")
p.add_argument("--cap", type=int, default=6 << 30)
p.add_argument("--oom-batch", type=int, default=16)
args = p.parse_args()

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29517" if args.oom else "29513")
dist.init_process_group("nccl", rank=0, world_size=1)
torch.cuda.set_device(0)
torch.manual_seed(0)

cfg = small_llama(num_hidden_layers=8)
model = LlamaForCausalLM(cfg).cuda()
mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
for layer in model.model.layers:
    fully_shard(layer, mp_policy=mp)
fully_shard(model, mp_policy=mp)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
batch, seq = 4, 1024


def step_once(truth, step, bs):
    ids = torch.randint(0, cfg.vocab_size, (bs, seq), device="cuda")
    if truth:
        truth.phase(step, "forward")
    loss = model(input_ids=ids, labels=ids, use_cache=False).loss
    if truth:
        truth.phase(step, "backward")
    loss.backward()
    if truth:
        truth.phase(step, "optimizer")
    opt.step()
    opt.zero_grad(set_to_none=True)


params = list(model.parameters())
if not args.oom:
    step_once(None, -1, batch)  # warm-up: AdamW's moments exist before recording
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
    truth = Truth("workload-fsdp2", __file__, world_size=1, batch=batch, seq=seq, layers=8,
                  sharding="fully_shard per decoder layer and root, bf16 params, fp32 reduce")
    truth.begin_window()
    for step in range(args.steps):
        step_once(truth, step, batch)
    truth.close()
    truth.t.update(param_bytes=local_bytes(params), optimizer_state_bytes=state_bytes(opt),
                   optimizer="AdamW", gradient_bytes=local_bytes(params),
                   gathered_param_bytes_bf16=sum(p.numel() for p in params) * 2)
    truth.finish(args.out)
else:
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(args.cap / total)
    torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
    truth = Truth("workload-fsdp2-oom", __file__, world_size=1, batch=args.oom_batch, seq=seq, layers=8,
                  cap_bytes=args.cap, cap_fraction=args.cap / total)
    truth.begin_window()
    try:
        step_once(truth, 0, args.oom_batch)
    except torch.OutOfMemoryError as e:
        truth.freeze_end()
        truth.t.update(param_bytes=local_bytes(params), optimizer_state_bytes=0, optimizer="AdamW",
                       oom=oom_facts(truth, e, truth.cur[1] if truth.cur else "forward", step=0, batch=args.oom_batch))
        truth.finish(args.out)
        d = os.path.join(args.out, "memory_snapshot", "iteration_1_exit")
        os.makedirs(d, exist_ok=True)
        shutil.copy(os.path.join(args.out, "snapshot.pickle"), os.path.join(d, "rank0_memory_snapshot.pickle"))
with open(os.path.join(args.out, "snapshot.pickle"), "rb") as f:
    print("annotations:", sorted(annotation_names(pickle.load(f)).items(), key=lambda kv: -kv[1])[:15])
dist.destroy_process_group()
