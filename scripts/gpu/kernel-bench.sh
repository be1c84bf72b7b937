#!/usr/bin/env bash
# Kernel benchmark, run on the GPU machine from the repository root:
#   scripts/gpu/kernel-bench.sh OUT_DIR
# Builds the harness from kernels/*.cu (the backend's own kernel sources) with
# nvcc, checks the kernels against a CPU reference (and _b16 bitwise against
# _n16), times them and the PyTorch baseline, runs the GDN decode benchmark
# (kernels/state.ptx against a vLLM/FLA-structured Triton kernel, gdn_bench.py)
# and writes OUT_DIR/kernel-bench.md (commit it as docs/kernel-bench.md).
set -euo pipefail
out=${1:?usage: kernel-bench.sh OUT_DIR}
mkdir -p "$out"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
tmp=$(mktemp -d)
# The GDN decode kernel as the backend builds it (kernels/state.ptx: 4 warps × 8 rows, blocks in
# launch order, no bounds checks at dk = 128; kernels.StateRecThreads, StateRecRows), and variants.
vars=()
# warps:rows[:min resident blocks, a register cap[:tags joined by +]]; tags: l0 (grid order, not
# launch order), cs (streaming loads and stores), full0 (the bounds-checked path only)
for v in ${GDN_VARIANTS:-4:4::l0+full0 4:8::full0 4:8:7 2:8 2:16 2:16:14 1:8 1:8:28}; do
	IFS=: read -r w r b tags <<<"$v"
	name=w${w}_r$r flags="-DREC_WARPS=$w -DREC_ROWS=$r"
	if [ -n "$b" ]; then name+=_b$b flags+=" -DREC_MIN_BLOCKS=$b"; fi
	for tag in ${tags//+/ }; do
		case "$tag" in
		l0) name+=_l0 flags+=" -DREC_LINEAR=0" ;;
		cs) name+=_cs flags+=" -DREC_CS=1" ;;
		full0) name+=_full0 flags+=" -DREC_FULL=0" ;;
		*) echo "kernel-bench.sh: unknown variant tag $tag in $v" >&2; exit 2 ;;
		esac
	done
	"$NVCC" -arch=sm_90 -std=c++17 -ptx $flags kernels/state.cu -o "$tmp/state_$name.ptx"
	vars+=("$tmp/state_$name.ptx:$w:$r")
done
PYTHONUNBUFFERED=1 python3 scripts/gpu/gdn_bench.py "$out/kernel-bench-gdn.json" kernels/state.ptx:4:8 "${vars[@]}"
"$NVCC" -arch=sm_90 -std=c++17 -O3 -o "$tmp/kernel_bench" scripts/gpu/kernel_bench.cu
"$tmp/kernel_bench" check
"$tmp/kernel_bench" bench "$out/kernel-bench-cuda.json"
PYTHONUNBUFFERED=1 python3 scripts/gpu/torch_baseline.py "$out/kernel-bench-torch.json"
python3 scripts/gpu/bench_report.py "$out/kernel-bench-cuda.json" "$out/kernel-bench-torch.json" \
	"$(date -u +%Y-%m-%d)" "$out/kernel-bench-gdn.json" >"$out/kernel-bench.md"
cat "$out/kernel-bench.md"
