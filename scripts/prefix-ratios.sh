#!/usr/bin/env bash
# Issue 15's speed target, measured: each prefix-caching benchmark pair
# (engine/bench_test.go, prefixPair) with caching off and on, as user CPU
# per replay, and the ratio. User CPU, not wall time: on a shared machine
# a replay's wall time counts the time other processes hold its core.
#
# Per pair and round: the benchmark binary runs 1 replay and then 1+N
# replays; (U(1+N) - U(1)) / N is one replay's user CPU with the scenario
# load and the process start taken out. The figure is the median of the
# rounds; rounds alternate off and on.
#
# usage: scripts/prefix-ratios.sh [ROUNDS [N]]   (defaults 5 and 5)
set -euo pipefail
rounds=${1:-5}
n=${2:-5}
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/engine.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" ./engine
cd engine

# ucpu NAME K: user CPU seconds of K replays of BenchmarkNAME and one load.
ucpu() {
	{ /usr/bin/time -f '%U' "$bin" -test.run '^$' -test.bench "^Benchmark$1\$" -test.benchtime "$2x" >/dev/null; } 2>&1 | tail -1
}

# replay NAME: one replay's user CPU in ms, one round.
replay() {
	local one more
	one=$(ucpu "$1" 1)
	more=$(ucpu "$1" $((n + 1)))
	awk -v a="$one" -v b="$more" -v n="$n" 'BEGIN { printf "%.0f\n", (b - a) / n * 1000 }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-32s %8s %8s %7s\n' pair "off ms" "on ms" "on/off"
for pair in AzureConvAttention:AzureConvPrefixCaching Mooncake:MooncakePrefixCaching \
	AzureConvHybrid:AzureConvHybridPrefixCaching MooncakeHybrid:MooncakeHybridPrefixCaching \
	AzureConvHybridAlign:AzureConvHybridAlignPrefixCaching MooncakeHybridAlign:MooncakeHybridAlignPrefixCaching \
	Rollouts:RolloutsPrefixCaching Sessions:SessionsPrefixCaching; do
	off=${pair%%:*} on=${pair##*:}
	offs=() ons=()
	for _ in $(seq "$rounds"); do
		offs+=("$(replay "Replay$off")")
		ons+=("$(replay "Replay$on")")
	done
	o=$(printf '%s\n' "${offs[@]}" | median)
	c=$(printf '%s\n' "${ons[@]}" | median)
	printf '%-32s %8s %8s %7s\n' "$off" "$o" "$c" "$(awk -v o="$o" -v c="$c" 'BEGIN { printf "%.2f", c / o }')"
done
