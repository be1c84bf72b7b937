package testtier

import (
	"os"
	"testing"
)

// Long reports whether the long tier runs: $STATESIM_LONG set and -short
// not given. Call it from a test, after flags are parsed.
func Long() bool {
	return os.Getenv("STATESIM_LONG") != "" && !testing.Short()
}

// Sized is a test's size: suite in the suite, long in the long tier.
func Sized(suite, long int) int {
	if Long() {
		return long
	}
	return suite
}

// MemoryTempDir points $TMPDIR, when it is unset, at /dev/shm if that is
// a directory the test can write, so that t.TempDir's files (traces,
// plots, sweep cells, a search's thousands of request files) stay in
// memory. Call it from TestMain. On some disks each file creation costs
// a millisecond of system time: prop's tests spent 1.2 s of system time
// on the disk, 0.1 s in /dev/shm.
func MemoryTempDir() {
	const shm = "/dev/shm"
	if os.Getenv("TMPDIR") != "" {
		return
	}
	d, err := os.MkdirTemp(shm, "statesim-probe-")
	if err != nil {
		return
	}
	os.Remove(d)
	os.Setenv("TMPDIR", shm)
}
