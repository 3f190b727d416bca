#!/usr/bin/env bash
# Makes the capture and sweep fixtures (fixtures/sweep-*, fixtures/capture-*)
# on a GPU machine with torch and transformers. Usage:
#   MEMSCOPE=path/to/memscope capture/make_capture_fixtures.sh OUTDIR [all|single|multi]
# single: the two sweeps and the single-GPU captures (one GPU); multi: the
# 2-rank capture (two GPUs). The sweeps run side by side on GPU 0, each
# under its own memory cap, so their step times include the other's load.
# The fixtures were made with --snapshot-steps 1, then the default; the
# default is now as many steps as --steps (see fixtures/sweep-mlp/README.md).
set -u
out=${1:?usage: make_capture_fixtures.sh OUTDIR [all|single|multi]}
what=${2:-all}
ms=${MEMSCOPE:-memscope}
ex="$(dirname "$0")/examples"
mkdir -p "$out"
if [ "$what" != multi ]; then
  CUDA_VISIBLE_DEVICES=0 "$ms" sweep --model llama --layers 12 --hidden 1024 --intermediate 2816 \
    --heads 16 --kv-heads 8 --vocab 128256 --seq 512 --batch 1,2,4,8,16,32,64 --precision fp32,bf16 \
    --mode train --optimizer adamw --steps 2 --memory-limit 32GiB --snapshots bf16 --snapshot-steps 1 --profile \
    --neutral-paths --out "$out/sweep-llama" >"$out/sweep-llama.txt" 2>"$out/sweep-llama.log" &
  CUDA_VISIBLE_DEVICES=0 "$ms" sweep --model mlp --width 4096 --depth 8 --seq 512 \
    --batch 1,2,4,8,16,32,64 --precision fp32,bf16 --mode train --optimizer adamw --memory-limit 6GiB \
    --snapshots fp32 --snapshot-steps 1 --neutral-paths --out "$out/sweep-mlp" >"$out/sweep-mlp.txt" 2>"$out/sweep-mlp.log" &
  CUDA_VISIBLE_DEVICES=0 "$ms" capture --neutral-paths --out "$out/capture-oom" -- python3 "$ex/oom_train.py" \
    >"$out/capture-oom.log" 2>&1
  echo "capture-oom exit status $?" >>"$out/capture-oom.log"
  CUDA_VISIBLE_DEVICES=0 "$ms" capture --neutral-paths --profile-steps 3-4 --out "$out/capture-train" -- \
    python3 "$ex/train.py" --steps 8 >"$out/capture-train.log" 2>&1
  echo "capture-train exit status $?" >>"$out/capture-train.log"
  wait
fi
if [ "$what" != single ]; then
  "$ms" capture --nproc 2 --neutral-paths --out "$out/capture-ddp" -- python3 "$ex/train.py" --steps 8 --uneven \
    >"$out/capture-ddp.log" 2>&1
  echo "capture-ddp exit status $?" >>"$out/capture-ddp.log"
fi
for d in "$out"/sweep-* "$out"/capture-*; do
  [ -d "$d" ] && "$ms" summary --run "$d" >"$d.summary.txt" 2>&1
done
