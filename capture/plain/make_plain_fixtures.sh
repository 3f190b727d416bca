#!/usr/bin/env bash
# Remake the plain fixtures (snapshots made without memscope's harness) on a
# GPU machine: make_plain_fixtures.sh OUT. Each script writes
# OUT/NAME/snapshot.pickle and truth.json; a failing one is reported and the
# rest still run. Needs torch with CUDA; transformers, lightning and timm for
# three of them.
set -u
out=${1:?usage: make_plain_fixtures.sh OUT}
cd "$(dirname "$0")"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
status=0
for pair in plain-sgd-leak:sgd_leak plain-adamw-fused:adamw_fused plain-leak-graph:leak_graph \
	plain-compiled:compiled plain-checkpointed:checkpointed plain-inference:inference \
	plain-trainer-late:trainer_late plain-lightning:lightning_loop plain-oom:oom; do
	name=${pair%%:*} script=${pair#*:}
	mkdir -p "$out/$name"
	start=$(date +%s)
	if python3 "$script.py" --out "$out/$name" >"$out/$name/log.txt" 2>&1; then
		echo "$name: ok in $(( $(date +%s) - start )) s, $(du -k "$out/$name/snapshot.pickle" | cut -f1) KiB"
	else
		echo "$name: FAILED (exit $?), tail of its log:"; tail -n 15 "$out/$name/log.txt"; status=1
	fi
done
exit $status
