#!/usr/bin/env bash
# Make the advise fixtures on a GPU machine: make_advise_fixtures.sh OUT.
# train.py once per fix and infer.py once per cache, each in a fresh
# process, into OUT/advise-NAME/{snapshot.pickle,truth.json}.
set -u
out=${1:?usage: make_advise_fixtures.sh OUT}
cd "$(dirname "$0")"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
status=0
run() { # name command...
	name=$1; shift
	mkdir -p "$out/$name"
	if "$@" --out "$out/$name" >"$out/$name/log.txt" 2>&1; then
		echo "$name: ok, $(du -k "$out/$name/snapshot.pickle" | cut -f1) KiB"
	else
		echo "$name: FAILED (exit $?)"; tail -n 20 "$out/$name/log.txt"; status=1
	fi
}
for fix in none checkpointing chunked-loss bf16-moments micro-batch; do
	run "advise-train-$fix" python3 train.py --fix "$fix"
done
for cache in dynamic static; do
	run "advise-infer-$cache" python3 infer.py --cache "$cache"
done
exit $status
