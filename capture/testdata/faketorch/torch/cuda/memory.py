"""torch.cuda.memory: recording and the snapshot, from the toy allocator's
books (torch.cuda._b)."""


def _record_memory_history(enabled="all", context="all", stacks="python", max_entries=0):
    from torch import cuda

    if enabled:
        cuda._b.history = [] if cuda._b.history is None else cuda._b.history
        cuda._b.stacks = stacks
    else:
        cuda._b.history = None


def _snapshot():
    """The end state (each segment with its one block, then the free rest)
    and the trace, shaped as torch's _snapshot()."""
    from torch import cuda

    segs = []
    for addr in sorted(cuda._b.segments):
        size, used = cuda._b.segments[addr]
        blocks = []
        if used:
            blocks.append({"address": addr, "size": used, "requested_size": used,
                           "state": "active_allocated", "frames": []})
        if size > used:
            blocks.append({"address": addr + used, "size": size - used, "requested_size": 0,
                           "state": "inactive", "frames": []})
        segs.append({"device": cuda._b.device, "address": addr, "total_size": size,
                     "allocated_size": used, "active_size": used, "requested_size": used,
                     "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                     "is_expandable": False, "frames": [], "blocks": blocks})
    traces = [[] for _ in range(cuda._b.device + 1)]
    traces[cuda._b.device] = list(cuda._b.history or [])
    return {"segments": segs, "device_traces": traces}
