#!/usr/bin/env bash
# Regenerates the GPU fixtures under fixtures/ (needs a CUDA GPU, torch and
# transformers). Usage: capture/make_fixtures.sh OUTDIR [NAME...]
# With NAMEs, only those fixtures are made.
# Each scenario runs in a fresh process, so allocator state never carries over.
set -u
out=${1:?usage: make_fixtures.sh OUTDIR [NAME...]}
shift
only=" $* "
h="$(dirname "$0")/harness.py"
py=${PYTHON:-python3}
run() { # name, env, args...
  local name=$1 env=$2; shift 2
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || return 0
  echo "== $name: env $env $py $h scenario $* --out $out/$name --neutral-paths"
  env ${env:+"$env"} "$py" "$h" scenario "$@" --out "$out/$name" --neutral-paths || echo "!! $name failed: $?"
}
run mlp-adamw   ""                                        mlp-adamw
run llama-bf16  ""                                        llama-bf16
run llama-profiled ""                                      llama-profiled
run llama-ckpt  ""                                        llama-bf16 --checkpointing 1 --layers 4 --seq 1024 --steps 2
run llama-wide  ""                                        llama-bf16 --hidden 1024 --intermediate 2816 --layers 4 --heads 8 --kv-heads 4 --seq 1024 --batch 4 --vocab 32000 --steps 2
run leak        ""                                        leak
run expandable  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True mlp-adamw
run oom         ""                                        oom
run stacks-all  ""                                        mlp-adamw --stacks all --width 256 --depth 2 --batch 64 --steps 2
