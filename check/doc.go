// Package check names the invariants statesim enforces and records their
// violations: a count per invariant and the first few occurrences, each
// with the step, request id, slot and previous owner that explain it.
//
// It only records; deciding what is a violation belongs to the package
// that owns the state (the scheduler, the cache, the backends, the loop).
package check
