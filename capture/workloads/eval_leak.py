"""An evaluation loop that keeps each batch's probabilities on the GPU: no
optimizer, no annotation (no DataLoader: the batches are CPU tensors moved
one by one), 12 identical batches under torch.no_grad, the model built and
moved before recording. The classic inference leak.

    python3 eval_leak.py --out DIR
"""

import argparse

from common import Truth, local_bytes, marked_line

import timm
import torch

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--batches", type=int, default=12)
args = p.parse_args()
torch.manual_seed(0)
model = timm.create_model("vit_small_patch16_224", pretrained=False, num_classes=1000).cuda().eval()
data = [torch.randn(64, 3, 224, 224) for _ in range(args.batches)]
torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
truth = Truth("workload-eval-leak", __file__, batches=args.batches)
truth.begin_window()
probs = []
with torch.no_grad():
    for step, images in enumerate(data):
        truth.phase(step, "forward")
        images = images.cuda(non_blocking=True)
        logits = model(images)
        probs.append(torch.softmax(logits, dim=-1))  # LEAK: kept on the GPU for every batch
truth.close()
b = probs[0].numel() * probs[0].element_size()
truth.t.update(param_bytes=local_bytes(list(model.parameters()) + list(model.buffers())), optimizer_state_bytes=0,
               optimizer=None,
               leak={"file": truth.script, "line": marked_line(__file__, "# LEAK"), "function": "<module>",
                     "steps": len(probs), "bytes_per_step": b})
truth.finish(args.out)
