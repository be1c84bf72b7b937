package engine

import (
	"bytes"
	"strings"
	"testing"

	"statesim/scenarios"
)

// A step that schedules nothing still gets a --trace line (vLLM runs
// _update_states for it): under async scheduling with MTP a request that
// stops short leaves a step with nothing to schedule, and its line says
// so.
func TestEmptyStepHasATraceLine(t *testing.T) {
	sc, err := scenarios.Load("scenarios/regressions/async-spec-stop-cache.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Run(sc, Options{Trace: &buf}); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.Contains(l, `"num_scheduled_tokens":0`) && strings.Contains(l, `"rows":[]`) {
			return
		}
	}
	t.Fatalf("no trace line for the empty step: %q", buf.String())
}
