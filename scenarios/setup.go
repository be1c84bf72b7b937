package scenarios

// DefaultMaxMemoryGiB is checks.max_memory_gib's default: what a run may
// allocate on a 24 GiB machine with room left for the OS and a second run.
const DefaultMaxMemoryGiB = 16

// NumericBackend says whether a backend kind holds the cache contents in
// host memory (the mock's tensors; cuda keeps a host shadow of the same
// size for its comparison).
func NumericBackend(kind string) bool { return kind == "mock" || kind == "cuda" }
