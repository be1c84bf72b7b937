// Package testtier tells tests which tier runs: the suite under `go test`
// (and -short), or the long tier under $STATESIM_LONG (`make long`). Tests
// size their searches and workloads by it; the suite's size must still show
// what a test says it shows, the long tier draws more. MemoryTempDir keeps
// tests' temporary files off the disk; Main, a TestMain body, calls it.
package testtier
