package testtier

import (
	"os"
	"syscall"
)

// shmMinFree is the free space /dev/shm must have before tests use it: a
// container's default /dev/shm is 64 MiB, and a suite that fills it fails
// with ENOSPC where the disk would have had room.
const shmMinFree = 1 << 30

// MemoryTempDir points $TMPDIR, when it is unset, at /dev/shm if that is
// a directory the test can write with at least 1 GiB free, so that
// t.TempDir's files (traces, plots, sweep cells, a search's thousands of
// request files) stay in memory. Main calls it first. On some disks each
// file creation costs a millisecond of system time: prop's tests spent
// 1.2 s of system time on the disk, 0.1 s in /dev/shm.
func MemoryTempDir() {
	const shm = "/dev/shm"
	if os.Getenv("TMPDIR") != "" {
		return
	}
	var st syscall.Statfs_t
	if syscall.Statfs(shm, &st) != nil || st.Bavail*uint64(st.Bsize) < shmMinFree {
		return
	}
	d, err := os.MkdirTemp(shm, "statesim-probe-")
	if err != nil {
		return
	}
	os.Remove(d)
	os.Setenv("TMPDIR", shm)
}
