"""torch.cuda: a toy caching allocator on fake devices. Each request gets
a block at the start of a segment of its own (rounded up to 2 MiB); a
freed block's segment stays cached and serves a later request of the same
rounded size, as torch's would. memory_stats() and the snapshot come from
the same books."""

import os
import time

from torch.cuda import memory  # noqa: F401

MiB = 1 << 20
_TOTAL = 80 << 30


class OutOfMemoryError(RuntimeError):
    pass


class _Props(object):
    name = "Fake CUDA (toy allocator)"
    total_memory = _TOTAL


class _Books(object):
    def __init__(self):
        self.device = 0
        self.next_addr = 1 << 40
        self.segments = {}  # addr -> [size, block bytes or 0 when free]
        self.cached = {}  # rounded size -> [addr, ...]
        self.allocated = self.requested = self.reserved = 0
        self.peak_allocated = self.peak_requested = self.peak_reserved = 0
        self.ooms = 0
        self.history = None  # the recorded trace, once _record_memory_history ran
        self.stacks = "python"

    def event(self, action, addr, size):
        if self.history is not None:
            self.history.append({"action": action, "addr": addr, "size": size, "stream": 0,
                                 "time_us": int(time.time() * 1e6), "frames": []})


_b = _Books()


def _round(n):
    return max((n + 2 * MiB - 1) // (2 * MiB), 1) * 2 * MiB


def _alloc(nbytes):
    n = _round(nbytes)
    free = _b.cached.get(n)
    if free:
        addr = free.pop()
    else:
        addr = _b.next_addr
        _b.next_addr += n
        _b.segments[addr] = [n, 0]
        _b.reserved += n
        _b.event("segment_alloc", addr, n)
    _b.segments[addr][1] = nbytes
    _b.allocated += nbytes
    _b.requested += nbytes
    _b.event("alloc", addr, nbytes)
    _b.peak_allocated = max(_b.peak_allocated, _b.allocated)
    _b.peak_requested = max(_b.peak_requested, _b.requested)
    _b.peak_reserved = max(_b.peak_reserved, _b.reserved)
    return addr


def _free(addr, nbytes):
    seg = _b.segments.get(addr)
    if seg is None:
        return
    seg[1] = 0
    _b.allocated -= nbytes
    _b.requested -= nbytes
    _b.event("free_requested", addr, nbytes)
    _b.event("free_completed", addr, nbytes)
    _b.cached.setdefault(seg[0], []).append(addr)


def _oom(nbytes):
    """Report an OOM for a request of nbytes as the allocator does: the
    observers, then the error."""
    import torch

    _b.ooms += 1
    _b.event("oom", _TOTAL - _b.reserved, nbytes)
    for fn in torch._C._oom_observers:
        fn(_b.device, nbytes, _TOTAL, _TOTAL - _b.reserved)
    raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes (fake)" % nbytes)


def is_available():
    return True


def init():
    pass


def device_count():
    return int(os.environ.get("FAKE_CUDA_DEVICES", "2"))


def set_device(d):
    _b.device = d


def current_device():
    return _b.device


def synchronize(device=None):
    pass


def get_device_properties(d):
    return _Props()


def mem_get_info(device=None):
    used = _b.reserved + 512 * MiB  # the context's, outside the allocator
    return _TOTAL - used, _TOTAL


def reset_peak_memory_stats(device=None):
    _b.peak_allocated, _b.peak_requested, _b.peak_reserved = _b.allocated, _b.requested, _b.reserved


def memory_stats(device=None):
    s = {}
    for key, cur, peak in (("allocated_bytes", _b.allocated, _b.peak_allocated),
                           ("requested_bytes", _b.requested, _b.peak_requested),
                           ("active_bytes", _b.allocated, _b.peak_allocated),
                           ("reserved_bytes", _b.reserved, _b.peak_reserved)):
        s[key + ".all.current"] = cur
        s[key + ".all.peak"] = peak
    s["num_alloc_retries"] = 0
    s["num_ooms"] = _b.ooms
    s["segment.all.current"] = len(_b.segments)
    return s
