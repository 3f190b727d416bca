"""The advise fixtures' inference runs: generate() of a small
LlamaForCausalLM (random weights from a config) with the KV cache
transformers makes by default (DynamicCache: grown by torch.cat per token)
or a preallocated one (cache_implementation="static"). Recorded with plain
torch from before the model is built; the cache is kept alive through the
dump (return_dict_in_generate), and truth.json has its bytes and the
weights' bytes.

    python3 infer.py --cache dynamic|static --out DIR
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "plain"))

import torch  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from truthlib import Truth, param_bytes, tensor_bytes  # noqa: E402


def cache_bytes(cache):
    """Bytes of every tensor the cache holds (its layers' keys and values)."""
    seen, total = set(), 0
    stack = [cache]
    while stack:
        o = stack.pop()
        if torch.is_tensor(o):
            if o.is_cuda and o.data_ptr() not in seen:
                seen.add(o.data_ptr())
                total += tensor_bytes(o)
        elif isinstance(o, (list, tuple)):
            stack.extend(o)
        elif isinstance(o, dict):
            stack.extend(o.values())
        elif hasattr(o, "__dict__"):
            stack.extend(vars(o).values())
    return total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cache", choices=["dynamic", "static"], required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    torch.manual_seed(0)
    torch.cuda.memory._record_memory_history(max_entries=1000000, stacks="python")
    truth = Truth("advise-infer-" + args.cache, __file__, cache=args.cache)
    truth.begin_window()
    truth.phase(-1, "setup")
    cfg = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                      num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=4096,
                      attn_implementation="sdpa")
    model = LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).eval()
    weights = param_bytes(model)
    batch, prompt, new = 4, 512, 32
    ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device="cuda")
    truth.phase(0, "generate")
    kw = {"cache_implementation": "static"} if args.cache == "static" else {}
    with torch.inference_mode():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, min_new_tokens=new,
                             do_sample=False, return_dict_in_generate=True, pad_token_id=0, **kw)
    truth.t.update(param_bytes=weights, kv_cache_bytes=cache_bytes(out.past_key_values),
                   batch=batch, prompt=prompt, new_tokens=new,
                   model={"vocab": cfg.vocab_size, "hidden": cfg.hidden_size, "layers": cfg.num_hidden_layers,
                          "heads": cfg.num_attention_heads, "kv_heads": cfg.num_key_value_heads,
                          "head_dim": cfg.hidden_size // cfg.num_attention_heads},
                   kv_cache_formula="2 × layers × batch × kv_heads × length × head_dim × 2 B")
    truth.finish(args.out)


if __name__ == "__main__":
    main()
