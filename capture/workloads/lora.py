"""Frozen base weights with small trained adapters (the LoRA shape): a bf16
LlamaForCausalLM from a config, peft LoRA (r 16) on q_proj and v_proj with
the adapters in fp32, AdamW over the adapters only, bf16 autocast. Recorded
after the model is built and moved, as most users record: the frozen
weights predate the recording.

    python3 lora.py --out DIR
"""

import argparse

from common import Truth, local_bytes, small_llama, state_bytes

import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaForCausalLM

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=4)
args = p.parse_args()
torch.manual_seed(0)
cfg = small_llama(num_hidden_layers=6)
model = LlamaForCausalLM(cfg).to("cuda", torch.bfloat16)
model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "v_proj"]))
for n, prm in model.named_parameters():
    if prm.requires_grad:
        prm.data = prm.data.float()
trainable = [q for q in model.parameters() if q.requires_grad]
frozen = [q for q in model.parameters() if not q.requires_grad]
opt = torch.optim.AdamW(trainable, lr=1e-4)
batch, seq = 4, 512
torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
truth = Truth("workload-lora", __file__, batch=batch, seq=seq)
truth.begin_window()
for step in range(args.steps):
    truth.phase(step, "forward")
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(input_ids=ids, labels=ids).loss
    truth.phase(step, "backward")
    loss.backward()
    truth.phase(step, "optimizer")
    opt.step()
    opt.zero_grad(set_to_none=True)
truth.close()
truth.t.update(param_bytes=local_bytes(frozen + trainable), frozen_param_bytes=local_bytes(frozen),
               trainable_param_bytes=local_bytes(trainable), optimizer_state_bytes=state_bytes(opt),
               optimizer="AdamW", gradient_bytes=local_bytes(trainable))
truth.finish(args.out)
