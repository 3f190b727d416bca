"""A Lightning training loop (automatic optimization, Adam): Lightning runs
the forward and backward inside optimizer.step(closure), so they fall inside
the Optimizer.step range. A callback turns recording on at a middle batch."""

import argparse

import torch
import torch.nn as nn

try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl

from truthlib import Truth, param_bytes, optimizer_state_bytes

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--start", type=int, default=2)
p.add_argument("--steps", type=int, default=6)
args = p.parse_args()


class Recorder(pl.Callback):
    def __init__(self):
        self.truth = None
        self.step = 0
        self.done = False

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if batch_idx == args.start and self.truth is None:
            torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
            self.truth = Truth("plain-lightning", __file__, first_recorded_batch=args.start)
            self.truth.begin_window()
            self.truth.phase(0, "forward")

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if not self.truth or self.done:
            return
        self.step += 1
        if self.step == args.steps:
            self.done = True
            opt = trainer.optimizers[0]
            raw, rounded = optimizer_state_bytes(opt)
            self.truth.t.update(param_bytes=param_bytes(module), optimizer_state_bytes=raw,
                                optimizer_state_bytes_rounded=rounded, optimizer="Adam",
                                lightning=pl.__version__)
            self.truth.finish(args.out)
        else:
            self.truth.phase(self.step, "forward")


rec = Recorder()


class LitMLP(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                                 nn.Linear(4096, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)

    def on_before_backward(self, loss):
        if rec.truth and not rec.done:
            rec.truth.phase(rec.step, "backward")

    def on_after_backward(self):
        if rec.truth and not rec.done:
            rec.truth.phase(rec.step, "optimizer")


torch.manual_seed(0)
n = 1024 * (args.start + args.steps + 1)
data = torch.utils.data.TensorDataset(torch.randn(n, 1024), torch.randint(0, 10, (n,)))
loader = torch.utils.data.DataLoader(data, batch_size=1024)
trainer = pl.Trainer(accelerator="gpu", devices=1, max_steps=args.start + args.steps, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False, num_sanity_val_steps=0, callbacks=[rec])
trainer.fit(LitMLP(), loader)
assert rec.done, "recording did not finish"
