// Package gpuconfirm runs the experiments that confirm the simulator's
// predictions on a real GPU and writes gpu-confirmation.{md,json}:
//
//   - parity: built-in scenarios on the tiny hybrid under vLLM `fixed` with
//     a 64-bit state index, the CUDA backend's log-probs against the mock's
//     CPU reference and against the mock engine run in the shadow;
//   - bug A: the imposter workload under v0.13, where the GPU and the mock
//     must flag the same divergent requests, every imposter among them;
//   - bug B: selective_scan_fwd at Jamba Reasoning 3B's state size on a slot
//     past the 32-bit wrap, read back where statecache.StateIndex.Span says
//     the state lands.
//
// It reads runs only through engine.Run's report (report.Divergence and
// report.Extra["cuda"]), never the backend's internals. The experiments
// link gorgonia.org/cu and carry the build tag cuda (`make cuda`, then
// `make confirm` on a GPU machine); the report's types, verdicts and
// rendering are pure Go, tested in the default build against the
// committed docs/gpu-confirmation.json.
package gpuconfirm
