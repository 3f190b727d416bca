#!/usr/bin/env bash
# Remake the quirk fixtures (issue 28's smaller items) on a GPU machine:
# make_quirk_fixtures.sh OUT writes OUT/NAME/{snapshot.pickle,truth.json,log.txt}
# for each scenario of quirks.py; a failing one is reported and the rest run.
set -u
out=${1:?usage: make_quirk_fixtures.sh OUT}
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
status=0
for name in ${ONLY:-legacy-one-entry late-peak state-only stacks-all}; do
	mkdir -p "$out/$name"
	start=$(date +%s)
	if python3 quirks.py "$name" --out "$out/$name" >"$out/$name/log.txt" 2>&1; then
		echo "$name: ok in $(( $(date +%s) - start )) s, $(du -k "$out/$name/snapshot.pickle" | cut -f1) KiB"
	else
		echo "$name: FAILED (exit $?), tail of its log:"; tail -n 15 "$out/$name/log.txt"; status=1
	fi
done
exit $status
