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
for w in varlen fragoom sidestream; do
	for s in "${settings[@]}"; do
		name=${s%%=*} conf=${s#*=}
		dir="$out/whatif-$w/$name"
		mkdir -p "$dir"
		if PYTORCH_CUDA_ALLOC_CONF="$conf" python3 workloads.py --workload "$w" --out "$dir" >"$dir/log.txt" 2>&1; then
			echo "whatif-$w/$name: ok, $(du -k "$dir/snapshot.pickle" | cut -f1) KiB"
		else
			echo "whatif-$w/$name: FAILED (exit $?)"; tail -n 15 "$dir/log.txt"; status=1
		fi
	done
done
exit $status
