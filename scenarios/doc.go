// Package scenarios holds the scenario format (YAML, engine knobs under
// vLLM's names), its strict loader — every unknown key, wrong type or
// out-of-range value is an error naming the file, line and field path —
// command-line overrides (--set key.path=value), and the built-in
// scenarios embedded in the binary.
package scenarios
