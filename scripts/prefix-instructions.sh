#!/usr/bin/env bash
# Issue 15's pairs (engine/bench_test.go, prefixPair) in instructions:
# statesim's own instructions per replay with prefix caching off and on,
# and the ratio. Instruction counts do not drift with a shared host's
# speed, as user CPU does (scripts/prefix-ratios.sh), though they miss
# what cache misses cost. Needs valgrind (cachegrind); about 10 minutes.
#
# Per benchmark: the binary under cachegrind, GOMAXPROCS=1, runs 3 replays
# and then 1; (I(3) - I(1)) / 2 is one replay, the scenario load taken
# out; functions outside statesim (the Go runtime) are left out.
#
# usage: scripts/prefix-instructions.sh [PAIR...]   (default: the six cache-mode pairs)
set -euo pipefail
command -v valgrind >/dev/null || { echo "prefix-instructions.sh: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/engine.test" ./engine
cd engine

# ir NAME K: statesim's instructions in K replays of BenchmarkNAME and one load.
ir() {
	GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$dir/cg.out" \
		"$dir/engine.test" -test.run '^$' -test.bench "^Benchmark$1\$" -test.benchtime "$2x" >/dev/null 2>&1
	cg_annotate --auto=no "$dir/cg.out" | awk '/file:function/ { p = 1; next }
		p && /^ *[0-9,]+ \(/ { n = $1; gsub(",", "", n); if ($NF ~ /statesim\//) s += n } END { print s }'
}

# replay NAME: one replay's instructions, in G.
replay() {
	local one three
	three=$(ir "$1" 3)
	one=$(ir "$1" 1)
	awk -v a="$one" -v b="$three" 'BEGIN { printf "%.3f\n", (b - a) / 2e9 }'
}

pairs=("$@")
if [ ${#pairs[@]} -eq 0 ]; then
	pairs=(AzureConvAttention:AzureConvPrefixCaching Mooncake:MooncakePrefixCaching
		AzureConvHybrid:AzureConvHybridPrefixCaching MooncakeHybrid:MooncakeHybridPrefixCaching
		AzureConvHybridAlign:AzureConvHybridAlignPrefixCaching MooncakeHybridAlign:MooncakeHybridAlignPrefixCaching)
fi
printf '%-32s %8s %8s %7s\n' pair "off G" "on G" "on/off"
for pair in "${pairs[@]}"; do
	off=${pair%%:*} on=${pair##*:}
	o=$(replay "Replay$off")
	c=$(replay "Replay$on")
	printf '%-32s %8s %8s %7s\n' "$off" "$o" "$c" "$(awk -v o="$o" -v c="$c" 'BEGIN { printf "%.2f", c / o }')"
done
