package trace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"statesim/internal/infile"
)

func writeGz(t *testing.T, path string, data []byte) {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A gzipped real trace reads whole; rows that expand past MaxGzipRatio
// times their compressed size (a few KiB of gzip standing for gigabytes of
// rows) are refused with the file and line.
func TestGzipExpansionBound(t *testing.T) {
	defer func(n int64) { gzipSlack = n }(gzipSlack)
	gzipSlack = 4 << 10
	dir := t.TempDir()
	real, err := os.ReadFile(sharedTrace)
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "azure.csv.gz")
	writeGz(t, good, real)
	r, c, err := Open(good, Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readAll(r)
	c.Close()
	if err != nil || len(recs) < 19000 {
		t.Fatalf("real trace gzipped: %d records, %v", len(recs), err)
	}
	bomb := filepath.Join(dir, "bomb.csv.gz")
	writeGz(t, bomb, append([]byte(header), bytes.Repeat([]byte("2023-11-16 18:15:46.6805900,374,44\n"), 200000)...))
	r, c, err = Open(bomb, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = readAll(r)
	if !errors.Is(err, infile.ErrExpansion) || !strings.Contains(err.Error(), bomb) {
		t.Fatalf("gzip bomb: %v, want an expansion error naming the file", err)
	}
}

// A line of exactly maxLine bytes is read; one byte more is refused.
func TestLineBound(t *testing.T) {
	at := strings.Repeat("a", maxLine)
	l := newLines(strings.NewReader(at + "\n" + at + "a\n"))
	if b, err := l.next(); err != nil || len(b) != maxLine {
		t.Fatalf("at the bound: %d bytes, %v", len(b), err)
	}
	if _, err := l.next(); !errors.Is(err, errLong) {
		t.Fatalf("one past the bound: %v", err)
	}
}

// A hash_field the first record does not have is a misspelt key: refused
// with the record's keys, instead of a trace that shares no prefix.
func TestMisspeltHashField(t *testing.T) {
	data := `{"timestamp": 0, "input_length": 600, "output_length": 3, "hash_ids": [1, 2]}` + "\n"
	read := func(field string) error {
		r, err := NewJSONL(strings.NewReader(data), "m.jsonl", Options{Format: "mooncake", HashField: field})
		if err != nil {
			t.Fatal(err)
		}
		_, err = readAll(r)
		return err
	}
	if err := read("hash_ids"); err != nil {
		t.Fatalf("hash_ids: %v", err)
	}
	err := read("hash_id")
	if err == nil || !strings.Contains(err.Error(), "m.jsonl:1: field hash_id: not in the first record (its keys: hash_ids, input_length, output_length, timestamp)") {
		t.Fatalf("misspelt: %v", err)
	}
}
