#!/usr/bin/env bash
# Every analysis command on the same snapshots, beside Python's pickle.load
# of each file, in one run: wall time, user CPU and maximum RSS, and each
# command's wall time over summary's. Prints a Markdown table.
#
#   go build -o /tmp/memscope ./cmd/memscope
#   bash internal/benchfit/commands.sh /tmp/memscope FILE...
#
# The files are usually made with gensnap, e.g.
#   go run ./snapshot/internal/gensnap -o /tmp/s70.pickle -size 70MB -from fixtures/plain-trainer-late/snapshot.pickle
set -euo pipefail
ms=$1
shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
measure() { # command...: prints wall, user and max RSS (KB)
	/usr/bin/time -o "$out/time" -f '%e %U %M' "$@" >/dev/null 2>/dev/null || true
	tail -1 "$out/time"
}
echo "| file | command | wall | user CPU | max RSS | wall ÷ summary |"
echo "|---|---|---|---|---|---|"
for f in "$@"; do
	size=$(du -m "$f" | cut -f1)
	read -r sw su sm < <(measure "$ms" summary "$f")
	row() { # name wall user rss
		printf '| %s MB | %s | %.2f s | %.2f s | %d MB | %.2f |\n' "$size" "$1" "$2" "$3" $(($4 / 1024)) "$(echo "$2 / $sw" | bc -l)"
	}
	row summary "$sw" "$su" "$sm"
	for cmd in peak leaks frag oom check; do
		read -r w u m < <(measure "$ms" "$cmd" "$f")
		row "$cmd" "$w" "$u" "$m"
	done
	read -r w u m < <(measure "$ms" pprof -o "$out/p.pb.gz" "$f")
	row "pprof" "$w" "$u" "$m"
	read -r w u m < <(measure "$ms" report -o "$out/r.html" "$f")
	row "report" "$w" "$u" "$m"
	read -r w u m < <(measure "$ms" diff "$f" "$f")
	row "diff (the file with itself: two decodes)" "$w" "$u" "$m"
	read -r w u m < <(measure python3 -c 'import pickle,sys; pickle.load(open(sys.argv[1],"rb"))' "$f")
	row "python3 pickle.load" "$w" "$u" "$m"
done
