"""A hand-written prefill/decode loop over past_key_values (no generate()):
a bf16 LlamaForCausalLM from a config, three requests of 4 prompts × 512
tokens, 10 greedy tokens each, a DynamicCache per request dropped when the
request ends. No optimizer and no annotation; the model is built and moved
before recording.

    python3 decode_loop.py --out DIR
"""

import argparse

from common import Truth, cache_bytes, local_bytes, small_llama

import torch
from transformers import DynamicCache, LlamaForCausalLM

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--requests", type=int, default=3)
p.add_argument("--new", type=int, default=10)
args = p.parse_args()
torch.manual_seed(0)
cfg = small_llama(num_hidden_layers=3)
model = LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).eval()
batch, prompt = 4, 512
torch.cuda.memory._record_memory_history(max_entries=400000, stacks="python")
truth = Truth("workload-decode-loop", __file__, batch=batch, prompt=prompt, new_tokens=args.new,
              requests=args.requests)
truth.begin_window()
kv = []
with torch.inference_mode():
    for r in range(args.requests):
        truth.phase(r, "prefill")
        ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device="cuda")
        try:
            cache = DynamicCache(config=cfg)
        except TypeError:
            cache = DynamicCache()
        out = model(input_ids=ids, past_key_values=cache, use_cache=True)
        tok = out.logits[:, -1].argmax(-1, keepdim=True)
        toks = [tok]
        truth.phase(r, "decode")
        for _ in range(args.new - 1):
            out = model(input_ids=tok, past_key_values=cache, use_cache=True)
            tok = out.logits[:, -1].argmax(-1, keepdim=True)
            toks.append(tok)
        kv.append(cache_bytes(cache))
        del out, cache
truth.close()
truth.t.update(param_bytes=local_bytes(model.parameters()), optimizer_state_bytes=0, optimizer=None,
               kv_cache_bytes=max(kv), kv_cache_bytes_per_request=kv,
               kv_cache_formula="2 × layers × batch × kv_heads × (prompt + new − 1) × head_dim × 2 B")
truth.finish(args.out)
