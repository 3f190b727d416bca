#!/usr/bin/env bash
# Every analysis command on the same snapshots, beside Python's pickle.load
# of each file, in one run: wall time, user CPU and maximum RSS, and each
# command's wall time over summary's. The machines here are shared, and a
# run can be slowed by half at any moment, so each command is run RUNS
# times (default 3) alternated with summary, and the fastest of each is
# kept: a ratio compares runs made in the same minute. pickle.load is run
# once, between two summaries. Prints a Markdown table.
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
runs=${RUNS:-3}
once() { # command...: prints wall, user and max RSS (KB)
	/usr/bin/time -o "$out/time" -f '%e %U %M' "$@" >/dev/null 2>/dev/null || true
	tail -1 "$out/time"
}
faster() { # a b: the line with the smaller wall time
	if [[ -z $1 ]] || (($(echo "${2%% *} < ${1%% *}" | bc -l))); then echo "$2"; else echo "$1"; fi
}
pair() { # command...: the fastest of $runs runs of summary and of the command, alternated
	local s="" c="" r
	for ((r = 0; r < runs; r++)); do
		s=$(faster "$s" "$(once "$ms" summary "$f")")
		c=$(faster "$c" "$(once "$@")")
	done
	echo "$s $c"
}
echo "| file | command | wall | user CPU | max RSS | summary alongside | wall ÷ summary |"
echo "|---|---|---|---|---|---|---|"
for f in "$@"; do
	size=$(du -m "$f" | cut -f1)
	row() { # name wall user rss summary-wall
		printf '| %s MB | %s | %.2f s | %.2f s | %d MB | %.2f s | %.2f |\n' "$size" "$1" "$2" "$3" $(($4 / 1024)) "$5" "$(echo "$2 / $5" | bc -l)"
	}
	read -r sw su sm _ _ _ < <(pair "$ms" summary "$f")
	row summary "$sw" "$su" "$sm" "$sw"
	for cmd in peak leaks frag oom check advise whatif; do
		read -r sw _ _ w u m < <(pair "$ms" "$cmd" "$f")
		row "$cmd" "$w" "$u" "$m" "$sw"
	done
	read -r sw _ _ w u m < <(pair "$ms" pprof -o "$out/p.pb.gz" "$f")
	row "pprof" "$w" "$u" "$m" "$sw"
	read -r sw _ _ w u m < <(pair "$ms" report -o "$out/r.html" "$f")
	row "report" "$w" "$u" "$m" "$sw"
	read -r sw _ _ w u m < <(pair "$ms" diff "$f" "$f")
	row "diff (the file with itself: two decodes)" "$w" "$u" "$m" "$sw"
	s1=$(once "$ms" summary "$f")
	read -r w u m < <(once python3 -c 'import pickle,sys; pickle.load(open(sys.argv[1],"rb"))' "$f")
	s2=$(once "$ms" summary "$f")
	read -r sw _ _ < <(faster "$s1" "$s2")
	row "python3 pickle.load (between two summaries)" "$w" "$u" "$m" "$sw"
done
