package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"statesim/engine"
	"strings"
	"testing"

	"statesim/scenarios"
)

func TestCalibrateRecoversTheDefaults(t *testing.T) {
	def := scenarios.Defaults().Timing
	var b strings.Builder
	b.WriteString("step_us,prefill_tokens,decode_rows,context_tokens,state_bytes\n")
	for i := range 60 {
		l := engine.StepLoad{PrefillTokens: int64(i%4) * 2000, DecodeRows: int64(i * 7 % 200)}
		l.ContextTokens = l.PrefillTokens + l.DecodeRows*int64(300+i*37%2000)
		l.StateBytes = (l.DecodeRows + int64(i%4)) * 20070400
		fmt.Fprintf(&b, "%.3f,%d,%d,%d,%d\n", engine.StepNS(&def, l)/1e3, l.PrefillTokens, l.DecodeRows, l.ContextTokens, l.StateBytes)
	}
	p := filepath.Join(t.TempDir(), "steps.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := realMain([]string{"calibrate", p}, &out, &errb); code != exitClean {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"step_overhead_us: 1500\n", "prefill_token_ns: 15000\n", "decode_row_ns: 2000\n", "context_token_ns: 2\n", "state_bandwidth_gbs: 4300\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(bad, []byte("step_us,prefill_tokens,decode_rows,context_tokens,state_bytes\n1,2,x,4,5\n"), 0o644)
	errb.Reset()
	if code := realMain([]string{"calibrate", bad}, &out, &errb); code != exitBadInput || !strings.Contains(errb.String(), "bad.csv:2: field decode_rows") {
		t.Errorf("bad value: exit %d, %q", code, errb.String())
	}
}

// A STEPS.csv is held in memory: its lines and their length are bounded,
// tested at each bound and one past it.
func TestCalibrateBounds(t *testing.T) {
	defer func(n, s int) { maxCalibrateLines, maxCalibrateLineSize = n, s }(maxCalibrateLines, maxCalibrateLineSize)
	head := strings.Join(calibrateColumns, ",") + "\n"
	row := "1,2,3,4,5\n"
	maxCalibrateLines = 3
	if steps, err := readSteps(strings.NewReader(head+row+row), "s.csv"); err != nil || len(steps) != 2 {
		t.Fatalf("3 lines, bound 3: %d steps, %v", len(steps), err)
	}
	if _, err := readSteps(strings.NewReader(head+row+row+row), "s.csv"); err == nil || !strings.Contains(err.Error(), "s.csv:4: more than 3 lines") {
		t.Fatalf("4 lines, bound 3: %v", err)
	}
	maxCalibrateLines = 1 << 22
	maxCalibrateLineSize = len(head) - 1
	if _, err := readSteps(strings.NewReader(head+row), "s.csv"); err != nil {
		t.Fatalf("a header of the bound's length: %v", err)
	}
	maxCalibrateLineSize--
	if _, err := readSteps(strings.NewReader(head+row), "s.csv"); err == nil || !strings.Contains(err.Error(), "s.csv:1: longer than") {
		t.Fatalf("a header one past the bound: %v", err)
	}
}
