#!/usr/bin/env bash
# Run one what-if workload N more times per allocator setting, each in a
# fresh process as make_whatif_fixtures.sh does: repeat.sh OUT WORKLOAD N
# writes OUT/whatif-WORKLOAD/repeats/SETTING-K/{snapshot.pickle,truth.json}
# (K = 1..N). Torch's own run-to-run spread under one setting.
set -u
out=${1:?usage: repeat.sh OUT WORKLOAD N} w=${2:?workload} n=${3:?count}
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
. ./settings.sh
status=0
for k in $(seq 1 "$n"); do
	for s in "${settings[@]}"; do
		name=${s%%=*} conf=${s#*=}
		dir="$out/whatif-$w/repeats/$name-$k"
		mkdir -p "$dir"
		if PYTORCH_CUDA_ALLOC_CONF="$conf" python3 workloads.py --workload "$w" --out "$dir" >"$dir/log.txt" 2>&1; then
			echo "whatif-$w/repeats/$name-$k: ok"
		else
			echo "whatif-$w/repeats/$name-$k: FAILED (exit $?)"; tail -n 15 "$dir/log.txt"; status=1
		fi
	done
done
exit $status
