package engine

import (
	"bytes"
	"strings"
	"testing"

	"statesim/scenarios"
)

// A step that schedules nothing still gets a --trace line (vLLM runs
// _update_states for it): the align-mode stall's only step schedules
// nothing, and its line says so.
func TestEmptyStepHasATraceLine(t *testing.T) {
	sc, err := scenarios.Load("scenarios/regressions/align-long-prefill-stall.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Run(sc, Options{Trace: &buf}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) == 0 || !strings.Contains(lines[0], `"num_scheduled_tokens":0`) || !strings.Contains(lines[0], `"rows":[]`) {
		t.Fatalf("no trace line for the empty step: %q", buf.String())
	}
}
