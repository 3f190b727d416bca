"""One forward pass through 32 transformer layers, nothing else: the same
allocation pattern repeats 32 times inside one module call (layers, not
steps). A bf16 LlamaForCausalLM from a config under inference_mode, built
before recording.

    python3 one_forward.py --out DIR
"""

import argparse

from common import Truth, local_bytes, small_llama

import torch
from transformers import LlamaForCausalLM

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
args = p.parse_args()
torch.manual_seed(0)
cfg = small_llama(num_hidden_layers=32, hidden_size=512, intermediate_size=1408, num_attention_heads=8,
                  num_key_value_heads=8)
model = LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).eval()
ids = torch.randint(0, cfg.vocab_size, (8, 1024), device="cuda")
torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
truth = Truth("workload-one-forward", __file__, layers=32)
truth.begin_window()
with torch.inference_mode():
    truth.phase(0, "forward")
    logits = model(input_ids=ids, use_cache=False).logits
truth.close()
truth.t.update(param_bytes=local_bytes(model.parameters()), optimizer_state_bytes=0, optimizer=None)
truth.finish(args.out)
