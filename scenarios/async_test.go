package scenarios

import (
	"strings"
	"testing"
)

// engine.async_scheduling parses and round-trips through Marshal (setup
// refuses it where it is not modelled).
func TestAsyncSchedulingKnob(t *testing.T) {
	sc, err := Parse([]byte(good), "t.yaml", []string{"engine.async_scheduling=true"})
	if err != nil || !sc.Engine.AsyncScheduling {
		t.Fatalf("async_scheduling=true: %v, %v", err, sc.Engine.AsyncScheduling)
	}
	out, err := Marshal(sc)
	if err != nil || !strings.Contains(string(out), "async_scheduling: true") {
		t.Fatalf("Marshal: %v\n%s", err, out)
	}
	if back, err := Parse(out, "m.yaml", nil); err != nil || !back.Engine.AsyncScheduling {
		t.Errorf("round trip: %v", err)
	}
}
