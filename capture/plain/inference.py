"""An inference loop with no optimizer and no annotation at all: a timm
ViT classifying batches under torch.inference_mode, recording started
after the model is on the GPU."""

import argparse

import timm
import torch

from truthlib import Truth, param_bytes

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--batches", type=int, default=8)
args = p.parse_args()

torch.manual_seed(0)
model = timm.create_model("vit_small_patch16_224", pretrained=False, num_classes=1000).cuda().eval()
torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
truth = Truth("plain-inference", __file__)
truth.begin_window()
preds = []
with torch.inference_mode():
    for step in range(args.batches):
        truth.phase(step, "forward")
        images = torch.randn(64, 3, 224, 224, device="cuda")
        logits = model(images)
        preds.append(logits.argmax(-1).cpu())
truth.t.update(param_bytes=param_bytes(model), optimizer_state_bytes=0, optimizer=None,
               batches=args.batches)
truth.finish(args.out)
