package testtier

import (
	"os"
	"testing"
)

func TestSized(t *testing.T) {
	t.Setenv("STATESIM_LONG", "")
	if Long() || Sized(1, 2) != 1 {
		t.Fatalf("without $STATESIM_LONG: Long %v, Sized(1, 2) = %d", Long(), Sized(1, 2))
	}
	t.Setenv("STATESIM_LONG", "1")
	want := 2
	if testing.Short() {
		want = 1
	}
	if Sized(1, 2) != want {
		t.Fatalf("with $STATESIM_LONG (short %v): Sized(1, 2) = %d, want %d", testing.Short(), Sized(1, 2), want)
	}
}

func TestMemoryTempDir(t *testing.T) {
	t.Setenv("TMPDIR", "/somewhere/else")
	MemoryTempDir()
	if got := os.Getenv("TMPDIR"); got != "/somewhere/else" {
		t.Fatalf("a set $TMPDIR was replaced by %q", got)
	}
	t.Setenv("TMPDIR", "")
	os.Unsetenv("TMPDIR")
	MemoryTempDir()
	// Usable: writable with 1 GiB free (a container's 64 MiB /dev/shm is
	// writable yet left alone).
	if d := os.TempDir(); (d == shm) != shmUsable() {
		t.Fatalf("the temporary directory is %q, /dev/shm usable: %v", d, shmUsable())
	}
}
