"""torch.nn: Module (its call runs the global forward pre-hooks) and a
Linear of a weight of nbytes whose output is out_bytes."""

from torch.nn.modules.module import Module  # noqa: F401


class Linear(Module):
    def __init__(self, nbytes, out_bytes):
        import torch

        Module.__init__(self)
        self.weight = torch.Tensor(nbytes, requires_grad=True)
        self.out_bytes = out_bytes

    def parameters(self):
        return [self.weight]

    def forward(self, x):
        import torch

        torch.autograd._graph.append(self.weight)
        return torch.Tensor(self.out_bytes)
