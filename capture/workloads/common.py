"""Helpers shared by the big-model workload fixtures (issue 28): the import
path to truthlib, byte counts that see through DTensors, and a cache walk.
Nothing here allocates device memory."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "plain"))

import torch  # noqa: E402

from truthlib import Truth, marked_line, oom_facts, round512, tensor_bytes  # noqa: E402,F401


def local(t):
    """The local shard of a DTensor, else t."""
    return t.to_local() if hasattr(t, "to_local") else t


def local_bytes(ts):
    seen, total = set(), 0
    for t in ts:
        t = local(t)
        if t.is_cuda and t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += tensor_bytes(t)
    return total


def state_bytes(opt):
    """Bytes of every device tensor in a torch.optim optimizer's state."""
    ts = []
    for st in opt.state.values():
        for v in st.values():
            if torch.is_tensor(v):
                ts.append(v)
    return local_bytes(ts)


def cache_bytes(cache):
    """Bytes of every device tensor reachable from cache (a KV cache)."""
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


def annotation_names(snap):
    """Counts of the annotation names torch wrote into a snapshot."""
    out = {}
    for a in snap.get("external_annotations", []) or []:
        n = a.get("name") if isinstance(a, dict) else None
        if n:
            out[n] = out.get(n, 0) + 1
    return out


def small_llama(**kw):
    from transformers import LlamaConfig
    cfg = dict(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
               num_attention_heads=16, num_key_value_heads=8, max_position_embeddings=4096,
               attn_implementation="sdpa")
    cfg.update(kw)
    return LlamaConfig(**cfg)


def private_pools():
    """torch's own view of the private pools (CUDA graphs', MemPools'):
    per segment_pool_id other than (0, 0), reserved and allocated bytes and
    segments, from torch.cuda.memory_snapshot()."""
    pools = {}
    for seg in torch.cuda.memory_snapshot():
        pid = tuple(seg.get("segment_pool_id", (0, 0)))
        if pid != (0, 0):
            d = pools.setdefault(str(pid), {"reserved": 0, "allocated": 0, "segments": 0})
            d["reserved"] += seg["total_size"]
            d["allocated"] += seg["allocated_size"]
            d["segments"] += 1
    return pools
