#!/usr/bin/env bash
# Make the what-if fixtures on a GPU machine: make_whatif_fixtures.sh OUT.
# Every workload of workloads.py runs once per allocator setting, each in a
# fresh process with PYTORCH_CUDA_ALLOC_CONF set before CUDA starts, into
# OUT/whatif-WORKLOAD/SETTING/{snapshot.pickle,truth.json}.
set -u
out=${1:?usage: make_whatif_fixtures.sh OUT}
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
. ./settings.sh
status=0
# WORKLOADS="servefull servelate" remakes some; PARALLEL=N runs N settings
# of a workload at once (each process has its own allocator and cap).
run() {
	local w=$1 name=$2 conf=$3 dir="$out/whatif-$1/$2"
	mkdir -p "$dir"
	if PYTORCH_CUDA_ALLOC_CONF="$conf" python3 workloads.py --workload "$w" --out "$dir" >"$dir/log.txt" 2>&1; then
		echo "whatif-$w/$name: ok, $(du -k "$dir/snapshot.pickle" | cut -f1) KiB"
	else
		echo "whatif-$w/$name: FAILED (exit $?)"; tail -n 15 "$dir/log.txt"; return 1
	fi
}
for w in ${WORKLOADS:-varlen fragoom sidestream servefull servelate servewrap}; do
	pids=()
	for s in "${settings[@]}"; do
		run "$w" "${s%%=*}" "${s#*=}" &
		pids+=($!)
		if [ "${#pids[@]}" -ge "${PARALLEL:-1}" ]; then
			wait "${pids[0]}" || status=1
			pids=("${pids[@]:1}")
		fi
	done
	for p in "${pids[@]}"; do wait "$p" || status=1; done
done
exit $status
