package scenarios

import (
	"strings"
	"testing"
)

// engine.async_scheduling parses, round-trips through Marshal, and is
// refused (naming the file, line and field) where it is not modelled.
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
	for _, set := range []string{"engine.vllm_version=v0", "backend.kind=mock"} {
		src := strings.Replace(good, "  vllm_version: v0.14\n", "  vllm_version: v0.14\n  async_scheduling: true\n", 1)
		_, err := Parse([]byte(src), "t.yaml", []string{set})
		if err == nil || !strings.Contains(err.Error(), "t.yaml:8: field engine.async_scheduling") {
			t.Errorf("--set %s with async scheduling: %v, want an engine.async_scheduling error", set, err)
		}
	}
}
