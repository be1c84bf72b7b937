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
# The GDN decode kernel as the backend builds it (4 warps × 4 rows: kernels.StateRecThreads,
# StateRecRows), and launch-geometry variants.
vars=()
# warps:rows[:min resident blocks, a register cap[:l1 (blocks in launch order) or cs (streaming)]]
for v in ${GDN_VARIANTS:-4:4::l1 4:8 4:8::l1 2:8::l1 1:8 1:8::l1 1:8:32::l1 2:8:16::l1 1:16::l1 2:16::l1 4:8::cs 1:8::cs}; do
	IFS=: read -r w r b tag <<<"$v"
	name=w${w}_r$r flags="-DREC_WARPS=$w -DREC_ROWS=$r"
	if [ -n "$b" ]; then name+=_b$b flags+=" -DREC_MIN_BLOCKS=$b"; fi
	case "$tag" in
	l1) name+=_l1 flags+=" -DREC_LINEAR=1" ;;
	cs) name+=_cs flags+=" -DREC_CS=1" ;;
	esac
	"$NVCC" -arch=sm_90 -std=c++17 -ptx $flags kernels/state.cu -o "$tmp/state_$name.ptx"
	vars+=("$tmp/state_$name.ptx:$w:$r")
done
PYTHONUNBUFFERED=1 python3 scripts/gpu/gdn_bench.py "$out/kernel-bench-gdn.json" kernels/state.ptx:4:4 "${vars[@]}"
"$NVCC" -arch=sm_90 -std=c++17 -O3 -o "$tmp/kernel_bench" scripts/gpu/kernel_bench.cu
"$tmp/kernel_bench" check
"$tmp/kernel_bench" bench "$out/kernel-bench-cuda.json"
PYTHONUNBUFFERED=1 python3 scripts/gpu/torch_baseline.py "$out/kernel-bench-torch.json"
python3 scripts/gpu/bench_report.py "$out/kernel-bench-cuda.json" "$out/kernel-bench-torch.json" \
	"$(date -u +%Y-%m-%d)" "$out/kernel-bench-gdn.json" >"$out/kernel-bench.md"
cat "$out/kernel-bench.md"
