//go:build !linux

package testtier

// shmUsable is false where there is no /dev/shm.
func shmUsable() bool { return false }
