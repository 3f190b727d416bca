#!/usr/bin/env bash
# Run workload fixtures' scripts again under other allocator settings, each
# in a fresh process with PYTORCH_CUDA_ALLOC_CONF set before CUDA starts,
# for torch's own outcome of what memscope's what-ifs and OOM post-mortems
# simulate from the default-settings fixture: settings_truth.sh OUT writes
# OUT/NAME/SETTING/truth.json (and the snapshot, log.txt). ONLY="name:script …"
# as in make_workload_fixtures.sh; the fsdp2 ones run one at a time (one
# NCCL port each), the rest three at a time.
set -u
out=${1:?usage: settings_truth.sh OUT}
cd "$(dirname "$0")"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
settings=("expandable=expandable_segments:True" "maxsplit128=max_split_size_mb:128" "pow2div4=roundup_power2_divisions:4")
status=0
one() {
	local name=$1 cmd=$2 sname=$3 conf=$4 dir="$out/$1/$3"
	mkdir -p "$dir"
	# shellcheck disable=SC2086
	if PYTORCH_CUDA_ALLOC_CONF="$conf" python3 ${cmd%% *}.py ${cmd#${cmd%% *}} --out "$dir" >"$dir/log.txt" 2>&1; then
		echo "$name/$sname: ok"
	else
		echo "$name/$sname: FAILED (exit $?)"; tail -n 8 "$dir/log.txt"; return 1
	fi
}
for pair in ${ONLY:-fsdp2-oom:fsdp2,--oom oom-first-step:oom_first_step lora:lora decode-loop:decode_loop}; do
	name=${pair%%:*} cmd=${pair#*:} cmd=${cmd//,/ }
	pids=()
	for s in "${settings[@]}"; do
		if [[ $cmd == fsdp2* ]]; then
			one "$name" "$cmd" "${s%%=*}" "${s#*=}" || status=1
		else
			one "$name" "$cmd" "${s%%=*}" "${s#*=}" &
			pids+=($!)
		fi
	done
	for p in "${pids[@]}"; do wait "$p" || status=1; done
done
exit $status
