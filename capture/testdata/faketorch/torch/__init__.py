"""A fake torch for the capture runner's tests: pure Python, no CUDA, no
real torch. It has what memscope's harness drives on its capture path
(harness.py check and run; torchrun) and a toy allocator behind
torch.cuda, so a script written for it runs under the real harness code
and leaves real files: memory_stats() counts the bytes its tensors hold,
torch.cuda.memory._snapshot() returns a snapshot of the same shape as
torch's (segments and one device trace of alloc/free entries), and
torch.distributed.run starts the ranks as torchrun does.

A Tensor holds nbytes of fake device memory from its creation until it
is garbage (CPython frees it when its last reference goes).
"""

import random as _random

__version__ = "2.11.0+fake"

from torch import cuda  # noqa: E402
from torch import _C  # noqa: E402,F401
from torch import autograd  # noqa: E402
from torch import nn  # noqa: E402,F401
from torch import optim  # noqa: E402,F401
from torch import profiler  # noqa: E402,F401
from torch import distributed  # noqa: E402,F401

_seed = [0]


def manual_seed(n):
    _seed[0] = n
    _random.seed(n)


class Tensor(object):
    """nbytes of fake device memory; grad is set by backward."""

    def __init__(self, nbytes, requires_grad=False):
        self.nbytes = int(nbytes)
        self.requires_grad = requires_grad
        self.grad = None
        self._addr = cuda._alloc(self.nbytes)

    def __del__(self):
        if getattr(self, "_addr", None) is not None:
            cuda._free(self._addr, self.nbytes)
            self._addr = None

    def backward(self):
        autograd.backward(self)


def empty(nbytes, requires_grad=False):
    return Tensor(nbytes, requires_grad)
