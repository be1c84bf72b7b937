package engine

import (
	"bytes"
	"strings"
	"testing"

	"statesim/sched"
	"statesim/step"
)

// The CUDA-graph fields appear only when set, so eager runs' traces keep
// their bytes (and their output hashes).
func TestTraceGraphFields(t *testing.T) {
	var buf bytes.Buffer
	tw := newTraceWriter(&buf)
	var rec step.Record
	r := rec.AddRow()
	r.StateBlocks = append(r.StateBlocks, 5)
	tw.step(&rec)
	r.Graph, r.KernelSlots = sched.GraphFull, append(r.KernelSlots, 3)
	tw.step(&rec)
	if err := tw.flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", buf.String())
	}
	if strings.Contains(lines[0], "graph") || strings.Contains(lines[0], "kernel_slots") {
		t.Errorf("eager row carries graph fields: %s", lines[0])
	}
	if !strings.Contains(lines[1], `"slots":[5],"graph":"full","kernel_slots":[3]}`) {
		t.Errorf("replayed row: %s", lines[1])
	}
}
