package infile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file of exactly the cap reads; one byte more is refused, by its size
// (a regular file) and by reading (a device or pipe).
func TestReadFileBound(t *testing.T) {
	dir := t.TempDir()
	at := filepath.Join(dir, "at")
	past := filepath.Join(dir, "past")
	os.WriteFile(at, bytes.Repeat([]byte("a"), 100), 0o644)
	os.WriteFile(past, bytes.Repeat([]byte("a"), 101), 0o644)
	if b, err := ReadFile(at, "scenario file", 100); err != nil || len(b) != 100 {
		t.Fatalf("at the bound: %d bytes, %v", len(b), err)
	}
	_, err := ReadFile(past, "scenario file", 100)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "larger than 100 bytes, the most a scenario file may hold") {
		t.Fatalf("one past the bound: %v", err)
	}
	if b, err := ReadAll(strings.NewReader(strings.Repeat("a", 100)), "pipe", "x", 100); err != nil || len(b) != 100 {
		t.Fatalf("reader at the bound: %d bytes, %v", len(b), err)
	}
	if _, err := ReadAll(strings.NewReader(strings.Repeat("a", 101)), "pipe", "x", 100); !errors.As(err, &tl) {
		t.Fatalf("reader one past the bound: %v", err)
	}
}

// /dev/zero never ends: it is read up to the cap and refused.
func TestReadFileDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := ReadFile("/dev/zero", "scenario file", 1<<16)
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("/dev/zero: %v, want a size error", err)
	}
}

func TestOpenRefusesDirectory(t *testing.T) {
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("directory: %v", err)
	}
}

// The expansion reader passes a stream within Ratio times its compressed
// size and stops one that expands further.
func TestExpansionBound(t *testing.T) {
	gz := func(data []byte) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
		return b.Bytes()
	}
	read := func(comp []byte, ratio int64) (int, error) {
		in := &Counter{R: bytes.NewReader(comp)}
		z, err := gzip.NewReader(in)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(&ExpansionReader{R: z, In: in, Ratio: ratio})
		return len(b), err
	}
	zeros := bytes.Repeat([]byte{0}, 1<<20)
	comp := gz(zeros)
	ratio := int64(len(zeros)) / int64(len(comp))
	if n, err := read(comp, ratio+1); err != nil || n != len(zeros) {
		t.Fatalf("ratio %d (the stream's is %d): %d bytes, %v", ratio+1, ratio, n, err)
	}
	if _, err := read(comp, ratio/2); !errors.Is(err, ErrExpansion) {
		t.Fatalf("ratio %d (the stream's is %d): %v, want ErrExpansion", ratio/2, ratio, err)
	}
}

// The expansion bound exactly: Ratio times the compressed bytes plus
// Slack is allowed, one byte more is not.
func TestExpansionBoundExact(t *testing.T) {
	read := func(n int) error {
		e := &ExpansionReader{R: strings.NewReader(strings.Repeat("a", n)), In: &Counter{N: 10}, Ratio: 64, Slack: 100}
		_, err := io.ReadAll(e)
		return err
	}
	if err := read(64*10 + 100); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	if err := read(64*10 + 101); !errors.Is(err, ErrExpansion) {
		t.Fatalf("one past the bound: %v", err)
	}
}
