"""The Hugging Face Trainer (default optimizer: fused AdamW) on a small
LlamaForCausalLM built from a config, with a callback that turns recording
on at the start of a middle step, as users do to skip the warm-up. The
parameters and Adam moments predate the recording; the Trainer zeroes
gradients with model.zero_grad() (no Optimizer.zero_grad range)."""

import argparse
import inspect
import os
import tempfile

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainerCallback, TrainingArguments

from truthlib import Truth, param_bytes, optimizer_state_bytes

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--start", type=int, default=3)
p.add_argument("--steps", type=int, default=6)
args = p.parse_args()

VOCAB, SEQ, BATCH = 4096, 128, 8


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, VOCAB, (n, SEQ), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class Recorder(TrainerCallback):
    """Records steps start..start+steps-1 and keeps torch's truth."""

    def __init__(self):
        self.truth = None
        self.step = 0
        self.done = False

    def on_step_begin(self, targs, state, control, **kw):
        if state.global_step == args.start and self.truth is None:
            torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
            self.truth = Truth("plain-trainer-late", __file__, first_recorded_global_step=args.start)
            self.truth.begin_window()
            self.truth.phase(0, "forward")

    def after_forward(self):
        if self.truth and not self.done:
            self.truth.phase(self.step, "backward")

    def after_backward(self):
        if self.truth and not self.done:
            self.truth.phase(self.step, "optimizer")

    def on_step_end(self, targs, state, control, **kw):
        if not self.truth or self.done:
            return
        self.step += 1
        if self.step == args.steps:
            self.done = True
            opt = trainer.optimizer
            raw, rounded = optimizer_state_bytes(opt)
            src = inspect.getsourcefile(LlamaForCausalLM)
            lines, first = inspect.getsourcelines(LlamaForCausalLM.forward)
            logits = next(first + i for i, l in enumerate(lines) if "self.lm_head(" in l)
            self.truth.t.update(
                param_bytes=param_bytes(trainer.model), optimizer_state_bytes=raw,
                optimizer_state_bytes_rounded=rounded, optimizer=str(targs.optim),
                optimizer_class=type(opt).__name__,
                sites={"logits": {"file": os.path.abspath(src), "line": logits,
                                  "function": "forward"}})
            self.truth.finish(args.out)
        else:
            self.truth.phase(self.step, "forward")


rec = Recorder()


class MeasuredTrainer(Trainer):
    """The phase boundaries for the truth only; the work is the Trainer's."""

    def compute_loss(self, *a, **kw):
        out = super().compute_loss(*a, **kw)
        rec.after_forward()
        return out

    def training_step(self, *a, **kw):
        out = super().training_step(*a, **kw)
        rec.after_backward()
        return out


torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=SEQ,
                  tie_word_embeddings=False)
model = LlamaForCausalLM(cfg)
targs = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=BATCH,
                          max_steps=args.start + args.steps, logging_steps=1000,
                          save_strategy="no", report_to="none", disable_tqdm=True,
                          dataloader_num_workers=0, seed=0)
trainer = MeasuredTrainer(model=model, args=targs, train_dataset=RandomTokens(BATCH * 32),
                          callbacks=[rec])
trainer.train()
assert rec.done, "recording did not finish"
