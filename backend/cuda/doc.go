// Package cuda is the GPU backend: the mock backend's model (the same
// weights, drawn by the mock's Go code and uploaded) executed by statesim's
// own CUDA kernels (package kernels) over state and KV caches in device
// memory, laid out page for page as vLLM lays them out. It composes the
// symbolic backend, so stale reads are reported exactly as for the other
// backends, and compares its log-probs with the mock's reference run on the
// CPU (the reference is the spec). With backend.shadow it also runs the
// mock engine on every batch and compares the two token by token (Parity).
//
// A step is four jobs, one file each: batch.go packs the scheduled rows
// into the index arrays the kernels take (host only, pure Go, tested in the
// default build), scratch.go uploads them, layers.go launches every layer's
// kernels, sample.go computes the sampled rows' log-probs and samples.
// compare.go is the differential check (Finisher, Flusher, Differ) and
// register.go joins the backend registry as kind "cuda".
//
// The files that link gorgonia.org/cu carry the build tag cuda: it exits
// the process at start-up when no CUDA driver is present, so the default
// build, the tests and CI never link it. Build with `make cuda`.
//
// State kinds beyond Mamba1 (Mamba2, GDN, KDA, linear attention) and
// speculative decoding run on StateBackend (state.go): the mock's tiny
// stand-in with every state layer's recurrence handed to the kernels of
// kernels/state.cu (mock.StateKernels) over recurrent-state caches in
// device memory; projections, conv and attention stay on the CPU, and the
// mock engine runs in its shadow for parity.
//
// The d_state 16 decode state update is _n16 or _b16 (bitwise equal) as
// kernels.SSU16Launch chooses by size; STATESIM_SSU16=n16|b16 forces one
// (SSU16Env), so that gpu-confirm can check parity through either.
//
// It must never use managed memory, never link CUDA libraries other than
// the driver's libcuda, and never clear a cache page on free.
package cuda
