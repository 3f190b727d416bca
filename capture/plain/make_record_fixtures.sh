#!/usr/bin/env bash
# Make the memscope.record fixtures on a GPU machine:
# make_record_fixtures.sh OUT writes OUT/plain-record and OUT/plain-record-oom.
set -u
out=${1:?usage: make_record_fixtures.sh OUT}
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
status=0
for pair in plain-record: plain-record-oom:--oom; do
	name=${pair%%:*} flag=${pair#*:}
	mkdir -p "$out/$name"
	if python3 record_api.py --out "$out/$name" $flag >"$out/$name/log.txt" 2>&1; then
		echo "$name: ok, $(du -k "$out/$name/snapshot.pickle" | cut -f1) KiB"
	else
		echo "$name: FAILED (exit $?)"; tail -n 20 "$out/$name/log.txt"; status=1
	fi
done
# Under torchrun: one file per rank (snapshot.rank0.pickle, ...).
mkdir -p "$out/record-ranks"
if torchrun --standalone --nproc-per-node 2 record_api.py --out "$out/record-ranks" >"$out/record-ranks/log.txt" 2>&1; then
	# Frame paths neutral, as truthlib writes the other fixtures' (protocol 4 kept).
	python3 -c 'import pickle, sys, truthlib
rules = truthlib.neutral_rules()
for p in sys.argv[1:]:
    snap = pickle.load(open(p, "rb"))
    truthlib.harness.rewrite_snapshot_paths(snap, rules)
    pickle.dump(snap, open(p, "wb"), protocol=4)' "$out"/record-ranks/snapshot.rank*.pickle
	echo "record-ranks: ok: $(ls "$out/record-ranks")"
else
	echo "record-ranks: FAILED (exit $?)"; tail -n 20 "$out/record-ranks/log.txt"; status=1
fi
exit $status
