package plot

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

// A --trace line of MaxTraceLine bytes is read; one byte more is refused
// with the bound named, not buffered.
func TestTraceLineBound(t *testing.T) {
	defer func(n int) { MaxTraceLine = n }(MaxTraceLine)
	line := `{"v":2,"step":1,"start_ns":0,"end_ns":5,"preempted":[],"rows":[]}`
	MaxTraceLine = len(line)
	if _, err := ReadTrace(strings.NewReader(line+"\n"), "at"); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	MaxTraceLine--
	if _, err := ReadTrace(strings.NewReader(line+"\n"), "past"); err == nil || !strings.Contains(err.Error(), "the most a --trace line may hold") {
		t.Fatalf("one past the bound: %v", err)
	}
}

// A gzipped trace is named as such, not as an invalid JSON character.
func TestTraceGzipNamed(t *testing.T) {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(`{"v":2,"step":1}` + "\n"))
	w.Close()
	if _, err := ReadTrace(&b, "gz"); err == nil || !strings.Contains(err.Error(), "gzip-compressed") {
		t.Fatalf("gzipped trace: %v", err)
	}
}
