#!/usr/bin/env bash
# Runs each sweep path once on a GPU machine (two GPUs for the --nproc runs):
# a vision model in fp16-amp inference, gradient accumulation, a user
# factory (capture/examples/convnet.py), DDP and FSDP2 under torchrun.
# Usage: MEMSCOPE=path/to/memscope capture/check_sweep_paths.sh OUTDIR
set -u
out=$1; M=${MEMSCOPE:-memscope}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/capture/examples
run() { local name=$1; shift; echo "== $name: memscope sweep $*"; timeout 150 $M sweep -o $out/$name --snapshots none --steps 2 "$@" 2>&1 | tail -4; echo "rc=$?"; }
run vit-fp16-infer --model vit --precision fp16-amp --mode infer --batch 1,8
run mlp-microbatch --model mlp --width 1024 --depth 4 --precision fp32 --micro-batch 2 --batch 4,8
run factory --model convnet:factory --precision bf16,fp32 --batch 2,8
run ddp --nproc 2 --parallel ddp --model mlp --width 1024 --depth 4 --precision fp32 --batch 2,4
run fsdp --nproc 2 --parallel fsdp --model mlp --width 1024 --depth 4 --precision fp32 --batch 2,4
