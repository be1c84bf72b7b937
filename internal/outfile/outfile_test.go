package outfile

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteAtomic replaces a file whole, creates its directory, and leaves no
// temp file behind; a path under a file fails without writing.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "check.json")
	for _, data := range []string{"first", "second"} {
		if err := WriteAtomic(p, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != data {
			t.Fatalf("read %q, %v; want %q", b, err, data)
		}
	}
	if es, _ := os.ReadDir(filepath.Dir(p)); len(es) != 1 {
		t.Errorf("directory holds %d entries, want only check.json", len(es))
	}
	if err := WriteAtomic(filepath.Join(p, "x"), []byte("x")); err == nil {
		t.Error("writing under a file: no error")
	}
}
