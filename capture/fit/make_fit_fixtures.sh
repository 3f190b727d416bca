#!/usr/bin/env bash
# Make the `memscope fit` fixtures on a GPU machine: make_fit_fixtures.sh OUT.
# For each workload of fitwork.py: snapshots recorded the ordinary way at a
# few small batches (OUT/fit-W/bN/{snapshot.pickle,truth.json}, no cap), and
# for each of two per-process caps the measured frontier, every point a fresh
# process as `memscope sweep` measures it: the batch doubles from 1 until a
# run goes out of memory, then bisection closes the gap
# (OUT/fit-W/capC/bN/truth.json, OUT/fit-W/capC/frontier.txt).
set -u
out=${1:?usage: make_fit_fixtures.sh OUT}
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
MiB=$((1 << 20))
declare -A snaps=([lm]="1 2 4" [conv]="2 4 8" [gen]="1 2 4")
declare -A caps=([lm]="$((6144 * MiB)) $((12288 * MiB))" [conv]="$((4096 * MiB)) $((8192 * MiB))" [gen]="$((1536 * MiB)) $((3072 * MiB))")

point() { # point W CAP B DIR [--record]: 0 fits, 1 OOM, 2 failed
	local w=$1 cap=$2 b=$3 dir=$4
	shift 4
	mkdir -p "$dir"
	if ! python3 fitwork.py --workload "$w" --batch "$b" --cap "$cap" --out "$dir" "$@" >"$dir/log.txt" 2>&1; then
		echo "fit-$w cap $cap batch $b: FAILED"; tail -n 15 "$dir/log.txt" >&2; return 2
	fi
	if grep -q '"oom"' "$dir/truth.json"; then return 1; fi
	return 0
}

frontier() { # frontier W CAP [SETTING]: doubling, then bisection
	local w=$1 cap=$2 lo=0 hi=0 b=1 rc
	local d="$out/fit-$w/cap$((cap / MiB))MiB${3:+-$3}"
	while :; do
		point "$w" "$cap" "$b" "$d/b$b"; rc=$?
		[ $rc -eq 2 ] && return 1
		if [ $rc -eq 0 ]; then lo=$b; b=$((b * 2)); [ $b -gt 4096 ] && break; else hi=$b; break; fi
	done
	while [ $hi -gt 0 ] && [ $((hi - lo)) -gt 1 ]; do
		b=$(((lo + hi) / 2))
		point "$w" "$cap" "$b" "$d/b$b"; rc=$?
		[ $rc -eq 2 ] && return 1
		if [ $rc -eq 0 ]; then lo=$b; else hi=$b; fi
	done
	printf 'largest_fit %d\nfirst_fail %d\n' "$lo" "$hi" >"$d/frontier.txt"
	echo "fit-$w cap $(($cap / MiB)) MiB ${3:-}: largest fit $lo, first fail $hi"
}

# frontier_seq W CAP BATCH: the longest sequence (gen: prompt tokens) at
# BATCH that fits, doubling from 128 tokens, then bisection to the token.
frontier_seq() {
	local w=$1 cap=$2 batch=$3 lo=0 hi=0 L=128 rc
	local d="$out/fit-$w/seq-b$batch-cap$((cap / MiB))MiB"
	while :; do
		point "$w" "$cap" "$batch" "$d/L$L" --seq $L; rc=$?
		[ $rc -eq 2 ] && return 1
		if [ $rc -eq 0 ]; then lo=$L; L=$((L * 2)); [ $L -gt 4096 ] && break; else hi=$L; break; fi
	done
	while [ $hi -gt 0 ] && [ $((hi - lo)) -gt 1 ]; do
		L=$(((lo + hi) / 2))
		point "$w" "$cap" "$batch" "$d/L$L" --seq $L; rc=$?
		[ $rc -eq 2 ] && return 1
		if [ $rc -eq 0 ]; then lo=$L; else hi=$L; fi
	done
	printf 'largest_fit %d\nfirst_fail %d\n' "$lo" "$hi" >"$d/frontier.txt"
	echo "fit-$w batch $batch cap $((cap / MiB)) MiB: longest prompt that fits $lo, first fail $hi"
}

if [ -n "${SEQ_ONLY:-}" ]; then
	# generate() at batch 16 recorded at prompts of 128, 256 and 512 tokens,
	# and its longest prompt under a 1.5 GiB cap.
	pids=()
	for L in 128 256 512; do
		point gen 0 16 "$out/fit-gen/b16-seq$L" --record --seq $L &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	frontier_seq gen $((1536 * MiB)) 16
	exit $?
fi

status=0
pids=()
for w in ${WORKLOADS:-lm conv gen}; do
	for b in ${snaps[$w]}; do
		point "$w" 0 "$b" "$out/fit-$w/b$b" --record &
		pids+=($!)
	done
done
# lm at batch 2 over sequence lengths (fit's a + b·L + c·L²): recorded at
# 256 and 1024 (512 is fit-lm/b2), measured only at 2048.
for L in 256 1024; do
	point lm 0 2 "$out/fit-lm/seq$L" --record --seq $L &
	pids+=($!)
done
point lm 0 2 "$out/fit-lm/seq2048" --seq 2048 &
pids+=($!)
for p in "${pids[@]}"; do wait "$p"; [ $? -eq 2 ] && status=1; done
pids=()
# lm's frontier at the smaller cap under expandable segments too (--conf).
(export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; frontier lm $((6144 * MiB)) expandable) &
pids+=($!)
for w in ${WORKLOADS:-lm conv gen}; do
	for c in ${caps[$w]}; do
		frontier "$w" "$c" &
		pids+=($!)
	done
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
