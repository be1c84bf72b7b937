#!/usr/bin/env bash
# Wall time and peak RSS of the replay benchmarks, as medians of several
# runs of the built binary under GNU time (peak RSS is the whole process,
# Go runtime included). Usage: scripts/bench-rss.sh [RUNS]  (default 5)
# Quote medians from a quiet machine: other load inflates wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
TIME=/usr/bin/time
if ! "$TIME" -f %M true >/dev/null 2>&1; then
	echo "bench-rss: needs GNU time at $TIME (Debian: apt-get install time)" >&2
	exit 1
fi
go build -o bin/statesim ./cmd/statesim

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# bench NAME ARGS...: runs `statesim run ARGS` $runs times.
bench() {
	local name=$1 wall="" rss="" out
	shift
	for _ in $(seq "$runs"); do
		# Exit status 1 means violations were found (v0.13 finds bug A).
		out=$("$TIME" -f '%e %M' ./bin/statesim run "$@" 2>&1 >/dev/null | tail -1 || true)
		wall+="${out% *}"$'\n'
		rss+="${out#* }"$'\n'
	done
	printf '%-22s wall %6.2f s   peak RSS %6.1f MB   (median of %d)\n' "$name" \
		"$(printf '%s' "$wall" | median)" "$(printf '%s' "$rss" | median | awk '{print $1/1024}')" "$runs"
}

bench azure-conv azure-conv
bench synthetic-100k synthetic-1m --set workload.count=100000
bench synthetic-300k synthetic-1m --set workload.count=300000
bench synthetic-1m synthetic-1m
