// Package model describes the shape of a served model and what it implies
// for vLLM's cache layout: which layers are attention and which carry a
// state (Mamba1, Mamba2, ShortConv, Gated DeltaNet, linear attention, KDA),
// the state tensors per tensor-parallel rank, the KV cache groups in vLLM's
// order, the unified page and the attention block size a hybrid model is
// forced to, the stride the state kernels index with and which of them
// formed it in 32 bits. Shapes come from named presets or from a Hugging
// Face config.json (FromHFConfig).
//
// It does arithmetic only: no caches are allocated here, nothing is read
// but the bytes it is given, and nothing depends on map order.
package model
