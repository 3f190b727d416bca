#!/usr/bin/env bash
# Remake the big-model workload fixtures (issue 28) on a GPU machine:
# make_workload_fixtures.sh OUT. Each script writes OUT/NAME/snapshot.pickle
# and truth.json; a failing one is reported and the rest still run. Needs
# torch with CUDA and NCCL, transformers, peft and timm. ONLY="name:script …"
# remakes some (a comma stands for a space in a script's arguments).
set -u
out=${1:?usage: make_workload_fixtures.sh OUT}
cd "$(dirname "$0")"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
status=0
for pair in ${ONLY:-fsdp2:fsdp2 fsdp2-oom:fsdp2,--oom lora:lora reduce-overhead:reduce_overhead \
	eval-leak:eval_leak oom-first-step:oom_first_step handwritten-adam:handwritten_adam \
	decode-loop:decode_loop nca:nca grad-accum:grad_accum one-forward:one_forward cuda-graph:cuda_graph foreach-peak:foreach_peak foreach-peak-fused:foreach_peak,--fused eval-varied:eval_varied}; do
	name=${pair%%:*} cmd=${pair#*:} cmd=${cmd//,/ }
	mkdir -p "$out/$name"
	start=$(date +%s)
	# shellcheck disable=SC2086
	if python3 ${cmd%% *}.py ${cmd#${cmd%% *}} --out "$out/$name" >"$out/$name/log.txt" 2>&1; then
		echo "$name: ok in $(( $(date +%s) - start )) s, $(du -k "$out/$name/snapshot.pickle" | cut -f1) KiB"
	else
		echo "$name: FAILED (exit $?), tail of its log:"; tail -n 15 "$out/$name/log.txt"; status=1
	fi
done
exit $status
