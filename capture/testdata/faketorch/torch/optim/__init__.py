"""torch.optim: an AdamW whose state (two moments per parameter) is made
at its first step, as torch's is; step() runs the global step hooks."""

from torch.optim.optimizer import Optimizer  # noqa: F401


class AdamW(Optimizer):
    def __init__(self, params, lr=1e-3):
        Optimizer.__init__(self, params)
        self.state = {}

    def _step(self):
        import torch

        for i, p in enumerate(self.params):
            if i not in self.state:
                self.state[i] = (torch.Tensor(p.nbytes), torch.Tensor(p.nbytes))
