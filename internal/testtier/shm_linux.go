package testtier

import (
	"os"
	"syscall"
)

// shmMinFree is the free space /dev/shm must have before tests use it: a
// container's default /dev/shm is 64 MiB, and a suite that fills it fails
// with ENOSPC where the disk would have had room.
const shmMinFree = 1 << 30

// shmUsable says whether /dev/shm is a directory the test can write with
// at least shmMinFree free.
func shmUsable() bool {
	var st syscall.Statfs_t
	if syscall.Statfs(shm, &st) != nil || st.Bavail*uint64(st.Bsize) < shmMinFree {
		return false
	}
	d, err := os.MkdirTemp(shm, "statesim-probe-")
	if err != nil {
		return false
	}
	os.Remove(d)
	return true
}
