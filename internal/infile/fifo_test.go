//go:build linux

package infile

import (
	"path/filepath"
	"syscall"
	"testing"
)

// A named pipe nobody writes to reads as empty at once instead of
// blocking in open(2) forever.
func TestFIFOWithoutWriterDoesNotHang(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip(err)
	}
	b, err := ReadFile(p, "scenario file", 100)
	if err != nil || len(b) != 0 {
		t.Fatalf("FIFO without a writer: %q, %v; want empty", b, err)
	}
}
