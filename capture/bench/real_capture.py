"""A benchmark input of real shape (issue 34): a LlamaForCausalLM from a
config (random weights) trained with AdamW the way a user records one, with
plain torch calls and torch's default stacks (Python and C++), dumped after
several step counts so one of the files lands near the size asked for.

    python3 real_capture.py --out DIR [--steps 5,10,20,40]

Writes DIR/real-STEPS.pickle for each count. No memscope code runs in the
process; nothing here is a fixture (the files are tens of MB).
"""

import argparse
import os

import torch
from transformers import LlamaConfig, LlamaForCausalLM

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", default="5,10,20,40")
args = p.parse_args()
dumps = sorted(int(s) for s in args.steps.split(","))
os.makedirs(args.out, exist_ok=True)

cfg = LlamaConfig(vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=8,
                  num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=1024)
torch.manual_seed(0)
torch.cuda.memory._record_memory_history(max_entries=10000000)
model = LlamaForCausalLM(cfg).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
g = torch.Generator().manual_seed(0)
for step in range(1, dumps[-1] + 1):
    ids = torch.randint(0, cfg.vocab_size, (8, int(torch.randint(128, 513, (1,), generator=g))), generator=g).cuda()
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if step in dumps:
        torch.cuda.synchronize()
        path = os.path.join(args.out, "real-%d.pickle" % step)
        torch.cuda.memory._dump_snapshot(path)
        st = torch.cuda.memory_stats()
        print(path, os.path.getsize(path), "reserved_peak", st["reserved_bytes.all.peak"],
              "allocated_peak", st["allocated_bytes.all.peak"], "num_alloc_retries", st["num_alloc_retries"], flush=True)
