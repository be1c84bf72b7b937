#!/usr/bin/env bash
# Regenerates kernels/*.ptx for sm_90 (run where nvcc is, e.g. the GPU machine).
set -euo pipefail
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
for src in kernels/*.cu; do
	"$NVCC" -arch=sm_90 -std=c++17 -ptx ${NVCCFLAGS:-} "$src" -o "${src%.cu}.ptx"
done
"$NVCC" --version | tail -2
