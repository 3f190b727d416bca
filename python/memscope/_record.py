"""memscope.record: record the CUDA caching allocator's history around a
block of code and write the snapshot memscope reads.

Plain torch underneath: torch.cuda.memory._record_memory_history before,
torch.cuda.memory._snapshot after, written with pickle protocol 4; at an
out-of-memory error the allocator's OOM observer writes the snapshot at
once, while every tensor of the failing step is still alive.
"""

import functools
import os
import pickle

PICKLE_PROTOCOL = 4


def _torch():
    """torch, imported when recording starts: memscope.analyze and the
    memscope command need no torch."""
    try:
        import torch
    except ImportError as e:
        raise ImportError("memscope.record needs torch (with CUDA) in this Python; "
                          "memscope.analyze and the memscope command do not: %s" % e) from e
    return torch


def _rank():
    """This process's rank under torchrun (RANK, else LOCAL_RANK), or None
    for a single process."""
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    for key in ("RANK", "LOCAL_RANK"):
        if key in os.environ and (world > 1 or key == "LOCAL_RANK"):
            try:
                return int(os.environ[key])
            except ValueError:
                return None
    return None


def rank_path(path, rank=None):
    """The file of one rank: "{rank}" in path is replaced by the rank; else,
    under torchrun, ".rankN" goes before the extension. A single process
    keeps path as given ("{rank}" becomes 0)."""
    if rank is None:
        rank = _rank()
    if "{rank}" in path:
        return path.replace("{rank}", str(rank or 0))
    if rank is None:
        return path
    root, ext = os.path.splitext(path)
    return "%s.rank%d%s" % (root, rank, ext or ".pickle")


class record:
    """Record the allocator's history and write a snapshot for memscope.

        with memscope.record("snapshot.pickle"):
            train()

        @memscope.record("snapshot.pickle")
        def train(): ...

    max_entries bounds the trace (torch's ring buffer: the oldest entries
    go first); stacks is "python" (cheap) or "all" (with C++ frames, slow);
    on_oom writes the snapshot when an allocation fails, before the error
    unwinds (the state memscope oom explains). Under torchrun every rank
    writes its own file (see rank_path). The path written is in .path.
    """

    def __init__(self, path="snapshot.pickle", max_entries=1_000_000, stacks="python", on_oom=True):
        if stacks not in ("python", "all"):
            raise ValueError("stacks must be 'python' or 'all', not %r" % (stacks,))
        if int(max_entries) <= 0:
            raise ValueError("max_entries must be positive, not %r" % (max_entries,))
        self.requested_path = os.fspath(path)
        self.max_entries = int(max_entries)
        self.stacks = stacks
        self.on_oom = on_oom
        self.path = None
        self.oom_written = False
        self._active = False

    # -- the context manager --

    def __enter__(self):
        torch = _torch()

        if not torch.cuda.is_available():
            raise RuntimeError("memscope.record: CUDA is not available; the caching allocator records nothing")
        self.path = rank_path(self.requested_path)
        parent = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(parent, exist_ok=True)
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks=self.stacks,
                                                 max_entries=self.max_entries)
        self._active = True
        self.oom_written = False
        if self.on_oom and hasattr(torch._C, "_cuda_attach_out_of_memory_observer"):
            torch._C._cuda_attach_out_of_memory_observer(self._observer)
        return self

    def __exit__(self, exc_type, exc, tb):
        torch = _torch()

        oom = exc_type is not None and issubclass(exc_type, getattr(torch.cuda, "OutOfMemoryError", MemoryError))
        try:
            # After an OOM the observer's file holds the state at the
            # failure, every tensor of the step alive; the exception's
            # frames are gone now, so keep that one.
            if not (oom and self.oom_written):
                self._write()
        finally:
            self._active = False
            torch.cuda.memory._record_memory_history(enabled=None)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record(self.requested_path, self.max_entries, self.stacks, self.on_oom):
                return fn(*args, **kwargs)
        return wrapper

    # -- files --

    def _observer(self, device, alloc, device_allocated, device_free):
        # torch keeps observers for the life of the process: one of an
        # earlier block does nothing once its block has ended.
        if not self._active or self.oom_written:
            return
        self._write()
        self.oom_written = True

    def _write(self):
        torch = _torch()

        snap = torch.cuda.memory._snapshot()
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as f:
            pickle.dump(snap, f, protocol=PICKLE_PROTOCOL)
        os.replace(tmp, self.path)
