"""torch.autograd: backward gives every parameter of the graph a gradient
of its own size (kept until zero_grad) and, for a while, a temporary of the
loss's size."""

_graph = []  # the parameters the current forward used


def backward(tensor):
    import torch

    tmp = torch.Tensor(tensor.nbytes)  # noqa: F841 - live during backward
    for p in _graph:
        if p.grad is None:
            p.grad = torch.Tensor(p.nbytes)
    del _graph[:]
