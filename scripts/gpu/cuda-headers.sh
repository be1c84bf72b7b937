#!/usr/bin/env bash
# Extracts the CUDA headers and the libcuda link stub that `make cuda` needs
# from Debian's non-free nvidia-cuda-dev package into DEST (default .cuda),
# downloading the package with apt-get when no copy is in $CUDA_DEB_DIR.
# Needs the non-free component in the apt sources (see GPU.md, step 2).
set -euo pipefail
dest=${1:-.cuda}
deb=$(ls "${CUDA_DEB_DIR:-/tmp/cudadl}"/nvidia-cuda-dev_*.deb 2>/dev/null | head -1 || true)
if [ -z "$deb" ]; then
	if ! apt-cache show nvidia-cuda-dev >/dev/null 2>&1; then
		echo "nvidia-cuda-dev is not in the apt sources: add Debian's contrib/non-free components and run apt-get update (GPU.md step 2)" >&2
		exit 2
	fi
	dl=$(mktemp -d)
	(cd "$dl" && apt-get download nvidia-cuda-dev)
	deb=$(ls "$dl"/nvidia-cuda-dev_*.deb)
fi
mkdir -p "$dest"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dest" ./usr/include ./usr/lib/x86_64-linux-gnu/stubs/libcuda.so
echo "CUDA headers and link stub in $dest"
