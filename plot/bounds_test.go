package plot

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
)

// withEnd appends the closing record run --trace writes after lines:
// their count, rows and CRC-32C, worked out here, not by the writer.
func withEnd(lines string) string {
	steps := strings.Count(lines, "\n")
	rows := strings.Count(lines, `"request_id"`)
	c := crc32.Checksum([]byte(lines), crc32.MakeTable(crc32.Castagnoli))
	return lines + fmt.Sprintf(`{"v":2,"end":{"steps":%d,"rows":%d,"crc32c":"%08x"}}`, steps, rows, c) + "\n"
}

// A trace must be whole and as written: its closing record matches the
// lines before it, steps increase, times run forward, nothing negative.
func TestTraceValidated(t *testing.T) {
	l := func(step, start, end int, slot string) string {
		return fmt.Sprintf(`{"v":2,"step":%d,"start_ns":%d,"end_ns":%d,"preempted":[],"rows":[{"request_id":0,"scheduled":3,"computed":0,"prompt":3,"path":"prefill","slots":[%s]}]}`+"\n", step, start, end, slot)
	}
	empty := func(step, at int) string {
		return fmt.Sprintf(`{"v":2,"step":%d,"start_ns":%d,"end_ns":%d,"preempted":[],"rows":[]}`+"\n", step, at, at)
	}
	// Under async scheduling a step that schedules nothing is written when
	// it is scheduled, ahead of the step in flight.
	if _, err := ReadTrace(strings.NewReader(withEnd(l(1, 0, 5, "1")+empty(3, 5)+l(2, 5, 9, "1")+l(4, 9, 12, "1"))), "async"); err != nil {
		t.Errorf("an empty step ahead of the one in flight: %v", err)
	}
	good := l(1, 0, 5, "1") + l(2, 5, 9, "4294967297")
	run, err := ReadTrace(strings.NewReader(withEnd(good)), "good")
	if err != nil {
		t.Fatal(err)
	}
	if run.Bins[len(run.Bins)-1].HighestSlot != 4294967297 {
		t.Errorf("highest slot %d, want 4294967297 (64-bit)", run.Bins[len(run.Bins)-1].HighestSlot)
	}
	whole := withEnd(good)
	cut := whole[:strings.Index(whole, "\n")+1]
	for _, c := range []struct{ name, in, want string }{
		{"no closing record", good, "no closing record"},
		{"cut at a line boundary", cut, "no closing record after line 1"},
		{"a line dropped", l(1, 0, 5, "1") + whole[strings.Index(whole, `{"v":2,"end"`):], "says 2 steps and 2 rows, the file has 1 and 1"},
		{"edited", strings.Replace(whole, `"slots":[1]`, `"slots":[2]`, 1), "checksum"},
		{"after the end", whole + l(3, 9, 10, "1"), "after the closing record"},
		{"reversed", withEnd(l(2, 5, 9, "1") + l(1, 0, 5, "1")), "steps must increase"},
		{"repeated", withEnd(l(1, 0, 5, "1") + l(1, 5, 9, "1")), "steps must increase"},
		{"negative time", withEnd(l(1, -5, 5, "1")), "times must be >= 0"},
		{"end before start", withEnd(l(1, 9, 5, "1")), "times must be >= 0"},
		{"time backwards", withEnd(l(1, 5, 9, "1") + l(2, 0, 9, "1")), "before the previous step"},
		{"negative slot", withEnd(l(1, 0, 5, "-7")), "slot -7"},
		{"negative step", withEnd(l(-1, 0, 5, "1")), "negative step"},
		{"an empty step's number ran again", withEnd(l(1, 0, 5, "1") + empty(3, 5) + l(2, 5, 9, "1") + l(3, 9, 12, "1")), "step 3 twice"},
		{"an empty step behind a ran one", withEnd(l(2, 0, 5, "1") + empty(1, 5)), "steps must increase"},
		{"empty steps reversed", withEnd(empty(3, 5) + empty(2, 5)), "steps must increase"},
	} {
		if _, err := ReadTrace(strings.NewReader(c.in), c.name); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// A --trace line of MaxTraceLine bytes is read; one byte more is refused
// with the bound named, not buffered.
func TestTraceLineBound(t *testing.T) {
	defer func(n int) { MaxTraceLine = n }(MaxTraceLine)
	line := `{"v":2,"step":1,"start_ns":0,"end_ns":5,"preempted":[],"rows":[]}`
	MaxTraceLine = len(line)
	if _, err := ReadTrace(strings.NewReader(withEnd(line+"\n")), "at"); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	MaxTraceLine--
	if _, err := ReadTrace(strings.NewReader(withEnd(line+"\n")), "past"); err == nil || !strings.Contains(err.Error(), "the most a --trace line may hold") {
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
