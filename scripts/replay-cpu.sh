#!/usr/bin/env bash
# One replay benchmark's user CPU per replay, in ms: the benchmark binary
# (engine/bench_test.go) runs 1 replay and then 1+N replays, and
# (U(1+N) - U(1)) / N is one replay's user CPU with the scenario load and
# the process start taken out. User CPU, not wall time: on a shared
# machine a replay's wall time counts the time other processes hold its
# core. Prints each round's figure, then the median.
#
# usage: scripts/replay-cpu.sh [-b ENGINE_TEST_BINARY] NAME [ROUNDS [N]]
#   e.g. scripts/replay-cpu.sh ReplayAzureConv 5 3
set -euo pipefail
bin=
if [ "${1:-}" = -b ]; then
	bin=$2
	shift 2
fi
name=${1:?usage: scripts/replay-cpu.sh [-b BIN] NAME [ROUNDS [N]]}
rounds=${2:-5}
n=${3:-5}
cd "$(dirname "$0")/.."
if [ -z "$bin" ]; then
	bin=$(mktemp -d)/engine.test
	trap 'rm -rf "$(dirname "$bin")"' EXIT
	go test -c -o "$bin" ./engine
fi
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac
cd engine

ucpu() {
	{ /usr/bin/time -f '%U' "$bin" -test.run '^$' -test.bench "^Benchmark$name\$" -test.benchtime "$1x" >/dev/null; } 2>&1 | tail -1
}

v=()
for _ in $(seq "$rounds"); do
	one=$(ucpu 1)
	more=$(ucpu $((n + 1)))
	v+=("$(awk -v a="$one" -v b="$more" -v n="$n" 'BEGIN { printf "%.0f\n", (b - a) / n * 1000 }')")
done
med=$(printf '%s\n' "${v[@]}" | sort -n | awk '{ x[NR] = $1 } END { print x[int((NR + 1) / 2)] }')
if [ "$rounds" -gt 1 ]; then
	echo "$name: ${v[*]} ms" >&2
fi
echo "$med"
