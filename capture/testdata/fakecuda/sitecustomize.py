"""Test support: with MEMSCOPE_FAKE_CUDA=1 and this folder on PYTHONPATH,
every Python process (torchrun's workers too) imports torch at start-up and
replaces torch.cuda with a CPU stand-in, so that the capture path (hooks,
runpy, rank naming, files, torchrun) can be exercised where torch has no
CUDA. The numbers it reports are made up; only the bookkeeping is tested.
It also mends torchrun 1.13 on Python 3.11 (its redirects parsing breaks).
"""

import os

if os.environ.get("MEMSCOPE_FAKE_CUDA") == "1":
    import torch

    class _Props(object):
        name = "Fake CUDA (CPU stand-in)"
        total_memory = 80 << 30

    class _FakeCUDA(object):
        def __init__(self):
            self.calls = 0
            self.device = 0
            self.history = None

        def stats(self, device=None):
            # the peak grows with the rank, so that the worst rank is rank N-1
            self.calls += 1
            n = (self.calls + 100 * int(os.environ.get("RANK", "0"))) << 20
            s = {}
            for key in ("allocated_bytes", "requested_bytes", "active_bytes"):
                s[key + ".all.current"] = n
                s[key + ".all.peak"] = n + (1 << 20)
            s["reserved_bytes.all.current"] = s["reserved_bytes.all.peak"] = 2 * n
            s["num_alloc_retries"] = 0
            s["num_ooms"] = 0
            return s

        def record(self, enabled="all", context="all", stacks="python", max_entries=0):
            if enabled:
                self.history = {"stacks": stacks, "max_entries": max_entries}

        def install(self, t):
            c = t.cuda
            c.is_available = lambda: True
            c.init = lambda: None
            c.device_count = lambda: int(os.environ.get("FAKE_CUDA_DEVICES", "2"))
            c.set_device = lambda d: setattr(self, "device", d)
            c.current_device = lambda: self.device
            c.synchronize = lambda device=None: None
            c.memory_stats = self.stats
            c.reset_peak_memory_stats = lambda device=None: None
            c.mem_get_info = lambda device=None: (70 << 30, 80 << 30)
            c.get_device_properties = lambda d: _Props()
            c.memory._record_memory_history = self.record
            c.memory._snapshot = lambda: {"segments": [], "device_traces": [[]],
                                          "fake": True, "history": self.history}
            t._fake_oom_observers = []
            t._C._cuda_attach_out_of_memory_observer = t._fake_oom_observers.append

    _FakeCUDA().install(torch)

    try:
        from torch.distributed.elastic.multiprocessing import api as _api

        _to_map = _api.to_map

        def _to_map_fixed(val_or_map, local_world_size):
            if val_or_map is None:
                val_or_map = _api.Std.NONE
            return _to_map(val_or_map, local_world_size)

        _api.to_map = _to_map_fixed
        import torch.distributed.elastic.multiprocessing as _mp

        _mp.to_map = _to_map_fixed
    except ImportError:
        pass
