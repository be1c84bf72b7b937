#!/usr/bin/env bash
# Issue 15's speed target, measured: each prefix-caching benchmark pair
# (engine/bench_test.go, prefixPair) with caching off and on, as user CPU
# per replay, and the ratio. User CPU, not wall time: on a shared machine
# a replay's wall time counts the time other processes hold its core.
#
# Per pair and round, scripts/replay-cpu.sh's figure (1+N replays less
# 1, over N); the figure is the median of the rounds, which alternate off
# and on.
#
# usage: scripts/prefix-ratios.sh [ROUNDS [N]]   (defaults 5 and 5)
set -euo pipefail
rounds=${1:-5}
n=${2:-5}
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/engine.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" ./engine
# replay NAME: one replay's user CPU in ms, one round.
replay() { scripts/replay-cpu.sh -b "$bin" "$1" 1 "$n"; }

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
