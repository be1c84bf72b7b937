// Package scenarios holds the scenario format (YAML, engine knobs under
// vLLM's names), its strict loader — every unknown key, wrong type or
// out-of-range value is an error naming the file, line and field path —
// command-line overrides (--set key.path=value), and the built-in
// scenarios embedded in the binary.
//
// It checks each field on its own; the rules across fields (the release
// and its patches, the Mamba cache mode, speculative decoding, the pool)
// are package setup's, which settles a scenario once into what a run
// reads, locating its errors through Source.
package scenarios
