// Package kernels holds the CUDA C sources of the cuda backend's kernels
// (Mamba1 conv and scan, attention and the dense layers), their PTX for
// sm_90 compiled by `make ptx`, and the list of entry points the backend
// loads. The PTX is committed and embedded so that a binary built without
// nvcc runs on any GPU machine; a pure-Go test checks that it declares
// every kernel listed here.
//
// This package must stay free of cgo and build tags: CI imports it.
package kernels
