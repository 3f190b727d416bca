"""A user-defined sweep workload: `memscope sweep --model convnet:factory`
with this folder on PYTHONPATH. factory(device) returns the model,
make_batch(n) -> (inputs, targets), and loss_fn(output, targets)."""

import torch
import torch.nn.functional as F


def factory(device):
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 128, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(128, 10))

    def make_batch(n):
        return (torch.randn(n, 3, 128, 128, device=device),
                torch.randint(0, 10, (n,), device=device))

    return model, make_batch, F.cross_entropy
