// Package model describes the shape of a served model: which layers are
// attention and which are Mamba, their widths and dtypes, and what that
// implies for vLLM's cache layout (KV cache groups, unified page size, the
// attention block size a hybrid model is forced to, the state stride the
// Mamba kernels index with). It does arithmetic only; no allocation of
// caches happens here.
package model
