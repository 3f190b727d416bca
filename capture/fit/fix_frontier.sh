#!/usr/bin/env bash
# Measure fit-lm's frontier with advise's chunked cross-entropy applied, on
# a GPU machine: fix_frontier.sh OUT. The lm workload of fitwork.py with
# --loss chunked (8 chunks), every batch from FROM to TO under each cap and
# the batches UNCAPPED with no cap, each in a fresh process (PARALLEL at a
# time, each under its own per-process cap), no recording:
# OUT/fix-chunked/capC/bN/truth.json, OUT/fix-chunked/uncapped/bN/truth.json
# and OUT/fix-chunked/capC/frontier.txt (the largest batch from FROM on
# with every batch up to it fitting, and the first that fails). What
# `memscope fit --advise` predicts for the fix is held against it
# (fit.TestFixesAlongTheCurve).
set -u
out=${1:?usage: fix_frontier.sh OUT}
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
FROM=${FROM:-24} TO=${TO:-56} PARALLEL=${PARALLEL:-4}
CAPS=${CAPS:-"12288 13312"} UNCAPPED=${UNCAPPED:-"1 2 4 8 16"}
{
	for b in $UNCAPPED; do echo "0 $b"; done
	for c in $CAPS; do for b in $(seq "$FROM" "$TO"); do echo "$c $b"; done; done
} | xargs -P "$PARALLEL" -n 2 sh -c '
	if [ "$1" = 0 ]; then d="$0/fix-chunked/uncapped/b$2"; else d="$0/fix-chunked/cap$1MiB/b$2"; fi
	mkdir -p "$d"
	python3 fitwork.py --workload lm --loss chunked --batch "$2" --cap $(($1 * 1048576)) --out "$d" >"$d/log.txt" 2>&1 || { echo "cap $1 MiB batch $2: FAILED"; tail -n 15 "$d/log.txt"; }
' "$out"
for c in $CAPS; do
	d="$out/fix-chunked/cap${c}MiB" lo=0 hi=0
	for b in $(seq "$FROM" "$TO"); do
		if [ ! -f "$d/b$b/truth.json" ] || grep -q '"oom"' "$d/b$b/truth.json"; then hi=$b; break; fi
		lo=$b
	done
	printf 'largest_fit %d\nfirst_fail %d\n' "$lo" "$hi" >"$d/frontier.txt"
	echo "fix-chunked cap $c MiB: every batch $FROM..$lo fits, $hi fails"
done
