package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"statesim/scenarios"
)

// A trace whose requests all arrive at one instant is held up to
// MaxInFlight requests and refused one past it, before it is held.
func TestInFlightBound(t *testing.T) {
	defer func(n int) { MaxInFlight = n }(MaxInFlight)
	MaxInFlight = 8
	dir := t.TempDir()
	load := func(rows int) *scenarios.Scenario {
		t.Helper()
		var b strings.Builder
		b.WriteString("timestamp,input_tokens,output_tokens\n")
		for i := 0; i < rows; i++ {
			b.WriteString("5,16,2\n")
		}
		p := filepath.Join(dir, fmt.Sprintf("t%d.csv", rows))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		y := filepath.Join(dir, fmt.Sprintf("t%d.yaml", rows))
		doc := fmt.Sprintf("name: t\nmodel: {preset: tiny-hybrid}\nengine: {num_gpu_blocks_override: 4096}\n"+
			"workload: {kind: trace, path: t%d.csv, time_field: timestamp, prompt_field: input_tokens, output_field: output_tokens, prompt_len: {dist: trace}, output_len: {dist: trace}}\n", rows)
		if err := os.WriteFile(y, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		sc, err := scenarios.Load(y, nil)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	rep, err := Run(load(8), Options{})
	if err != nil {
		t.Fatalf("8 requests at one instant, bound 8: %v", err)
	}
	if rep.Finished != 8 {
		t.Fatalf("finished %d of 8", rep.Finished)
	}
	_, err = Run(load(9), Options{})
	var ie *scenarios.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "8 have arrived and not finished") || !strings.Contains(err.Error(), ":10") {
		t.Fatalf("9 requests at one instant, bound 8: got %v, want an input error naming the 9th request's line", err)
	}
}
